"""Token tagging examples (named entities, part-of-speech, chunks) and the processor that reads
them from files in the CoNLL layout.

The CoNLL layout (CoNLL-2000/2002/2003 shared tasks and most NER corpora since): one word per
line with its columns separated by whitespace, the word first and the tag in one of the other
columns (the last one in CoNLL-2003: `word POS chunk NER`), a blank line after each sentence, and
`-DOCSTART-` lines between documents. A test file may hold words alone (one column).

`--task_name=conll` of run_classifier.py reads such a task from --data_dir; `--label_column`
picks the tag column (CoNLL-2003: -1 = NER, 1 = POS, 2 = chunk) and `--labels` fixes the tag set.
"""

from __future__ import annotations

import dataclasses
import os
import re

import tensorflow as tf

from official_bert.data.classification.data_processor import (
    SPLITS,
    ClassifierDataError,
    register_processor,
)
from official_bert.utf8_text import read_utf8_file

# CoNLL's columns are separated by spaces or tabs (a word may hold any other character).
_COLUMN_SEPARATOR = re.compile("[ \t]+")

# The tag of words outside any entity, first in the tag list when present (its id is 0).
OUTSIDE_TAG = "O"


@dataclasses.dataclass(frozen=True)
class TaggedSentence:
    """One sentence: `guid` ("dev-12"), its `words`, their `tags` (one per word; None for an
    unlabeled test file) and the 1-based `line_number` of its first word (for error messages)."""

    guid: str
    words: tuple[str, ...]
    tags: tuple[str, ...] | None
    line_number: int


def read_conll_sentences(path: str, tag_column: int = -1, split: str = "train") -> list:
    """The sentences of a CoNLL-layout file.

    Args:
      path: the file (local or gs://).
      tag_column: the index of the tag among a line's whitespace-separated columns (negative
        counts from the end); never the word's column 0.
      split: the guid prefix.

    Returns:
      TaggedSentence list in file order. Lines of one column are words without a tag; a file
      must not mix them with tagged lines.

    Raises:
      FileNotFoundError: no file at `path`.
      ClassifierDataError: a line without the tag column, a tag column that is the word's, or a
        file mixing tagged and untagged lines (naming the file and the line).
    """
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"data file not found: {path}")
    # Lines end at "\n" (after "\r\n"), columns at spaces and tabs only: str.splitlines() and
    # str.split() also break at U+2028, U+0085 or U+001C..U+001E inside a word, which added
    # words and shifted the predictions file against the input.
    lines = read_utf8_file(path, ClassifierDataError).replace("\r\n", "\n").split("\n")
    sentences = []
    words, tags, first_line = [], [], 0
    tagged = None  # whether the file's lines carry tags, decided by its first word

    def end_sentence():
        if words:
            guid = f"{split}-{len(sentences)}"
            sentences.append(
                TaggedSentence(guid, tuple(words), tuple(tags) if tagged else None, first_line)
            )
        words.clear()
        tags.clear()

    for line_number, line in enumerate(lines, start=1):
        columns = _COLUMN_SEPARATOR.split(line.strip(" \t\r"))
        if columns == [""]:
            columns = []
        if not columns or columns[0] == "-DOCSTART-":
            end_sentence()
            continue
        if tagged is None:
            tagged = len(columns) > 1
        if tagged != (len(columns) > 1):
            raise ClassifierDataError(
                f"{path}, line {line_number}: {len(columns)} column(s), but the file's first word "
                f"line has {'tags' if tagged else 'no tag'}; a file must tag all its words or none"
            )
        if tagged:
            if not -len(columns) <= tag_column < len(columns):
                raise ClassifierDataError(
                    f"{path}, line {line_number}: {len(columns)} columns, no tag column "
                    f"{tag_column} (--label_column)"
                )
            if tag_column % len(columns) == 0:
                raise ClassifierDataError(
                    f"{path}, line {line_number}: tag column {tag_column} (--label_column) is the "
                    "word's column 0"
                )
            tags.append(columns[tag_column])
        if not words:
            first_line = line_number
        words.append(columns[0])
    end_sentence()
    return sentences


class TaggingProcessor:
    """Reads one tagging task's splits as TaggedSentences (the counterpart of DataProcessor for
    tasks with a label per word).

    Subclasses set `split_files` (candidate file names per split, the first that exists is read)
    and implement `read_split(path, split)`.
    """

    split_files: dict[str, tuple[str, ...]] = {}
    is_regression = False
    takes_pairs = False

    def __init__(self, data_dir: str, labels: list[str] | None = None):
        self.data_dir = data_dir
        self._labels = list(labels) if labels else None
        self._cache: dict[str, list[TaggedSentence]] = {}

    def split_path(self, split: str) -> str:
        """The file of `split` in data_dir: the first of its candidate names that exists (the
        first name when none does, for the error message)."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
        candidates = [os.path.join(self.data_dir, name) for name in self.split_files[split]]
        return next((path for path in candidates if tf.io.gfile.exists(path)), candidates[0])

    def read_split(self, path: str, split: str) -> list[TaggedSentence]:
        raise NotImplementedError

    def get_labels(self) -> list[str]:
        """The tag names (index = tag id): `labels` as given, else the tags of the training file,
        "O" first, the others sorted."""
        if self._labels is None:
            if not tf.io.gfile.exists(self.split_path("train")):
                raise FileNotFoundError(
                    f"{self.split_path('train')} not found: without a training file the tag set "
                    "must be given (--labels, in the order the model was trained with)"
                )
            found = {tag for sentence in self.get_examples("train") for tag in sentence.tags}
            self._labels = sorted(found, key=lambda tag: (tag != OUTSIDE_TAG, tag))
        return list(self._labels)

    def get_examples(self, split: str) -> list[TaggedSentence]:
        """All sentences of `split`. Train and dev must be tagged, with tags of get_labels()."""
        if split not in self._cache:
            path = self.split_path(split)
            sentences = self.read_split(path, split)
            if split != "test":
                self._check_tags(path, split, sentences)
            self._cache[split] = sentences
        return self._cache[split]

    def _check_tags(self, path: str, split: str, sentences: list[TaggedSentence]) -> None:
        if sentences and sentences[0].tags is None:
            raise ClassifierDataError(
                f"{path}: the {split} split has no tag column (one column per line); train and "
                "dev files need a tag per word"
            )
        if split == "train" and self._labels is None:
            return  # the tag set is read from this file
        labels = self.get_labels()
        known = set(labels)
        for sentence in sentences:
            for offset, tag in enumerate(sentence.tags):
                if tag not in known:
                    # One word a line: the sentence's offset-th word is on its offset-th line.
                    raise ClassifierDataError(
                        f"{path}, line {sentence.line_number + offset}, word "
                        f"{sentence.words[offset]!r}: tag {tag!r} is not one of {labels} "
                        "(the training file's tags in the model's order, or --labels)"
                    )

    def settings(self) -> dict:
        """What, besides the files, decides the examples (part of the TFRecord cache key)."""
        return {"processor": type(self).__name__, "labels": self.get_labels()}


@register_processor("conll")
class ConllTaggingProcessor(TaggingProcessor):
    """A tagging task in the CoNLL layout (see the module docstring): data_dir holds train.txt,
    dev.txt (or valid.txt) and test.txt, or CoNLL-2003's eng.train, eng.testa and eng.testb.

    Args:
      data_dir: the task's folder.
      label_column: the tag column (an index as a string, as run_classifier.py's --label_column;
        default the last).
      labels: the tag set (default: the tags of the training file, "O" first).
    """

    split_files = {
        "train": ("train.txt", "eng.train"),
        "dev": ("dev.txt", "valid.txt", "eng.testa"),
        "test": ("test.txt", "eng.testb"),
    }

    def __init__(self, data_dir: str, label_column: str | int = -1, labels=None):
        super().__init__(data_dir, labels)
        try:
            self.tag_column = int(label_column)
        except ValueError:
            raise ValueError(
                f"--label_column={label_column!r}: --task_name=conll takes the tag column as an "
                "index (e.g. -1 for the last column)"
            ) from None

    def read_split(self, path: str, split: str) -> list[TaggedSentence]:
        return read_conll_sentences(path, self.tag_column, split)

    def settings(self) -> dict:
        return {**super().settings(), "tag_column": self.tag_column}
