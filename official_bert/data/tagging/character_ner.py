"""Chinese named-entity corpora as they ship: one character per line, and the reader of them.

The layout of MSRA NER (SIGHAN 2006), the People's Daily 1998 NER corpus, Resume and most other
Chinese NER sets: each line holds a character (rarely a longer token, e.g. a Latin word), a tab
or spaces, and its tag; a blank line ends a sentence. Tags are BIO (`B-PER`, `I-PER`, `O`),
BIOES (with `E-` and `S-`) or BMES (`M-` for a middle character, as Lattice-LSTM's Resume files
spell it); the entity types are the corpus's own (PER/LOC/ORG, NR/NS/NT, NAME, ...).

It differs from the word-level CoNLL layout (examples.py) in details that matter for Chinese:
- lines end at "\\n" (a "\\r" before it is dropped) and nowhere else: `str.splitlines` would also
  break at U+2028, U+0085 or U+001C..U+001E, which occur as characters in web text;
- columns are split at tabs, or at ASCII spaces in a file without tabs, never at other Unicode
  spaces: a full-width space (U+3000) or a no-break space is a character of the sentence, with its
  own tag, and becomes [UNK] (see data/tagging/features.py) instead of vanishing;
- a line must be `token tag` (or a token alone in an unlabeled test file), and each tag must be O
  or <B|I|M|E|S>-<type>; anything else is an error naming the file and line.

Each token is tokenized on its own and its tag goes on its first wordpiece, so a character the
vocabulary lacks is one [UNK] that keeps its tag and the tags after it stay in place.

`--task_name=chinese_ner` of run_classifier.py reads such a task from --data_dir; `msra_ner` and
`peoples_daily_ner` are the same reader under the names the corpora go by. `--labels` fixes the
tag set (default: the training file's tags, O first).
"""

from __future__ import annotations

import re

import tensorflow as tf

from official_bert.data.classification.data_processor import (
    ClassifierDataError,
    register_processor,
)
from official_bert.data.tagging.examples import TaggedSentence, TaggingProcessor
from official_bert.utf8_text import read_utf8_file

# O, or a prefix of BIO / BIOES / BMES, a hyphen and an entity type.
_TAG_PATTERN = re.compile(r"O|[BIMES]-\S+")
_SPACES = re.compile(r" +")

# The task names of run_classifier.py that read this layout.
CHARACTER_NER_TASK_NAMES = ("chinese_ner", "msra_ner", "peoples_daily_ner")


def _columns(line: str) -> list[str]:
    """A line's columns: split at tabs when it has any, else at runs of ASCII spaces. Trailing
    tabs and spaces, and spaces around a tab-separated column, are dropped; other whitespace
    characters (U+3000, U+00A0) are kept as tokens."""
    line = line.rstrip(" \t")
    if "\t" in line:
        # A column of spaces only is a space character (the token), not padding.
        return [column.strip(" ") or column for column in line.split("\t")]
    return _SPACES.split(line.strip(" "))


def read_character_ner_sentences(path: str, split: str = "train") -> list[TaggedSentence]:
    """The sentences of a character-per-line NER file (see the module docstring).

    Args:
      path: the file (local or gs://), UTF-8, with or without a byte-order mark, "\\n" or
        "\\r\\n" line ends.
      split: the guid prefix ("train-0", ...).

    Returns:
      TaggedSentence list in file order; `tags` is None for a file of tokens without tags.

    Raises:
      FileNotFoundError: no file at `path`.
      ClassifierDataError: naming the file and the 1-based line: a line that is not
        `token<TAB or spaces>tag`, a tag that is not O or <B|I|M|E|S>-<type>, or a file
        mixing tagged and untagged lines.
    """
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"data file not found: {path}")
    text = read_utf8_file(path, ClassifierDataError)
    sentences = []
    tokens, tags, first_line = [], [], 0
    tagged = None  # whether the file's lines carry tags, decided by its first token line

    def end_sentence():
        if tokens:
            guid = f"{split}-{len(sentences)}"
            sentences.append(
                TaggedSentence(guid, tuple(tokens), tuple(tags) if tagged else None, first_line)
            )
        tokens.clear()
        tags.clear()

    for line_number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip(" \t") or line.startswith("-DOCSTART-"):
            end_sentence()
            continue
        columns = _columns(line)
        if len(columns) > 2 or not columns[0]:
            raise ClassifierDataError(
                f"{path}, line {line_number}: {line!r} is not `token<TAB or spaces>tag` (found "
                f"{len(columns)} columns{', the first empty' if not columns[0] else ''}); a "
                "space character as the token needs a tab before its tag"
            )
        if tagged is None:
            tagged = len(columns) == 2
        if tagged != (len(columns) == 2):
            # "  O" in a space-separated file: a space as the token, taken for padding.
            hint = " (a space character as the token needs a tab before its tag)"
            raise ClassifierDataError(
                f"{path}, line {line_number}: {line!r} has "
                f"{'no tag' if tagged else 'a tag'}, but the file's first token line "
                f"{'has one' if tagged else 'has none'}; a file must tag all its tokens or none"
                f"{hint if line.startswith(' ') else ''}"
            )
        if tagged:
            tag = columns[1]
            if not _TAG_PATTERN.fullmatch(tag):
                raise ClassifierDataError(
                    f"{path}, line {line_number}: tag {tag!r} is not O or "
                    "<B|I|M|E|S>-<type> (BIO, BIOES or BMES, e.g. B-PER)"
                )
            tags.append(tag)
        if not tokens:
            first_line = line_number
        tokens.append(columns[0])
    end_sentence()
    return sentences


@register_processor("peoples_daily_ner")
@register_processor("msra_ner")
@register_processor("chinese_ner")
class CharacterNerProcessor(TaggingProcessor):
    """A Chinese NER task, one character per line (see the module docstring). data_dir holds
    train.txt, dev.txt (or valid.txt) and test.txt, or the names the corpora ship with:
    example.{train,dev,test} (People's Daily, as in the ChineseNER repositories) or
    {train,dev,test}.char.bmes (Lattice-LSTM's Resume).

    Args:
      data_dir: the task's folder.
      labels: the tag set in id order (default: the training file's tags, O first).
    """

    split_files = {
        "train": ("train.txt", "example.train", "train.char.bmes"),
        "dev": ("dev.txt", "valid.txt", "example.dev", "dev.char.bmes"),
        "test": ("test.txt", "example.test", "test.char.bmes"),
    }

    def read_split(self, path: str, split: str) -> list[TaggedSentence]:
        return read_character_ner_sentences(path, split)
