"""Word boundaries for whole-word masking of text written without spaces (Chinese).

The original's `do_whole_word_mask` groups a word's "##" pieces; a CJK ideograph is always a word
of its own to BERT's tokenizer, so Chinese words were never masked whole. Here every wordpiece
gets a mark, True when it continues the word of the piece before it:

- "##" pieces, as the original (all text, with every segmenter);
- with `jieba`: a CJK ideograph that follows another CJK ideograph of the same jieba word;
- with `ref_file`: the pieces a reference file names, in the layout Hugging Face's
  examples/research_projects/mlm_wwm/run_chinese_ref.py writes (Chinese-BERT-wwm's LTP
  segmentation): one JSON list per non-blank input line (the line stripped, as the corpus
  reader strips it), holding the positions in the line's wordpieces with [CLS] at 0 of the
  CJK characters that continue a word, e.g. `[2, 4, 5]`.

The first piece of a sentence never continues a word (a word does not run across lines).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from official_bert.quiet_import import import_quietly
from official_bert.tokenization import (
    CJK_CHARACTER_CLASS,
    FastWordpieceBertTokenizer,
    _is_chinese_char,
)

WORD_SEGMENTERS = ("none", "jieba", "ref_file")


def is_cjk_character(character: str) -> bool:
    """Whether BERT's tokenizer spaces `character` out as a CJK ideograph (its _is_chinese_char)."""
    return _is_chinese_char(ord(character))


def jieba_cache_directory() -> str:
    """A directory of this user's own for jieba's dictionary cache.

    jieba's default cache is `<tmp>/jieba.cache`, created with mode 0600: on a machine shared by
    several users the first one's cache is unreadable to the others, whose jieba then rebuilds
    the dictionary and fails to replace the file (logging a traceback) every time. Worker
    processes of one user share this directory safely: jieba writes a temporary file and renames
    it, so a reader sees a whole cache or none.
    """
    directory = os.path.join(tempfile.gettempdir(), f"official_bert_jieba_{os.getuid()}")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    return directory


class JiebaWordSegmenter:
    """jieba 0.42.1 (precise mode with its HMM for unknown words), quiet and with a per-user
    cache. Needs the optional `zh` extra (`pip install official_bert[zh]`)."""

    def __init__(self):
        try:
            jieba = import_quietly("jieba")
        except ImportError as error:
            raise ImportError(
                "--word_segmenter=jieba needs jieba: pip install 'official_bert[zh]' "
                "(or pip install jieba==0.42.1)"
            ) from error
        # jieba logs its dictionary loading at DEBUG to stderr by default.
        jieba.setLogLevel(logging.WARNING)
        self._tokenizer = jieba.Tokenizer()
        self._tokenizer.tmp_dir = jieba_cache_directory()
        self._tokenizer.initialize()

    def words(self, line: str) -> list[str]:
        """The words of `line`, in order; they concatenate to `line`."""
        return self._tokenizer.lcut(line, HMM=True)

    def cjk_continuation_marks(self, line: str) -> list[bool]:
        """One mark per CJK ideograph of `line`, in order: True when it follows another CJK
        ideograph of the same jieba word."""
        marks = []
        for word in self.words(line):
            previous_is_cjk = False
            for character in word:
                is_cjk = is_cjk_character(character)
                if is_cjk:
                    marks.append(previous_is_cjk)
                previous_is_cjk = is_cjk
        return marks


class WordReference(NamedTuple):
    """A line of a reference file: the positions it names ([CLS] = 0) and where it was read
    ("path:line", for errors)."""

    positions: tuple[int, ...]
    source: str


def read_word_references(paths: Sequence[str]) -> Iterator[WordReference]:
    """The lines of the reference files, one after another (one file per input file, in the
    input files' order, or any split of the same lines).

    Raises ValueError naming the file and line of a line that is not a JSON list of integers.
    """
    for path in paths:
        with tf.io.gfile.GFile(path, "r") as reader:
            for line_number, line in enumerate(reader, start=1):
                source = f"{path}:{line_number}"
                try:
                    positions = json.loads(line)
                except json.JSONDecodeError as error:
                    raise ValueError(
                        f"{source}: not JSON ({error.msg}); expected a list of wordpiece "
                        "positions such as [2, 4, 5], one line per non-blank corpus line"
                    ) from None
                if not isinstance(positions, list) or not all(
                    isinstance(p, int) and not isinstance(p, bool) for p in positions
                ):
                    raise ValueError(
                        f"{source}: expected a JSON list of integers (wordpiece positions, "
                        f"[CLS] = 0), found {line.strip()[:80]!r}"
                    )
                yield WordReference(tuple(positions), source)


def attach_word_references(chunks, reference_paths: Sequence[str]):
    """Yields the corpus chunks with `word_references` set: one WordReference per sentence,
    nested as `chunk.documents`. The reference lines pair with the corpus's non-blank lines in
    order (blank lines separate documents and have no reference line, as run_chinese_ref.py
    drops them).

    Raises ValueError when the files hold fewer or more lines than the corpus has sentences.
    """
    references = read_word_references(reference_paths)
    for chunk in chunks:
        nested = []
        for document in chunk.documents:
            document_references = []
            for sentence in document:
                reference = next(references, None)
                if reference is None:
                    raise ValueError(
                        f"--word_ref_file {','.join(reference_paths)} ends before the corpus: "
                        f"no reference line for the sentence {sentence[:60]!r} (expected one "
                        "line per non-blank corpus line, in order)"
                    )
                document_references.append(reference)
            nested.append(document_references)
        chunk.word_references = nested
        yield chunk
    extra = next(references, None)
    if extra is not None:
        raise ValueError(
            f"{extra.source}: the reference file(s) hold more lines than the corpus has "
            "non-blank lines (expected one line per non-blank corpus line, in order)"
        )


def word_continuation_marks(
    tokenizer: FastWordpieceBertTokenizer,
    sentences: Sequence[str],
    is_continuation: np.ndarray,
    segmenter: JiebaWordSegmenter | None = None,
    references: Sequence[WordReference] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Wordpieces of each sentence and the word-continuation mark of each piece.

    Args:
      tokenizer: the pipeline's tokenizer (the ids are those of `tokenizer.tokenize`).
      sentences: the corpus lines (stripped).
      is_continuation: bool [vocab_size], True for "##" pieces.
      segmenter: word boundaries of CJK text from jieba, or
      references: one WordReference per sentence (a reference file's lines). At most one of
        the two; with neither, the marks are the "##" rule alone.

    Returns:
      (ids int32 [total pieces], row_splits int64 [len(sentences) + 1], marks bool [total
      pieces]): sentence i's pieces are ids[row_splits[i]:row_splits[i + 1]].

    Raises:
      ValueError: a reference names a position outside its line's pieces (the reference file
        does not belong to this corpus or tokenizer), or a sentence's CJK ideographs and
        CJK pieces differ in number (a tokenizer change this module does not know).
    """
    if segmenter is not None and references is not None:
        raise ValueError("give a segmenter or references, not both")
    words = tokenizer.tokenize_words(tf.constant(list(sentences), tf.string))
    ids = words.flat_values.numpy().astype(np.int32)
    row_splits = words.values.row_splits.numpy()[words.row_splits.numpy()].astype(np.int64)
    marks = is_continuation[ids]
    if segmenter is not None:
        # Each CJK ideograph is a word of one piece (its id or [UNK]); find those words.
        split = tokenizer.split_words(tf.constant(list(sentences), tf.string))
        # A word that is one ideograph matches the one-character class.
        word_is_cjk = tf.strings.regex_full_match(split.flat_values, CJK_CHARACTER_CLASS).numpy()
        pieces_per_word = np.diff(words.values.row_splits.numpy())
        piece_is_cjk = np.repeat(word_is_cjk, pieces_per_word)
        cjk_before = np.concatenate([[0], np.cumsum(piece_is_cjk)])
        cjk_pieces_by_line = cjk_before[row_splits[1:]] - cjk_before[row_splits[:-1]]
        cjk_marks = []
        for line, expected in zip(sentences, cjk_pieces_by_line, strict=True):
            line_marks = segmenter.cjk_continuation_marks(line)
            if len(line_marks) != expected:
                raise ValueError(
                    f"the line {line[:60]!r} has {len(line_marks)} CJK ideographs but "
                    f"{expected} CJK wordpieces; please report this line"
                )
            cjk_marks.extend(line_marks)
        marks[piece_is_cjk] |= np.asarray(cjk_marks, bool)
    elif references is not None:
        if len(references) != len(sentences):
            raise ValueError(f"{len(references)} references for {len(sentences)} sentences")
        for index, reference in enumerate(references):
            start, end = row_splits[index], row_splits[index + 1]
            for position in reference.positions:
                # Position 0 is [CLS]; a line's pieces start at 1.
                if not 1 <= position <= end - start:
                    raise ValueError(
                        f"{reference.source}: position {position} is outside the line's "
                        f"{end - start} wordpieces (1..{end - start}, [CLS] = 0); is this the "
                        "reference file of this corpus and vocabulary?"
                    )
                marks[start + position - 1] = True
    # A word never runs across lines.
    starts = row_splits[:-1][np.diff(row_splits) > 0]
    marks[starts] = False
    return ids, row_splits, marks
