"""Inputs of extract_features.py: one example per line, a pair separated by " ||| ".

By default a line longer than max_seq_length is truncated, as by the original. With a doc_stride
it becomes overlapping windows instead (data/document_windows.py): a single text is windowed
whole; of a pair, the first text is repeated in every window and the second is windowed (as
SQuAD's question and context). Each window says which of its positions carry the line's
features: every wordpiece is taken from the window where it has the most context, [CLS] and the
first text from the first window, the final [SEP] from the last.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Iterable, Iterator

import tensorflow as tf
from absl import logging

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.document_windows import text_windows
from official_bert.file_system import check_input_is_a_file
from official_bert.tokenization import FastWordpieceBertTokenizer, FullTokenizer, as_fast_tokenizer
from official_bert.utf8_text import decode_utf8_line

_PAIR_SEPARATOR = re.compile(r"^(.*) \|\|\| (.*)$")


@dataclasses.dataclass
class TextExample:
    """One line of the input file. unique_id is its 0-based line index (the original's)."""

    unique_id: int
    text_a: str
    text_b: str | None = None


@dataclasses.dataclass
class TokenFeatures:
    """A packed example (or one window of a line): tokens ([CLS] ... [SEP], of this row) and int
    lists of length max_seq_length.

    Windows of one line share unique_id and come in order; `window_index` of `num_windows`.
    `line_tokens` is the tokens of the whole line ([CLS] A [SEP] (B [SEP]) untruncated), the
    same in every window. Row position `row_positions[k]` of this window gives the line's token
    `line_positions[k]`. Without windows (num_windows 1 and the row the whole line), all three
    are None: every row token is the line's token at the same position.
    """

    unique_id: int
    tokens: list[str]
    input_ids: list[int]
    input_mask: list[int]
    input_type_ids: list[int]
    window_index: int = 0
    num_windows: int = 1
    line_tokens: list[str] | None = None
    row_positions: list[int] | None = None
    line_positions: list[int] | None = None


def read_text_examples(input_file: str) -> Iterator[TextExample]:
    """Yields one TextExample per line of `input_file` (UTF-8), streaming.

    An empty (or blank) line is an example of no text, `[CLS] [SEP]`, as in the original, so
    that the outputs keep a line (or row) per input line; a warning names the first and counts
    them.

    Raises:
      FileNotFoundError: the file is missing.
      ValueError: a line that is not UTF-8, naming the file and line number.
    """
    if not tf.io.gfile.exists(input_file):
        raise FileNotFoundError(f"input file not found: {input_file}")
    check_input_is_a_file(input_file, "input_file")
    empty_lines = []
    with tf.io.gfile.GFile(input_file, "rb") as reader:
        for index, raw_line in enumerate(reader):
            line = decode_utf8_line(raw_line, input_file, index + 1, ValueError).strip()
            if not line:
                if not empty_lines:
                    logging.warning(
                        "%s:%d: empty line; its features are those of [CLS] [SEP] (no text), "
                        "as in the original",
                        input_file,
                        index + 1,
                    )
                empty_lines.append(index + 1)
            match = _PAIR_SEPARATOR.match(line)
            if match:
                yield TextExample(index, match.group(1), match.group(2))
            else:
                yield TextExample(index, line)
    if len(empty_lines) > 1:
        logging.warning(
            "%s: %d empty lines (lines %s%s) became [CLS] [SEP] examples",
            input_file,
            len(empty_lines),
            ", ".join(map(str, empty_lines[:5])),
            ", ..." if len(empty_lines) > 5 else "",
        )


def convert_text_examples(
    examples: Iterable[TextExample],
    tokenizer: FastWordpieceBertTokenizer | FullTokenizer,
    max_seq_length: int,
    examples_per_batch: int = 1024,
    doc_stride: int | None = None,
) -> Iterator[TokenFeatures]:
    """Tokenizes and packs examples as the original extract_features.py (pairs truncated
    longest-first to max_seq_length - 3, single texts to max_seq_length - 2), streaming.

    With `doc_stride`, a line that does not fit becomes windows (see the module docstring and
    `_line_windows`) instead of being truncated; a line that fits is one window, as without.

    Text becomes ids through the fast tokenizer (a FullTokenizer is replaced by its fast twin,
    `as_fast_tokenizer`) and is packed by BertInputPacker, `examples_per_batch` examples per
    call; the features come out in the order of `examples`.
    """
    tokenizer = as_fast_tokenizer(tokenizer)
    packer = BertInputPacker(tokenizer, max_seq_length)
    iterator = iter(examples)
    while batch := list(itertools.islice(iterator, examples_per_batch)):
        ids, splits = tokenizer.tokenize_in_batches([example.text_a for example in batch])
        pieces_a = [ids[splits[i] : splits[i + 1]] for i in range(len(batch))]
        pairs = [index for index, example in enumerate(batch) if example.text_b is not None]
        ids, splits = tokenizer.tokenize_in_batches([batch[index].text_b for index in pairs])
        pieces_b = {index: ids[splits[row] : splits[row + 1]] for row, index in enumerate(pairs)}
        if doc_stride is not None:
            yield from _windowed_features(
                batch, pieces_a, pieces_b, tokenizer, packer, max_seq_length, doc_stride
            )
            continue
        # Single texts and pairs are packed apart: a pair has one more [SEP] to make room for.
        singles = [index for index, example in enumerate(batch) if example.text_b is None]
        packed_rows = {}
        for indexes, segments in (
            (singles, [[pieces_a[index] for index in singles]]),
            (pairs, [[pieces_a[index] for index in pairs], [pieces_b[index] for index in pairs]]),
        ):
            if not indexes:
                continue
            packed = packer.pack_id_arrays(segments)
            for row, index in enumerate(indexes):
                packed_rows[index] = {name: value[row].tolist() for name, value in packed.items()}
        for index, example in enumerate(batch):
            row = packed_rows[index]
            length = sum(row["input_mask"])
            yield TokenFeatures(
                example.unique_id,
                tokenizer.convert_ids_to_tokens(row["input_word_ids"][:length]),
                row["input_word_ids"],
                row["input_mask"],
                row["input_type_ids"],
            )


def _windowed_features(
    batch: list[TextExample],
    pieces_a: list,
    pieces_b: dict,
    tokenizer: FastWordpieceBertTokenizer,
    packer: BertInputPacker,
    max_seq_length: int,
    doc_stride: int,
) -> Iterator[TokenFeatures]:
    """The windows of a batch of tokenized lines, in line order (see
    document_windows.text_windows)."""
    cls, sep = tokenizer.convert_ids_to_tokens([tokenizer.cls_id, tokenizer.sep_id])
    for index, example in enumerate(batch):
        a = pieces_a[index]
        b = pieces_b.get(index)
        line_tokens = [cls, *tokenizer.convert_ids_to_tokens(a), sep]
        if b is not None:
            line_tokens += [*tokenizer.convert_ids_to_tokens(b), sep]
        windows = text_windows(
            len(a),
            None if b is None else len(b),
            max_seq_length,
            doc_stride,
            where=f"line {example.unique_id + 1}",
        )
        windowed = a if b is None else b
        slices = [windowed[w.start : w.start + w.length] for w in windows]
        segments = [slices] if b is None else [[a] * len(slices), slices]
        packed = packer.pack_id_arrays(segments)
        for window_index, window in enumerate(windows):
            input_ids = packed["input_word_ids"][window_index].tolist()
            input_mask = packed["input_mask"][window_index].tolist()
            yield TokenFeatures(
                example.unique_id,
                tokenizer.convert_ids_to_tokens(input_ids[: sum(input_mask)]),
                input_ids,
                input_mask,
                packed["input_type_ids"][window_index].tolist(),
                window_index,
                len(windows),
                line_tokens,
                window.row_positions,
                window.line_positions,
            )
