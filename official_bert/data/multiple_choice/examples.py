"""Multiple-choice examples and the processors that read them: SWAG (English) and C3 (Chinese).

A multiple-choice example is a context, an optional question (or start of the answer) and a few
candidate endings, one of them right. BERT scores each (context, question + ending) pair as a
sequence pair and takes the softmax over the candidates (the paper's SWAG experiment, section
4.4). `run_classifier.py --task_name=swag` (or c3) reads such a task from --data_dir.

- swag: the files of SWAG's release (github.com/rowanz/swagaf, data/): train.csv, val.csv,
  test.csv, CSV with a header; context `sent1`, question `sent2` (the start of the ending),
  candidates `ending0` .. `ending3`, `label` the right one's index (test.csv has no label).
- c3: the Chinese C3 reading comprehension (dialogue and mixed-genre texts, 2 to 4 candidates
  per question), as CLUE ships it (d-train.json and m-train.json, d-dev.json and m-dev.json,
  test1.1.json or test1.0.json) or as its authors do (c3-d-train.json, c3-m-train.json, ...):
  JSON lists of [paragraphs, questions, id], each question {"question", "choice", "answer"}.
"""

from __future__ import annotations

import dataclasses
import os

import tensorflow as tf

from official_bert.data.classification.data_processor import (
    SPLITS,
    ClassifierDataError,
    TsvRow,
    read_delimited_rows,
    register_processor,
)
from official_bert.data.completed_outputs import file_signature
from official_bert.utf8_text import read_json_file


@dataclasses.dataclass(frozen=True)
class MultipleChoiceExample:
    """One question: `guid` ("dev-12"), `context`, `question` (put before every candidate; ""
    when there is none), `choices` (the candidate endings, at least 2) and `label` (the right
    candidate's index as a string, "0" for the first; None for an unlabeled test question)."""

    guid: str
    context: str
    question: str
    choices: tuple[str, ...]
    label: str | None = None

    def choice_texts(self) -> list[str]:
        """The second text of each candidate's sequence pair: question and candidate."""
        return [" ".join(part for part in (self.question, c) if part) for c in self.choices]


class MultipleChoiceProcessor:
    """Reads one multiple-choice task's splits as MultipleChoiceExamples (the counterpart of
    DataProcessor for tasks whose examples hold several candidates).

    Subclasses set `num_choices` (the most candidates a question has: the records hold that many
    slots, fewer candidates leave slots masked) and `split_files` (candidate file names per
    split; those that exist are read), and implement `read_file(path, split)`.

    The labels are the candidates' indexes "0" .. num_choices - 1.
    """

    num_choices: int = 4
    split_files: dict[str, tuple[str, ...]] = {}
    is_regression = False
    takes_pairs = True

    def __init__(self, data_dir: str):
        self.data_dir = data_dir

    def get_labels(self) -> list[str]:
        return [str(index) for index in range(self.num_choices)]

    def split_paths(self, split: str) -> list[str]:
        """The files of `split` that exist (the first candidate's path when none does, so
        that the error names the file expected)."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
        paths = [os.path.join(self.data_dir, name) for name in self.split_files[split]]
        found = [path for path in paths if tf.io.gfile.exists(path)]
        return found or paths[:1]

    def split_path(self, split: str) -> str:
        return self.split_paths(split)[0]

    def read_file(self, path: str, split: str) -> list[MultipleChoiceExample]:
        raise NotImplementedError

    def get_examples(self, split: str) -> list[MultipleChoiceExample]:
        """Every question of `split`'s files, each checked: 2 to num_choices candidates, none
        empty, a label that is a candidate's index (train and dev)."""
        examples = []
        for path in self.split_paths(split):
            if not tf.io.gfile.exists(path):
                raise FileNotFoundError(
                    f"{path} not found: --task_name={type(self).__name__} reads the {split} "
                    f"split from {' or '.join(self.split_files[split])} in --data_dir"
                )
            for example in self.read_file(path, split):
                self._check(path, split, example)
                examples.append(example)
        return examples

    def _check(self, path: str, split: str, example: MultipleChoiceExample) -> None:
        where = f"{path}, {example.guid}"
        if not 2 <= len(example.choices) <= self.num_choices:
            raise ClassifierDataError(
                f"{where}: {len(example.choices)} candidates, expected 2 to {self.num_choices}"
            )
        if not all(choice.strip() for choice in example.choices):
            raise ClassifierDataError(f"{where}: an empty candidate in {list(example.choices)}")
        if split == "test":  # test labels, if any, are never used
            return
        if example.label is None or not (
            example.label.isdigit() and int(example.label) < len(example.choices)
        ):
            raise ClassifierDataError(
                f"{where}: label {example.label!r} is not the index of one of its "
                f"{len(example.choices)} candidates"
            )

    def settings(self) -> dict:
        """What, besides the split's first file, decides the examples (part of the TFRecord
        cache key): every file read, with its size and time."""
        return {
            "processor": type(self).__name__,
            "num_choices": self.num_choices,
            "files": {
                split: [[path, *file_signature(path)] for path in self.split_paths(split)]
                for split in SPLITS
                if all(tf.io.gfile.exists(path) for path in self.split_paths(split))
            },
        }


@register_processor("swag")
class SwagProcessor(MultipleChoiceProcessor):
    """SWAG (Zellers et al., 2018): which of four endings follows a video caption's sentence."""

    num_choices = 4
    split_files = {"train": ("train.csv",), "dev": ("val.csv",), "test": ("test.csv",)}
    _columns = ("sent1", "sent2", "ending0", "ending1", "ending2", "ending3")

    def read_file(self, path: str, split: str) -> list[MultipleChoiceExample]:
        rows = read_delimited_rows(path, delimiter=",", skip_header=False)
        if not rows:
            return []
        header = rows[0].columns
        needed = [*self._columns, *(["label"] if split != "test" else [])]
        missing = [name for name in needed if name not in header]
        if missing:
            raise ClassifierDataError(
                f"{path}, line 1: the header lacks the SWAG columns {missing} (found {header})"
            )
        index = {name: header.index(name) for name in header}
        return [self._example(row, index, split) for row in rows[1:]]

    @staticmethod
    def _example(row: TsvRow, index: dict, split: str) -> MultipleChoiceExample:
        values = row.columns
        label = values[index["label"]] if "label" in index else None
        return MultipleChoiceExample(
            f"{split}-{row.line_number}",
            values[index["sent1"]],
            values[index["sent2"]],
            tuple(values[index[f"ending{i}"]] for i in range(4)),
            label if split != "test" else None,
        )


@register_processor("c3")
class C3Processor(MultipleChoiceProcessor):
    """C3 (Sun et al., 2020): Chinese multiple-choice reading comprehension, 2 to 4 candidates;
    a question's context is its document's paragraphs joined by newlines."""

    num_choices = 4
    split_files = {
        "train": ("d-train.json", "m-train.json", "c3-d-train.json", "c3-m-train.json"),
        "dev": ("d-dev.json", "m-dev.json", "c3-d-dev.json", "c3-m-dev.json"),
        "test": ("test1.1.json", "test1.0.json", "c3-d-test.json", "c3-m-test.json"),
    }

    def split_paths(self, split: str) -> list[str]:
        paths = super().split_paths(split)
        if split == "test":
            # CLUE's test1.1.json replaced test1.0.json: read one of them, not both.
            clue = [p for p in paths if os.path.basename(p).startswith("test1.")]
            return clue[:1] or paths
        return paths

    def read_file(self, path: str, split: str) -> list[MultipleChoiceExample]:
        documents = read_json_file(path, ClassifierDataError)
        if not isinstance(documents, list):
            raise ClassifierDataError(f"{path}: expected a JSON list of documents")
        name = os.path.splitext(os.path.basename(path))[0]
        examples = []
        for number, document in enumerate(documents):
            where = f"{path}, document {number}"
            if not (isinstance(document, list) and len(document) >= 2):
                raise ClassifierDataError(f"{where}: expected [paragraphs, questions, id]")
            paragraphs, questions = document[0], document[1]
            if not (isinstance(paragraphs, list) and isinstance(questions, list)):
                raise ClassifierDataError(f"{where}: expected [paragraphs, questions, id]")
            context = "\n".join(str(paragraph) for paragraph in paragraphs)
            for question_number, question in enumerate(questions):
                examples.append(
                    self._example(
                        question, context, f"{split}-{name}-{number}-{question_number}", where
                    )
                )
        return examples

    @staticmethod
    def _example(question, context: str, guid: str, where: str) -> MultipleChoiceExample:
        if not isinstance(question, dict) or not isinstance(question.get("choice"), list):
            raise ClassifierDataError(
                f'{where}: a question must be an object with "question" and a "choice" list'
            )
        choices = tuple(str(choice) for choice in question["choice"])
        answer = question.get("answer")
        label = None
        if answer is not None:
            if answer not in choices:
                raise ClassifierDataError(
                    f"{where}: the answer {answer!r} is not one of its choices {list(choices)}"
                )
            label = str(choices.index(answer))
        return MultipleChoiceExample(
            guid, context, str(question.get("question", "")), choices, label
        )
