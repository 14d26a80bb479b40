"""The GLUE (and XNLI) tasks in the file layout of GLUE's download_glue_data.py, plus a generic
task for any TSV/CSV whose columns are named by flags.

Column positions follow the original run_classifier.py processors (and Hugging Face's for the
tasks the original lacks: SST-2, STS-B, QQP, QNLI, RTE, WNLI). Test splits carry no labels.
"""

from __future__ import annotations

import os

import tensorflow as tf
from absl import logging

from official_bert.data.classification.data_processor import (
    ClassifierDataError,
    ClassifierExample,
    DataProcessor,
    TsvRow,
    read_delimited_rows,
    register_processor,
)
from official_bert.utf8_text import decode_utf8


class _ColumnProcessor(DataProcessor):
    """A task read from fixed columns: (text_a, text_b or None, label) per split.

    `columns` maps "train"/"dev" to the labeled layout and "test" to the unlabeled one; a label
    column of None means no label. Negative indexes count from the end, as the original's
    `line[-1]`.
    """

    columns: dict[str, tuple[int, int | None, int | None]] = {}

    @property
    def takes_pairs(self) -> bool:
        return self.columns["train"][1] is not None

    def example_from_row(self, split: str, row: TsvRow) -> ClassifierExample | None:
        text_a, text_b, label = self.columns["test" if split == "test" else "train"]
        values = row.columns
        guid = f"{split}-{row.line_number}"
        return ClassifierExample(
            guid,
            values[text_a],
            None if text_b is None else values[text_b],
            None if label is None else values[label],
        )


@register_processor("cola")
class ColaProcessor(_ColumnProcessor):
    """CoLA: acceptability of one sentence; train/dev have no header."""

    labels = ["0", "1"]
    has_header = False
    columns = {"train": (3, None, 1), "test": (1, None, None)}

    def split_has_header(self, split: str) -> bool:
        return split == "test"  # only CoLA's test file has a header


@register_processor("sst-2")
@register_processor("sst2")
class Sst2Processor(_ColumnProcessor):
    """SST-2: binary sentiment of one sentence."""

    labels = ["0", "1"]
    columns = {"train": (0, None, 1), "test": (1, None, None)}


@register_processor("mrpc")
class MrpcProcessor(_ColumnProcessor):
    """MRPC: is sentence B a paraphrase of A."""

    labels = ["0", "1"]
    columns = {"train": (3, 4, 0), "test": (3, 4, None)}


@register_processor("sts-b")
@register_processor("stsb")
class StsbProcessor(_ColumnProcessor):
    """STS-B: similarity of a pair, a score in [0, 5] (regression)."""

    labels = None
    columns = {"train": (7, 8, -1), "test": (7, 8, None)}


@register_processor("qqp")
class QqpProcessor(_ColumnProcessor):
    """QQP: are two questions duplicates. Some releases of the train file have a few short rows,
    which are skipped with a warning, as Hugging Face's reader skips them. A short test row is
    kept, its missing questions empty: test_results.tsv has a row per test row and no ids, so
    a skipped row would give every later prediction the id of the row after it."""

    labels = ["0", "1"]
    strict_columns = False
    columns = {"train": (3, 4, 5), "test": (1, 2, None)}

    def example_from_row(self, split, row):
        if split == "test":
            missing = 3 - len(row.columns)
            if missing > 0:
                logging.warning(
                    "%s, line %d: %d columns where QQP's test rows have 3; predicted with "
                    "the missing questions empty",
                    self.split_path(split),
                    row.line_number,
                    len(row.columns),
                )
                row = TsvRow(row.line_number, [*row.columns, *[""] * missing])
        elif len(row.columns) < 6:
            logging.warning(
                "%s, line %d: %d columns where QQP's %s rows have 6; skipped",
                self.split_path(split),
                row.line_number,
                len(row.columns),
                split,
            )
            return None
        return super().example_from_row(split, row)


@register_processor("mnli")
class MnliProcessor(_ColumnProcessor):
    """MultiNLI, matched dev/test sets (the original's MnliProcessor)."""

    labels = ["contradiction", "entailment", "neutral"]
    columns = {"train": (8, 9, -1), "test": (8, 9, None)}
    dev_suffix = "matched"

    def split_file(self, split: str) -> str:
        return "train.tsv" if split == "train" else f"{split}_{self.dev_suffix}.tsv"


@register_processor("mnli-mm")
@register_processor("mnli_mismatched")
class MnliMismatchedProcessor(MnliProcessor):
    """MultiNLI, mismatched dev/test sets."""

    dev_suffix = "mismatched"


@register_processor("qnli")
class QnliProcessor(_ColumnProcessor):
    """QNLI: does the sentence answer the question."""

    labels = ["entailment", "not_entailment"]
    columns = {"train": (1, 2, -1), "test": (1, 2, None)}


@register_processor("rte")
class RteProcessor(QnliProcessor):
    """RTE: textual entailment (same layout and labels as QNLI)."""


@register_processor("wnli")
class WnliProcessor(_ColumnProcessor):
    """WNLI: Winograd NLI."""

    labels = ["0", "1"]
    columns = {"train": (1, 2, -1), "test": (1, 2, None)}


@register_processor("xnli")
class XnliProcessor(DataProcessor):
    """XNLI as the original: train on the machine-translated MultiNLI of `language`
    (data_dir/multinli/multinli.train.<language>.tsv), evaluate on that language's rows of
    xnli.dev.tsv (xnli.test.tsv for test)."""

    labels = ["contradiction", "entailment", "neutral"]
    takes_pairs = True

    def __init__(self, data_dir: str, language: str = "zh"):
        super().__init__(data_dir)
        self.language = language

    def split_file(self, split: str) -> str:
        if split == "train":
            return os.path.join("multinli", f"multinli.train.{self.language}.tsv")
        return f"xnli.{split}.tsv"

    def example_from_row(self, split, row):
        values = row.columns
        guid = f"{split}-{row.line_number}"
        if split == "train":
            # The translated training data spells one label differently.
            label = "contradiction" if values[2] == "contradictory" else values[2]
            return ClassifierExample(guid, values[0], values[1], label)
        if values[0] != self.language:
            return None
        return ClassifierExample(guid, values[6], values[7], values[1])

    def settings(self) -> dict:
        return {**super().settings(), "language": self.language}


@register_processor("generic")
class GenericProcessor(DataProcessor):
    """Any TSV or CSV task: data_dir holds {train,dev,test}.tsv (tab) or .csv (comma).

    Args:
      text_a_column, text_b_column, label_column: a column's 0-based index or header name
        (text_b_column None for single-text tasks; the test file may lack the label column).
      labels: the label names; None reads them from the train file (sorted).
      is_regression: the label is a number (STS-B style).
      has_header: whether the first line names the columns.
      multi_label: the label column holds a set of labels, `label_separator` between them
        ("sports,politics"; empty: no label), each checked against the label set; the label
        set read from train is every label named there (sorted).
      label_separator: what separates the labels of a multi-label row.
    """

    def __init__(
        self,
        data_dir: str,
        text_a_column: str | int = 0,
        text_b_column: str | int | None = None,
        label_column: str | int = -1,
        labels: list[str] | None = None,
        is_regression: bool = False,
        has_header: bool = True,
        multi_label: bool = False,
        label_separator: str = ",",
    ):
        super().__init__(data_dir)
        if multi_label and is_regression:
            raise ValueError("the generic task is either multi-label or a regression, not both")
        if multi_label and not label_separator:
            raise ValueError("a multi-label task needs a non-empty label_separator")
        self.column_names = {
            "text_a": text_a_column,
            "text_b": text_b_column,
            "label": label_column,
        }
        self.has_header = has_header
        self.is_regression_task = is_regression
        self._given_labels = list(labels) if labels else None
        self._labels = None
        self.multi_label = multi_label
        self.label_separator = label_separator

    @property
    def is_regression(self) -> bool:
        return self.is_regression_task

    @property
    def takes_pairs(self) -> bool:
        return self.column_names["text_b"] is not None

    @property
    def labels(self) -> list[str] | None:
        if self.is_regression_task:
            return None
        if self._labels is None:
            self._labels = self._given_labels or self._labels_in_train_file()
        return self._labels

    def split_file(self, split: str) -> str:
        for extension in ("tsv", "csv"):
            name = f"{split}.{extension}"
            if tf.io.gfile.exists(os.path.join(self.data_dir, name)):
                return name
        return f"{split}.tsv"

    @property
    def delimiter(self) -> str:
        return "," if self.split_file("train").endswith(".csv") else "\t"

    def _header(self, split: str) -> list[str]:
        path = self.split_path(split)
        with tf.io.gfile.GFile(path, "rb") as reader:
            first_line = decode_utf8(reader.readline(), path, ClassifierDataError).rstrip("\r\n")
        delimiter = "," if path.endswith(".csv") else "\t"
        return [name.strip() for name in first_line.split(delimiter)]

    def _column_index(self, split: str, key: str) -> int | None:
        column = self.column_names[key]
        if column is None:
            return None
        if isinstance(column, int) or str(column).lstrip("-").isdigit():
            return int(column)
        header = self._header(split) if self.has_header else []
        if column not in header:
            raise ClassifierDataError(
                f"{self.split_path(split)}: no column named {column!r} for {key} (header: {header})"
            )
        return header.index(column)

    def _labels_in_train_file(self) -> list[str]:
        label = self._column_index("train", "label")
        rows = read_delimited_rows(self.split_path("train"), self.delimiter, self.has_header)
        if self.multi_label:
            return sorted({name for row in rows for name in self.label_set(row.columns[label])})
        return sorted({row.columns[label] for row in rows})

    def label_set(self, label: str | None) -> tuple[str, ...]:
        """The labels of a multi-label row's label field, in the row's order: split at
        label_separator, each stripped of spaces; an empty field (or None) has none."""
        if not label:
            return ()
        return tuple(part.strip() for part in label.split(self.label_separator) if part.strip())

    def _check_label(self, path: str, line_number: int, label: str | None) -> None:
        if not self.multi_label:
            super()._check_label(path, line_number, label)
            return
        for name in self.label_set(label):
            if name not in self.labels:
                source = "--labels" if self._given_labels else "the labels of the train file"
                raise ClassifierDataError(
                    f"{path}, line {line_number}: label {name!r} (of {label!r}, separator "
                    f"{self.label_separator!r}) is not one of {source}: {self.labels}"
                )

    def example_from_row(self, split, row):
        values = row.columns
        text_a = values[self._indexes(split)["text_a"]]
        text_b_index = self._indexes(split)["text_b"]
        label_index = self._indexes(split)["label"]
        label = None
        if split != "test":
            label = values[label_index]
        elif label_index is not None and -len(values) <= label_index < len(values):
            label = values[label_index]
        text_b = None if text_b_index is None else values[text_b_index]
        return ClassifierExample(f"{split}-{row.line_number}", text_a, text_b, label)

    def _indexes(self, split: str) -> dict[str, int | None]:
        cache = self.__dict__.setdefault("_index_cache", {})
        if split not in cache:
            indexes = {}
            for key in self.column_names:
                try:
                    indexes[key] = self._column_index(split, key)
                except ClassifierDataError:
                    if split == "test" and key == "label":  # unlabeled test files are usual
                        indexes[key] = None
                    else:
                        raise
            cache[split] = indexes
        return cache[split]

    def settings(self) -> dict:
        return {
            **super().settings(),
            "columns": {key: str(value) for key, value in self.column_names.items()},
            "has_header": self.has_header,
            "is_regression": self.is_regression_task,
            "multi_label": self.multi_label,
            "label_separator": self.label_separator,
        }
