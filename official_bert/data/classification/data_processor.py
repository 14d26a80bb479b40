"""The processor base and the registry of tasks: what every task module imports.

A processor knows one task's file layout: which file holds each split, which columns hold the
texts and the label, and the label set. GLUE tasks are in `glue_processors.py`, the CoNLL tagging
task in `data/tagging/examples.py`; a task of your own is a subclass of `DataProcessor` registered
with `register_processor` (see README). This module imports no task module: the tasks import it,
and `examples.py` (get_processor, processor_names) imports them all.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import sys

import tensorflow as tf

from official_bert.utf8_text import read_utf8_file

SPLITS = ("train", "dev", "test")


class ClassifierDataError(ValueError):
    """A data file that does not match its task's layout (the message names file and line)."""


@dataclasses.dataclass(frozen=True)
class ClassifierExample:
    """One example: `guid` ("dev-12"), `text_a`, `text_b` (None for single-text tasks) and
    `label` (a label name, a float string for regression, or None for an unlabeled test row)."""

    guid: str
    text_a: str
    text_b: str | None = None
    label: str | None = None


@dataclasses.dataclass(frozen=True)
class TsvRow:
    """A row of a data file with its 1-based line number (for error messages)."""

    line_number: int
    columns: list[str]


def read_delimited_rows(
    path: str, delimiter: str = "\t", skip_header: bool = False, strict_columns: bool = True
) -> list[TsvRow]:
    """Reads a TSV/CSV file as the original `_read_tsv` (csv module, no quoting for TSV).

    Empty lines are skipped and carriage returns dropped, as the original's reading did. A file
    that is not UTF-8 raises ClassifierDataError naming the file and the line. With
    `strict_columns`, every row must have as many columns as the
    first (the header when there is one): a row with another count raises ClassifierDataError
    naming the file, the line and both counts.
    """
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"data file not found: {path}")
    # Some GLUE fields are longer than the csv module's default limit of 128 KiB.
    csv.field_size_limit(sys.maxsize)
    quotechar = None if delimiter == "\t" else '"'
    text = read_utf8_file(path, ClassifierDataError)
    # The original read lines with TensorFlow's line reader, which drops every carriage return:
    # CRLF ends a line as LF does, and a lone CR inside a field joins its two sides (the csv
    # module would end the row there).
    text = text.replace("\r", "")
    rows = []
    expected = None
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, quotechar=quotechar)
    for columns in reader:
        line_number = reader.line_num
        if not columns:
            continue
        if expected is None:
            expected = len(columns)
            if skip_header:
                continue
        elif strict_columns and len(columns) != expected:
            first = "the header" if skip_header else "line 1"
            raise ClassifierDataError(
                f"{path}, line {line_number}: {len(columns)} columns, but {first} has "
                f"{expected}; a stray tab or quote in a text field is the usual cause"
            )
        rows.append(TsvRow(line_number, columns))
    return rows


class DataProcessor:
    """Reads one task's splits as ClassifierExamples.

    Subclasses set `labels` (label names; None for regression) and implement `split_file(split)`
    and `example_from_row(split, row)`; `is_regression` follows from `labels`.
    """

    labels: list[str] | None = None
    has_header: bool = True
    delimiter: str = "\t"
    # False for files with known short rows (QQP), which example_from_row then skips.
    strict_columns: bool = True

    def __init__(self, data_dir: str):
        self.data_dir = data_dir

    @property
    def is_regression(self) -> bool:
        return self.labels is None

    @property
    def takes_pairs(self) -> bool:
        """Whether examples are text pairs (text_b set); read from the first training example."""
        first = self.get_examples("train")[:1]
        return bool(first) and first[0].text_b is not None

    def get_labels(self) -> list[str] | None:
        return None if self.labels is None else list(self.labels)

    def split_file(self, split: str) -> str:
        """The file name of `split` ("train", "dev" or "test") inside data_dir."""
        return f"{split}.tsv"

    def split_has_header(self, split: str) -> bool:
        """Whether the file of `split` starts with a header line."""
        return self.has_header

    def split_path(self, split: str) -> str:
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
        return os.path.join(self.data_dir, self.split_file(split))

    def example_from_row(self, split: str, row: TsvRow) -> ClassifierExample | None:
        """The example of one row (None to skip the row)."""
        raise NotImplementedError

    def get_examples(self, split: str) -> list[ClassifierExample]:
        """All examples of `split`; train and dev labels are checked against the label set."""
        path = self.split_path(split)
        examples = []
        for row in read_delimited_rows(
            path, self.delimiter, self.split_has_header(split), self.strict_columns
        ):
            try:
                example = self.example_from_row(split, row)
            except IndexError:
                raise ClassifierDataError(
                    f"{path}, line {row.line_number}: {len(row.columns)} columns, fewer than "
                    f"{type(self).__name__} reads for the {split} split"
                ) from None
            if example is None:
                continue
            if split != "test":  # test labels, if any, are never used
                self._check_label(path, row.line_number, example.label)
            examples.append(example)
        return examples

    def get_train_examples(self) -> list[ClassifierExample]:
        return self.get_examples("train")

    def get_dev_examples(self) -> list[ClassifierExample]:
        return self.get_examples("dev")

    def get_test_examples(self) -> list[ClassifierExample]:
        return self.get_examples("test")

    def _check_label(self, path: str, line_number: int, label: str | None) -> None:
        if self.labels is None:
            try:
                float(label)
            except (TypeError, ValueError):
                raise ClassifierDataError(
                    f"{path}, line {line_number}: label {label!r} is not a number "
                    f"({type(self).__name__} is a regression task)"
                ) from None
        elif label not in self.labels:
            raise ClassifierDataError(
                f"{path}, line {line_number}: label {label!r} is not one of "
                f"{type(self).__name__}'s labels {self.labels}"
            )

    def settings(self) -> dict:
        """What, besides the files, decides the examples (part of the TFRecord cache key)."""
        return {"processor": type(self).__name__, "labels": self.labels}


# DataProcessor subclasses, and TaggingProcessor ones (data/tagging/examples.py).
_PROCESSORS: dict[str, type] = {}


def register_processor(task_name: str):
    """Class decorator: makes a DataProcessor available as --task_name=<task_name>."""

    def register(cls):
        _PROCESSORS[task_name.lower()] = cls
        if "task_name" not in cls.__dict__:  # the first name, for messages
            cls.task_name = task_name
        return cls

    return register


def registered_processors() -> dict[str, type]:
    """task name (lower case) -> processor class, for the modules imported so far."""
    return dict(_PROCESSORS)
