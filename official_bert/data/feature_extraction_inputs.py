"""Inputs of extract_features.py: one example per line, a pair separated by " ||| "."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator

import tensorflow as tf

from official_bert.data.packing import pack_segments, pad_features

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
    examples: Iterable[TextExample], tokenizer, max_seq_length: int
) -> Iterator[TokenFeatures]:
    """Tokenizes and packs examples as the original extract_features.py (pairs truncated
    longest-first to max_seq_length - 3, single texts to max_seq_length - 2)."""
    for example in examples:
        tokens_a = tokenizer.tokenize(example.text_a)
        tokens_b = tokenizer.tokenize(example.text_b) if example.text_b is not None else None
        tokens, segment_ids = pack_segments(tokens_a, tokens_b, max_seq_length)
        input_ids, input_mask, input_type_ids = pad_features(
            tokenizer.convert_tokens_to_ids(tokens), segment_ids, max_seq_length
        )
        yield TokenFeatures(example.unique_id, tokens, input_ids, input_mask, input_type_ids)
