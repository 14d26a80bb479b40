"""SQuAD examples as BERT features and TFRecords, as the original run_squad.py.

A document longer than fits beside the question is cut into windows ("doc spans") of at most
max_seq_length - len(query) - 3 wordpieces, each starting doc_stride wordpieces after the last.
A token seen by several windows is scored only in the window where it has the most context
(`token_is_max_context`). Features get unique ids counting from 1000000000. An answer outside a
window, or an impossible question, is labelled at [CLS] (position 0).

TFRecord features (the original FeatureWriter's): unique_ids (int64 [1]), input_ids, input_mask,
segment_ids (int64 [max_seq_length]); training files add start_positions, end_positions and
is_impossible (int64 [1]).
"""

from __future__ import annotations

import dataclasses
import os
import time

import numpy as np
import tensorflow as tf
from absl import logging

from official_bert.atomic_output import atomic_output
from official_bert.data.completed_outputs import (
    file_signature,
    read_completed_summary,
    remove_if_exists,
    write_summary,
)
from official_bert.data.example_encoding import ExampleEncoder
from official_bert.data.squad.examples import SquadExample, read_squad_examples
from official_bert.side_file_names import summary_path
from official_bert.tokenization import FullTokenizer

FIRST_UNIQUE_ID = 1000000000
# Bumped when what is written for the same inputs changes, so cached files are redone.
_FORMAT_VERSION = 1


@dataclasses.dataclass
class SquadFeature:
    """One window of one example.

    tokens: [CLS] query [SEP] window [SEP] (wordpieces, unpadded). token_to_orig_map: position in
    tokens -> index in the example's doc_tokens (window tokens only). token_is_max_context:
    position -> whether this window gives the token its most context. input_ids, input_mask,
    segment_ids: int lists of max_seq_length. start_position / end_position: positions in tokens
    (0 = [CLS]) when training, else None.
    """

    unique_id: int
    example_index: int
    doc_span_index: int
    tokens: list[str]
    token_to_orig_map: dict[int, int]
    token_is_max_context: dict[int, bool]
    input_ids: list[int]
    input_mask: list[int]
    segment_ids: list[int]
    start_position: int | None = None
    end_position: int | None = None
    is_impossible: bool = False


@dataclasses.dataclass(frozen=True)
class DocSpan:
    start: int
    length: int


def doc_spans(num_doc_tokens: int, max_tokens_for_doc: int, doc_stride: int) -> list[DocSpan]:
    """The original's sliding windows: each at most max_tokens_for_doc long, starting
    min(length, doc_stride) after the previous one, the last one reaching the end."""
    spans = []
    start_offset = 0
    while start_offset < num_doc_tokens:
        length = min(num_doc_tokens - start_offset, max_tokens_for_doc)
        spans.append(DocSpan(start_offset, length))
        if start_offset + length == num_doc_tokens:
            break
        start_offset += min(length, doc_stride)
    return spans


def check_is_max_context(spans: list[DocSpan], span_index: int, position: int) -> bool:
    """Whether span `span_index` is the one where document token `position` has the most context:
    the largest min(left, right) context, ties broken by 0.01 * span length (the original's
    score; the first span wins an exact tie)."""
    best_score, best_index = None, None
    for index, span in enumerate(spans):
        end = span.start + span.length - 1
        if position < span.start or position > end:
            continue
        score = min(position - span.start, end - position) + 0.01 * span.length
        if best_score is None or score > best_score:
            best_score, best_index = score, index
    return span_index == best_index


def improve_answer_span(
    doc_tokens: list[str],
    input_start: int,
    input_end: int,
    tokenizer: FullTokenizer,
    orig_answer_text: str,
) -> tuple[int, int]:
    """The shortest wordpiece span inside [input_start, input_end] whose text is the tokenized
    answer: "(1895-1943)." with answer "1895" maps to the "1895" piece, not the whole word."""
    answer = " ".join(tokenizer.tokenize(orig_answer_text))
    for new_start in range(input_start, input_end + 1):
        for new_end in range(input_end, new_start - 1, -1):
            if " ".join(doc_tokens[new_start : new_end + 1]) == answer:
                return new_start, new_end
    return input_start, input_end


def convert_examples_to_features(
    examples: list[SquadExample],
    tokenizer: FullTokenizer,
    max_seq_length: int,
    doc_stride: int,
    max_query_length: int,
    is_training: bool,
) -> list[SquadFeature]:
    """Every window of every example, in order, unique ids from FIRST_UNIQUE_ID.

    Raises:
      ValueError: max_seq_length leaves no room for the document (<= max_query_length + 3).
    """
    check_squad_lengths(max_seq_length, max_query_length)
    features = []
    unique_id = FIRST_UNIQUE_ID
    for example_index, example in enumerate(examples):
        query_tokens = tokenizer.tokenize(example.question_text)[:max_query_length]
        tok_to_orig_index, orig_to_tok_index, all_doc_tokens = [], [], []
        for index, token in enumerate(example.doc_tokens):
            orig_to_tok_index.append(len(all_doc_tokens))
            for sub_token in tokenizer.tokenize(token):
                tok_to_orig_index.append(index)
                all_doc_tokens.append(sub_token)

        tok_start = tok_end = None
        if is_training and not example.is_impossible:
            tok_start = orig_to_tok_index[example.start_position]
            if example.end_position < len(example.doc_tokens) - 1:
                tok_end = orig_to_tok_index[example.end_position + 1] - 1
            else:
                tok_end = len(all_doc_tokens) - 1
            tok_start, tok_end = improve_answer_span(
                all_doc_tokens, tok_start, tok_end, tokenizer, example.orig_answer_text
            )

        spans = doc_spans(len(all_doc_tokens), max_seq_length - len(query_tokens) - 3, doc_stride)
        for span_index, span in enumerate(spans):
            tokens = ["[CLS]", *query_tokens, "[SEP]"]
            segment_ids = [0] * len(tokens)
            token_to_orig_map, token_is_max_context = {}, {}
            for i in range(span.length):
                split_index = span.start + i
                token_to_orig_map[len(tokens)] = tok_to_orig_index[split_index]
                token_is_max_context[len(tokens)] = check_is_max_context(
                    spans, span_index, split_index
                )
                tokens.append(all_doc_tokens[split_index])
                segment_ids.append(1)
            tokens.append("[SEP]")
            segment_ids.append(1)
            input_ids = tokenizer.convert_tokens_to_ids(tokens)
            padding = [0] * (max_seq_length - len(input_ids))
            input_mask = [1] * len(input_ids) + padding
            input_ids = input_ids + padding
            segment_ids = segment_ids + padding

            start_position = end_position = None
            if is_training:
                # Impossible questions and answers outside this window point at [CLS].
                start_position = end_position = 0
                span_end = span.start + span.length - 1
                if not example.is_impossible and span.start <= tok_start and tok_end <= span_end:
                    offset = len(query_tokens) + 2
                    start_position = tok_start - span.start + offset
                    end_position = tok_end - span.start + offset
            features.append(
                SquadFeature(
                    unique_id,
                    example_index,
                    span_index,
                    tokens,
                    token_to_orig_map,
                    token_is_max_context,
                    input_ids,
                    input_mask,
                    segment_ids,
                    start_position,
                    end_position,
                    example.is_impossible,
                )
            )
            unique_id += 1
    return features


def check_squad_lengths(max_seq_length: int, max_query_length: int) -> None:
    """The original's check: the window needs room beside the question, [CLS] and two [SEP]."""
    if max_seq_length <= max_query_length + 3:
        raise ValueError(
            f"The max_seq_length ({max_seq_length}) must be greater than max_query_length "
            f"({max_query_length}) + 3"
        )


def squad_feature_spec(max_seq_length: int, is_training: bool) -> dict:
    """The parse spec of the original run_squad.py input_fn_builder."""
    spec = {
        "unique_ids": tf.io.FixedLenFeature([], tf.int64),
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
    }
    if is_training:
        for name in ("start_positions", "end_positions", "is_impossible"):
            spec[name] = tf.io.FixedLenFeature([], tf.int64)
    return spec


# Features encoded per call of ExampleEncoder (bounds the memory of one encode).
_RECORDS_PER_CHUNK = 4096


def write_squad_records(features: list[SquadFeature], path: str, is_training: bool) -> None:
    """Writes features as TFRecords with the original names, under a temporary name renamed
    when complete."""

    def column(values):
        return np.asarray(values, np.int64).reshape(len(values), -1)

    names = ["unique_ids", "input_ids", "input_mask", "segment_ids"]
    if is_training:
        names += ["start_positions", "end_positions", "is_impossible"]
    encoder = ExampleEncoder(names)
    with atomic_output(path) as temporary, tf.io.TFRecordWriter(temporary) as writer:
        for start in range(0, len(features), _RECORDS_PER_CHUNK):
            chunk = features[start : start + _RECORDS_PER_CHUNK]
            if not chunk:
                break
            arrays = {
                "unique_ids": column([f.unique_id for f in chunk]),
                "input_ids": column([f.input_ids for f in chunk]),
                "input_mask": column([f.input_mask for f in chunk]),
                "segment_ids": column([f.segment_ids for f in chunk]),
            }
            if is_training:
                arrays["start_positions"] = column([f.start_position for f in chunk])
                arrays["end_positions"] = column([f.end_position for f in chunk])
                arrays["is_impossible"] = column([int(f.is_impossible) for f in chunk])
            for record in encoder.encode({name: arrays[name] for name in names}):
                writer.write(record)


@dataclasses.dataclass(frozen=True)
class SquadTrainRecords:
    """A training TFRecord file: `path`, `num_features` (windows) and `num_examples`."""

    path: str
    num_features: int
    num_examples: int
    num_skipped: int


def prepare_squad_train_records(
    train_file: str,
    output_path: str,
    vocab_file: str,
    do_lower_case: bool,
    max_seq_length: int,
    doc_stride: int,
    max_query_length: int,
    version_2_with_negative: bool,
) -> SquadTrainRecords:
    """train.tf_record for train_file, reused while the data, vocab and settings are unchanged
    (a JSON summary written last beside it, `.train.tf_record.summary.json`, records them)."""
    settings = {
        "format_version": _FORMAT_VERSION,
        "train_file": os.path.abspath(train_file),
        "train_file_signature": file_signature(train_file),
        "vocab_file": os.path.abspath(vocab_file),
        "vocab_signature": file_signature(vocab_file),
        "do_lower_case": do_lower_case,
        "max_seq_length": max_seq_length,
        "doc_stride": doc_stride,
        "max_query_length": max_query_length,
        "version_2_with_negative": version_2_with_negative,
    }
    summary_file = summary_path(output_path)
    summary = read_completed_summary(summary_file, [output_path], settings)
    if summary is not None:
        logging.info("Reusing %s (%d features)", output_path, summary["num_features"])
        return SquadTrainRecords(
            output_path, summary["num_features"], summary["num_examples"], summary["num_skipped"]
        )
    remove_if_exists(summary_file)
    start = time.time()
    read = read_squad_examples(train_file, True, version_2_with_negative)
    if not read.examples:
        raise ValueError(f"{train_file}: no training examples")
    tokenizer = FullTokenizer(vocab_file, do_lower_case)
    features = convert_examples_to_features(
        read.examples, tokenizer, max_seq_length, doc_stride, max_query_length, True
    )
    write_squad_records(features, output_path, True)
    write_summary(
        summary_file,
        {
            "settings": settings,
            "output_files": [output_path],
            "num_examples": len(read.examples),
            "num_features": len(features),
            "num_skipped": read.num_skipped,
        },
    )
    logging.info(
        "Wrote %s: %d examples, %d features in %.1f s",
        output_path,
        len(read.examples),
        len(features),
        time.time() - start,
    )
    return SquadTrainRecords(output_path, len(features), len(read.examples), read.num_skipped)
