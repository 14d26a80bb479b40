"""SQuAD examples as BERT features and TFRecords, as the original run_squad.py.

A document longer than fits beside the question is cut into windows ("doc spans") of at most
max_seq_length - len(query) - 3 wordpieces, each starting doc_stride wordpieces after the last.
A token seen by several windows is scored only in the window where it has the most context
(`token_is_max_context`). Features get unique ids counting from 1000000000. An answer outside a
window, or an impossible question, is labelled at [CLS] (position 0).

As the original, each whitespace word of a context is tokenized on its own (the word<->piece maps
need it); here all words go through FastWordpieceBertTokenizer as one batch of words, and the
windows are packed by BertInputPacker, the library's one tokenizer and packer.

TFRecord features (the original FeatureWriter's): unique_ids (int64 [1]), input_ids, input_mask,
segment_ids (int64 [max_seq_length]); training files add start_positions, end_positions and
is_impossible (int64 [1]).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from official_bert.atomic_output import atomic_output
from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.completed_outputs import (
    file_signature,
    read_completed_summary,
    remove_if_exists,
    write_summary,
)
from official_bert.data.document_windows import DocSpan, check_is_max_context, doc_spans
from official_bert.data.example_encoding import ExampleEncoder
from official_bert.data.squad.examples import SquadExample, read_squad_examples
from official_bert.file_system import absolute_path
from official_bert.side_file_names import summary_path
from official_bert.tokenization import FastWordpieceBertTokenizer, FullTokenizer, as_fast_tokenizer

FIRST_UNIQUE_ID = 1000000000
# Bumped when what is written for the same inputs changes, so cached files are redone.
_FORMAT_VERSION = 2  # 2: CJK ideographs are document tokens


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


def improve_answer_span(
    doc_pieces: Sequence[int],
    input_start: int,
    input_end: int,
    answer_pieces: Sequence[int],
) -> tuple[int, int]:
    """The shortest wordpiece span inside [input_start, input_end] whose pieces are the tokenized
    answer's: "(1895-1943)." with answer "1895" maps to the "1895" piece, not the whole word.

    The original compares the pieces' strings joined by spaces; pieces hold no spaces and each
    has one id, so comparing ids is the same test. The original also tried every end for every
    start, quadratic in the span (a whole Chinese paragraph when it was one "word"); only the end
    start + len(answer) - 1 can match, so each start is tried once, with the same result.
    """
    answer = np.asarray(answer_pieces).tolist()
    window = np.asarray(doc_pieces[input_start : input_end + 1]).tolist()
    length = len(answer)
    if length == 0:
        return input_start, input_end
    for offset in range(len(window) - length + 1):
        if window[offset : offset + length] == answer:
            return input_start + offset, input_start + offset + length - 1
    return input_start, input_end


@dataclasses.dataclass(frozen=True)
class _DocumentPieces:
    """A context's wordpieces, each whitespace word tokenized on its own as the original does.

    pieces: int32 [num_pieces] ids. piece_to_word: int [num_pieces] the word (index into
    doc_tokens) of each piece. word_to_first_piece: int [num_words] the index of each word's first
    piece (of the next word's when the word has none, e.g. control characters only).
    """

    pieces: np.ndarray
    piece_to_word: np.ndarray
    word_to_first_piece: np.ndarray


def _tokenize_documents(
    examples: list[SquadExample], tokenizer: FastWordpieceBertTokenizer
) -> list[_DocumentPieces]:
    """The pieces of each example's context; the questions of one paragraph share its
    doc_tokens list (read_squad_examples), which is tokenized once, with all words of all
    contexts in one batch of words."""
    contexts: list[list[str]] = []
    context_of_example, context_index = [], {}
    for example in examples:
        key = id(example.doc_tokens)
        if key not in context_index:
            context_index[key] = len(contexts)
            contexts.append(example.doc_tokens)
        context_of_example.append(context_index[key])
    words = [word for doc_tokens in contexts for word in doc_tokens]
    ids, row_splits = tokenizer.tokenize_in_batches(words)
    tokenized, first_word = [], 0
    for doc_tokens in contexts:
        splits = row_splits[first_word : first_word + len(doc_tokens) + 1]
        first_word += len(doc_tokens)
        tokenized.append(
            _DocumentPieces(
                ids[splits[0] : splits[-1]],
                np.repeat(np.arange(len(doc_tokens)), np.diff(splits)),
                splits[:-1] - splits[0],
            )
        )
    return [tokenized[index] for index in context_of_example]


@dataclasses.dataclass(frozen=True)
class _Window:
    """One doc span of one example, before packing."""

    example_index: int
    span_index: int
    spans: list[DocSpan]
    start_position: int | None
    end_position: int | None


# Windows packed per call of BertInputPacker.pack_id_arrays (bounds the memory of one call).
_WINDOWS_PER_PACK = 4096


def convert_examples_to_features(
    examples: list[SquadExample],
    tokenizer: FastWordpieceBertTokenizer | FullTokenizer,
    max_seq_length: int,
    doc_stride: int,
    max_query_length: int,
    is_training: bool,
) -> list[SquadFeature]:
    """Every window of every example, in order, unique ids from FIRST_UNIQUE_ID.

    Text becomes ids through the fast tokenizer (a FullTokenizer given here is replaced by its
    fast twin, `as_fast_tokenizer`), in a few batched calls: the questions, the answers, and the
    whitespace words of every context as one batch of words. Windows are packed by
    BertInputPacker ([CLS] question [SEP] window [SEP]). The features equal the original's.

    Raises:
      ValueError: max_seq_length leaves no room for the document (<= max_query_length + 3).
    """
    check_squad_lengths(max_seq_length, max_query_length)
    tokenizer = as_fast_tokenizer(tokenizer)
    packer = BertInputPacker(tokenizer, max_seq_length)
    query_ids, query_splits = tokenizer.tokenize_in_batches([e.question_text for e in examples])
    queries = [
        query_ids[query_splits[i] : min(query_splits[i + 1], query_splits[i] + max_query_length)]
        for i in range(len(examples))
    ]
    documents = _tokenize_documents(examples, tokenizer)
    answered = [
        index for index, example in enumerate(examples) if is_training and not example.is_impossible
    ]
    answer_ids, answer_splits = tokenizer.tokenize_in_batches(
        [examples[index].orig_answer_text for index in answered]
    )
    answers = {
        index: answer_ids[answer_splits[row] : answer_splits[row + 1]]
        for row, index in enumerate(answered)
    }

    windows = []
    for example_index, example in enumerate(examples):
        document = documents[example_index]
        num_pieces = len(document.pieces)
        tok_start = tok_end = None
        if example_index in answers:
            tok_start = int(document.word_to_first_piece[example.start_position])
            if example.end_position < len(example.doc_tokens) - 1:
                tok_end = int(document.word_to_first_piece[example.end_position + 1]) - 1
            else:
                tok_end = num_pieces - 1
            tok_start, tok_end = improve_answer_span(
                document.pieces, tok_start, tok_end, answers[example_index]
            )
        query_length = len(queries[example_index])
        spans = doc_spans(num_pieces, max_seq_length - query_length - 3, doc_stride)
        for span_index, span in enumerate(spans):
            start_position = end_position = None
            if is_training:
                # Impossible questions and answers outside this window point at [CLS].
                start_position = end_position = 0
                span_end = span.start + span.length - 1
                if tok_start is not None and span.start <= tok_start and tok_end <= span_end:
                    offset = BertInputPacker.segment_starts([query_length, span.length])[1]
                    start_position = tok_start - span.start + offset
                    end_position = tok_end - span.start + offset
            windows.append(_Window(example_index, span_index, spans, start_position, end_position))

    features = []
    for first in range(0, len(windows), _WINDOWS_PER_PACK):
        chunk = windows[first : first + _WINDOWS_PER_PACK]
        spans = [window.spans[window.span_index] for window in chunk]
        packed = packer.pack_id_arrays(
            [
                [queries[window.example_index] for window in chunk],
                [
                    documents[window.example_index].pieces[span.start : span.start + span.length]
                    for window, span in zip(chunk, spans, strict=True)
                ],
            ]
        )
        for row, (window, span) in enumerate(zip(chunk, spans, strict=True)):
            example_index = window.example_index
            input_ids = packed["input_word_ids"][row].tolist()
            input_mask = packed["input_mask"][row].tolist()
            length = sum(input_mask)
            query_length = len(queries[example_index])
            offset = BertInputPacker.segment_starts([query_length, span.length])[1]
            piece_to_word = documents[example_index].piece_to_word
            token_to_orig_map = {
                offset + i: int(piece_to_word[span.start + i]) for i in range(span.length)
            }
            token_is_max_context = {
                offset + i: check_is_max_context(window.spans, window.span_index, span.start + i)
                for i in range(span.length)
            }
            features.append(
                SquadFeature(
                    FIRST_UNIQUE_ID + len(features),
                    example_index,
                    window.span_index,
                    tokenizer.convert_ids_to_tokens(input_ids[:length]),
                    token_to_orig_map,
                    token_is_max_context,
                    input_ids,
                    input_mask,
                    packed["input_type_ids"][row].tolist(),
                    window.start_position,
                    window.end_position,
                    examples[example_index].is_impossible,
                )
            )
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
    preserve_unused_tokens: bool = False,
) -> SquadTrainRecords:
    """train.tf_record for train_file, reused while the data, vocab and settings are unchanged
    (a JSON summary written last beside it, `.train.tf_record.summary.json`, records them)."""
    settings = {
        "format_version": _FORMAT_VERSION,
        "train_file": absolute_path(train_file),
        "train_file_signature": file_signature(train_file),
        "vocab_file": absolute_path(vocab_file),
        "vocab_signature": file_signature(vocab_file),
        "do_lower_case": do_lower_case,
        "max_seq_length": max_seq_length,
        "doc_stride": doc_stride,
        "max_query_length": max_query_length,
        "version_2_with_negative": version_2_with_negative,
    }
    if preserve_unused_tokens:  # only then: the summaries of earlier runs stay valid
        settings["preserve_unused_tokens"] = True
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
    tokenizer = FastWordpieceBertTokenizer(
        vocab_file, do_lower_case, preserve_unused_tokens=preserve_unused_tokens
    )
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
