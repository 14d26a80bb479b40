"""Inputs of extract_features.py: one example per line, a pair separated by " ||| "."""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Iterable, Iterator

import tensorflow as tf

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.tokenization import FastWordpieceBertTokenizer, FullTokenizer, as_fast_tokenizer

_PAIR_SEPARATOR = re.compile(r"^(.*) \|\|\| (.*)$")


@dataclasses.dataclass
class TextExample:
    """One line of the input file. unique_id is its 0-based line index (the original's)."""

    unique_id: int
    text_a: str
    text_b: str | None = None


@dataclasses.dataclass
class TokenFeatures:
    """A packed example: tokens ([CLS] ... [SEP]) and int lists of length max_seq_length."""

    unique_id: int
    tokens: list[str]
    input_ids: list[int]
    input_mask: list[int]
    input_type_ids: list[int]


def read_text_examples(input_file: str) -> Iterator[TextExample]:
    """Yields one TextExample per line of `input_file` (UTF-8), streaming.

    Raises:
      FileNotFoundError: the file is missing.
      ValueError: an empty line, naming the file and line number (the original would have
        silently produced a [CLS] [SEP] example for it).
    """
    if not tf.io.gfile.exists(input_file):
        raise FileNotFoundError(f"input file not found: {input_file}")
    with tf.io.gfile.GFile(input_file, "rb") as reader:
        for index, raw_line in enumerate(reader):
            try:
                line = raw_line.decode("utf-8").strip()
            except UnicodeDecodeError as error:
                raise ValueError(
                    f"{input_file}:{index + 1}: not valid UTF-8 ({error.reason} at byte "
                    f"{error.start})"
                ) from None
            if not line:
                raise ValueError(
                    f"{input_file}:{index + 1}: empty line; expected a text, or two texts "
                    "separated by ' ||| '"
                )
            match = _PAIR_SEPARATOR.match(line)
            if match:
                yield TextExample(index, match.group(1), match.group(2))
            else:
                yield TextExample(index, line)


def convert_text_examples(
    examples: Iterable[TextExample],
    tokenizer: FastWordpieceBertTokenizer | FullTokenizer,
    max_seq_length: int,
    examples_per_batch: int = 1024,
) -> Iterator[TokenFeatures]:
    """Tokenizes and packs examples as the original extract_features.py (pairs truncated
    longest-first to max_seq_length - 3, single texts to max_seq_length - 2), streaming.

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
