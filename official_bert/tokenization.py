"""WordPiece tokenization: the original BERT tokenizer in pure Python, and its fast in-graph twin.

`FullTokenizer` (with `BasicTokenizer` and `WordpieceTokenizer`) reproduces the semantics of the
original google-research/bert `tokenization.py`. It is the reference (the tests' oracle) and the
original's API for users who want it; no pipeline of the library tokenizes with it.
`FastWordpieceBertTokenizer` rebuilds the same pipeline from TensorFlow / tensorflow_text ops so
that it runs inside a `tf.function`, a `tf.data` map or an exported SavedModel, and returns the
same ids; the few places where it cannot agree are listed in its docstring and pinned by tests.
Every pipeline (pretraining, classification, tagging, SQuAD, feature extraction, serving) turns
text into ids with it; `as_fast_tokenizer` lets those that accept a tokenizer take a
`FullTokenizer` too.
"""

from __future__ import annotations

import codecs
import collections
import functools
import json
import os
import re
import sys
import unicodedata
import weakref
from collections.abc import Mapping, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from official_bert.atomic_output import atomic_output
from official_bert.file_system import check_input_is_a_file

# === The original pure-Python tokenizer ===

# Google's released checkpoints, by directory name, and whether they expect lower-cased input.
_LOWER_CASE_MODELS = (
    "uncased_L-24_H-1024_A-16",
    "uncased_L-12_H-768_A-12",
    "multilingual_L-12_H-768_A-12",
    "chinese_L-12_H-768_A-12",
)
_CASED_MODELS = (
    "cased_L-12_H-768_A-12",
    "cased_L-24_H-1024_A-16",
    "multi_cased_L-12_H-768_A-12",
)
# How Google names its released BERTs (2018-2020: the above, whole-word masking `wwm_...`, the
# small `uncased_L-2_H-128_A-2` ...), each folder and archive so named.
_RELEASED_NAME = re.compile(
    r"(wwm_)?(multi_)?(un)?cased_L-\d+_H-\d+_A-\d+|(chinese|multilingual)_L-\d+_H-\d+_A-\d+"
)

# The CJK ideograph blocks the original spaces out character by character (its _is_chinese_char).
# Hangul, kana and the rest are deliberately absent: the original treats them like any script.
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
# The same blocks as one RE2 character class, for TensorFlow's regex ops (one character each).
CJK_CHARACTER_CLASS = (
    "[" + "".join(f"\\x{{{low:X}}}-\\x{{{high:X}}}" for low, high in _CJK_RANGES) + "]"
)


def convert_to_unicode(text: str | bytes) -> str:
    """Returns `text` as str; bytes are decoded as UTF-8, invalid bytes dropped, as the original."""
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        return text.decode("utf-8", "ignore")
    raise ValueError(f"Unsupported string type: {type(text).__name__} (expected str or bytes)")


class VocabularyError(ValueError):
    """A vocab.txt that cannot serve: not UTF-8 text, or without a token that is needed."""


def load_vocab(vocab_file: str | os.PathLike) -> collections.OrderedDict[str, int]:
    """Reads a `vocab.txt`: one token a line, the id is the line number (from 0).

    As in the original, each line is stripped of surrounding whitespace, and when a token appears
    twice the later line wins (so ids can skip numbers). A UTF-8 byte-order mark at the start
    (Windows Notepad's "UTF-8") is not part of the first token. Paths go through `tf.io.gfile`,
    so `gs://` works as it did in the original release.

    Raises:
      FileNotFoundError: `vocab_file` does not exist.
      ValueError: `vocab_file` is a folder.
      VocabularyError: the file is UTF-16 or a line is not valid UTF-8 (the file and line number
        are named).
    """
    path = os.fspath(vocab_file)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"Vocabulary file not found: {path}")
    check_input_is_a_file(path, "vocab_file", usual_name="vocab.txt")
    with tf.io.gfile.GFile(path, "rb") as reader:
        data = reader.read()
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise VocabularyError(
            f"{path} is not UTF-8: it starts with a UTF-16 byte-order mark; save it as UTF-8"
        )
    data = data.removeprefix(codecs.BOM_UTF8)
    # The original reads with readline(), which splits on "\n" only (not on "\r" or U+2028).
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    vocab: collections.OrderedDict[str, int] = collections.OrderedDict()
    for index, line in enumerate(lines):
        try:
            token = line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise VocabularyError(
                f"{path}, line {index + 1}: not valid UTF-8 ({error.reason} at byte "
                f"{error.start}): {line!r}"
            ) from None
        vocab[token.strip()] = index
    return vocab


def vocab_id_count(vocab: Mapping[str, int]) -> int:
    """The number of ids a vocabulary (token -> id, as `load_vocab`) spans: its last token's id
    plus one. Empty lines at the end of a vocab.txt (an editor's, `echo >> vocab.txt`) hold no
    token that tokenizing produces, so they are not counted; ids stay line numbers."""
    return max((index for token, index in vocab.items() if token), default=-1) + 1


def convert_by_vocab(vocab, items):
    """Maps each item through `vocab`; a missing item raises KeyError naming it."""
    output = []
    for item in items:
        try:
            output.append(vocab[item])
        except KeyError:
            raise KeyError(f"{item!r} is not in the vocabulary") from None
    return output


def convert_tokens_to_ids(vocab, tokens):
    return convert_by_vocab(vocab, tokens)


def convert_ids_to_tokens(inv_vocab, ids):
    return convert_by_vocab(inv_vocab, ids)


def guess_do_lower_case(vocab_file: str, model_checkpoint_path: str | None = None) -> bool:
    """Whether the model is uncased, from its paths' names or else from its vocabulary.

    "uncased" in the vocab or checkpoint path means True and "cased" False (Google's release
    names); otherwise a vocabulary with an upper-case letter outside its [SPECIAL] tokens is
    cased (an uncased model never sees one).
    """
    for path in (vocab_file, model_checkpoint_path or ""):
        name = path.lower()
        if "uncased" in name:
            return True
        if "cased" in name:
            return False
    return not vocab_has_upper_case(vocab_file)


def vocab_has_upper_case(vocab_file: str) -> bool:
    """Whether a vocabulary holds a token with an upper-case letter outside its [SPECIAL] and
    <special> tokens (which an uncased model's never does: Google's Chinese vocab, uncased,
    holds `<S>` and `<T>`)."""
    return any(
        token != token.lower()
        for token in load_vocab(vocab_file)
        if token[:1] + token[-1:] not in ("[]", "<>")
    )


def released_model_name(init_checkpoint: str | None) -> str | None:
    """The name of the released Google model a checkpoint path names, or None: as in the
    original, the folder holding its file (`.../uncased_L-12_H-768_A-12/bert_model.ckpt`), or
    the release's folder itself (`--init_checkpoint=$BERT_BASE_DIR`, or a release zip's URL
    unpacked under its name), where that is one of the released names."""
    if not init_checkpoint:
        return None
    path = os.fspath(init_checkpoint)
    # The original's pattern: the path component just before "bert_model.ckpt".
    match = re.match(r"^.*?([A-Za-z0-9_-]+)/bert_model.ckpt", path)
    if match is not None:
        return match.group(1)
    name = os.path.basename(path.rstrip("/"))
    return name if _RELEASED_NAME.fullmatch(name) else None


def released_model_lower_case(init_checkpoint: str | None) -> bool | None:
    """The casing of the released Google model a path names (released_model_name): its name
    says it (`uncased_...`, `wwm_cased_...`, `multi_cased_...`; the Chinese and the first
    multilingual models are uncased); None for any other path."""
    name = released_model_name(init_checkpoint)
    if name is None or not _RELEASED_NAME.fullmatch(name):
        return None
    return "uncased" in name or "cased" not in name


def validate_case_matches_checkpoint(do_lower_case: bool, init_checkpoint: str | None) -> None:
    """Raises ValueError when `do_lower_case` contradicts a released Google checkpoint's casing.

    As in the original, the model is recognised only by its released name
    (released_model_name); any other path, None or "" passes silently, because the casing of a
    custom model cannot be known.
    """
    model_name = released_model_name(init_checkpoint)
    if model_name is None:
        return
    if model_name in _LOWER_CASE_MODELS and not do_lower_case:
        actual_flag, case_name, opposite_flag = "False", "lowercased", "True"
    elif model_name in _CASED_MODELS and do_lower_case:
        actual_flag, case_name, opposite_flag = "True", "cased", "False"
    else:
        return
    raise ValueError(
        f"You passed in `--do_lower_case={actual_flag}` with "
        f"`--init_checkpoint={init_checkpoint}`. However, `{model_name}` seems to be a "
        f"{case_name} model, so you should pass in `--do_lower_case={opposite_flag}` so that the "
        "fine-tuning matches how the model was pre-trained. If the checkpoint directory was "
        "renamed and this check is wrong, rename it back or pass the flag that matches the model."
    )


def whitespace_tokenize(text: str) -> list[str]:
    """Splits on whitespace as Python's `str.split()` sees it (this includes U+2028 and U+2029)."""
    return text.split()


# The original's --preserve_unused_tokens: a whitespace-separated word that is in the vocabulary
# and matches this stays one token (its _UNUSED_TOKEN_RE; \d is any Unicode digit, as there).
_UNUSED_TOKEN = re.compile(r"^\[unused\d+\]$")


def is_preserved_token(token: str, vocab, preserve_unused_tokens: bool) -> bool:
    """The original's `preserve_token`: with `preserve_unused_tokens`, whether `token` (a
    whitespace-separated word before lower-casing, accent stripping and the punctuation split)
    is an `[unusedN]` token of `vocab` (a container of tokens), kept whole and never WordPiece'd."""
    return preserve_unused_tokens and token in vocab and bool(_UNUSED_TOKEN.search(token))


def _is_whitespace(char: str) -> bool:
    # \t, \n and \r are control characters in Unicode, but the original counts them as spaces.
    if char in " \t\n\r":
        return True
    return unicodedata.category(char) == "Zs"


def _is_control(char: str) -> bool:
    if char in "\t\n\r":
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char: str) -> bool:
    code_point = ord(char)
    # All non-alphanumeric ASCII counts, even "$", "^", "`" and "+" which Unicode files as symbols.
    if (
        33 <= code_point <= 47
        or 58 <= code_point <= 64
        or 91 <= code_point <= 96
        or 123 <= code_point <= 126
    ):
        return True
    return unicodedata.category(char).startswith("P")


def _is_chinese_char(code_point: int) -> bool:
    if code_point < 0x3400:  # Below the first CJK block: most text exits here, quickly.
        return False
    return any(low <= code_point <= high for low, high in _CJK_RANGES)


class BasicTokenizer:
    """Cleans text, splits it on whitespace and punctuation, and (uncased) lower-cases it.

    Args:
      do_lower_case: lower-case with `str.lower()`, then drop accents (NFD, category Mn removed).
      vocab: a container of tokens; only read with `preserve_unused_tokens`.
      preserve_unused_tokens: the original's --preserve_unused_tokens: a whitespace-separated
        word that is an `[unusedN]` token of `vocab` is kept as it is (not lower-cased, not
        split on its brackets); see `is_preserved_token`.
    """

    def __init__(self, do_lower_case: bool = True, vocab=(), preserve_unused_tokens: bool = False):
        self.do_lower_case = do_lower_case
        self.vocab = vocab
        self.preserve_unused_tokens = preserve_unused_tokens

    def tokenize(self, text: str | bytes) -> list[str]:
        """Returns the words of `text` (before WordPiece), as a list of str."""
        text = convert_to_unicode(text)
        text = self._clean_text(text)
        # Added in the original for the multilingual and Chinese models; harmless for English,
        # whose vocabularies hold a few CJK characters anyway.
        text = self._tokenize_chinese_chars(text)
        split_tokens = []
        for token in whitespace_tokenize(text):
            if is_preserved_token(token, self.vocab, self.preserve_unused_tokens):
                split_tokens.append(token)
                continue
            if self.do_lower_case:
                token = token.lower()
                token = self._run_strip_accents(token)
            split_tokens.extend(self._run_split_on_punc(token))
        return whitespace_tokenize(" ".join(split_tokens))

    def _run_strip_accents(self, text: str) -> str:
        if text.isascii():  # NFD leaves ASCII alone and it has no marks.
            return text
        text = unicodedata.normalize("NFD", text)
        return "".join(char for char in text if unicodedata.category(char) != "Mn")

    def _run_split_on_punc(self, text: str) -> list[str]:
        if text.isalnum():  # Letters and digits only (no category P): nothing to split.
            return [text]
        words: list[list[str]] = []
        start_new_word = True
        for char in text:
            if _is_punctuation(char):
                words.append([char])
                start_new_word = True
            else:
                if start_new_word:
                    words.append([])
                start_new_word = False
                words[-1].append(char)
        return ["".join(word) for word in words]

    def _tokenize_chinese_chars(self, text: str) -> str:
        if max(text, default="") < "\u3400":  # Nothing reaches the first CJK block.
            return text
        output = []
        for char in text:
            if _is_chinese_char(ord(char)):
                output.extend((" ", char, " "))
            else:
                output.append(char)
        return "".join(output)

    def _clean_text(self, text: str) -> str:
        if text.isascii() and text.isprintable():  # No control characters, only " " as space.
            return text
        output = []
        for char in text:
            code_point = ord(char)
            if code_point == 0 or code_point == 0xFFFD or _is_control(char):
                continue
            output.append(" " if _is_whitespace(char) else char)
        return "".join(output)


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece over whitespace-separated words.

    Args:
      vocab: token -> id (only membership is used).
      unk_token: emitted once for a word that cannot be covered by vocabulary pieces.
      max_input_chars_per_word: longer words (in characters, not bytes) become `unk_token`.
    """

    def __init__(self, vocab, unk_token: str = "[UNK]", max_input_chars_per_word: int = 200):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word

    def tokenize(self, text: str | bytes) -> list[str]:
        """Returns the wordpieces of `text`, e.g. "unaffable" -> ["un", "##aff", "##able"].

        `text` should already have been through `BasicTokenizer`.
        """
        text = convert_to_unicode(text)
        output_tokens = []
        for token in whitespace_tokenize(text):
            if len(token) > self.max_input_chars_per_word:
                output_tokens.append(self.unk_token)
                continue
            pieces = []
            start = 0
            while start < len(token):
                end = len(token)
                piece = None
                while start < end:
                    candidate = token[start:end]
                    if start > 0:
                        candidate = "##" + candidate
                    if candidate in self.vocab:
                        piece = candidate
                        break
                    end -= 1
                if piece is None:
                    # One unmatched position spoils the whole word, as in the original.
                    pieces = [self.unk_token]
                    break
                pieces.append(piece)
                start = end
            output_tokens.extend(pieces)
        return output_tokens


class FullTokenizer:
    """The original end-to-end tokenizer: `BasicTokenizer` then `WordpieceTokenizer`.

    Args:
      vocab_file: path of `vocab.txt` (one token a line).
      do_lower_case: True for uncased models. See `validate_case_matches_checkpoint`.
      preserve_unused_tokens: the original's --preserve_unused_tokens: `[unusedN]` tokens of
        the vocabulary written as whitespace-separated words in the text stay one token each
        (see `BasicTokenizer`); off by default, as in the original.

    Attributes:
      vocab: OrderedDict token -> id, as `load_vocab` returns it.
      inv_vocab: dict id -> token.
    """

    def __init__(
        self,
        vocab_file: str | os.PathLike,
        do_lower_case: bool = True,
        preserve_unused_tokens: bool = False,
    ):
        self.vocab = load_vocab(vocab_file)
        self.inv_vocab = {index: token for token, index in self.vocab.items()}
        self.basic_tokenizer = BasicTokenizer(
            do_lower_case=do_lower_case,
            vocab=self.vocab,
            preserve_unused_tokens=preserve_unused_tokens,
        )
        self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)

    def tokenize(self, text: str | bytes) -> list[str]:
        """Returns the wordpieces of `text` as a list of str."""
        preserve = self.basic_tokenizer.preserve_unused_tokens
        pieces = []
        for word in self.basic_tokenizer.tokenize(text):
            # As the original: a preserved word skips WordPiece (and its length limit).
            if is_preserved_token(word, self.vocab, preserve):
                pieces.append(word)
            else:
                pieces.extend(self.wordpiece_tokenizer.tokenize(word))
        return pieces

    def convert_tokens_to_ids(self, tokens) -> list[int]:
        """Raises KeyError naming the first token that is not in the vocabulary."""
        return convert_by_vocab(self.vocab, tokens)

    def convert_ids_to_tokens(self, ids) -> list[str]:
        """Raises KeyError naming the first id that is not in the vocabulary."""
        return convert_by_vocab(self.inv_vocab, ids)


# === The fast in-graph tokenizer ===

# Capital letters of Unicode 14.0 (Python 3.11's database) that `tf.strings.lower` leaves alone
# because the ICU case tables inside TensorFlow 2.21 predate them; Python's `str.lower()` maps each
# one to a single lower-case code point. A test compares both lowerings on every code point.
_CAPITALS_UNKNOWN_TO_TF_LOWER = (
    (0x2C2F, 0x2C2F),  # Glagolitic caudate chrivi
    (0xA7C0, 0xA7C0),  # Latin old Polish o
    (0xA7D0, 0xA7D0),  # Latin closed insular g
    (0xA7D6, 0xA7D6),  # Latin middle Scots s
    (0xA7D8, 0xA7D8),  # Latin sigmoid s
    (0x10570, 0x10595),  # Vithkuqi capitals (the three unassigned gaps map to themselves)
)
_CAPITAL_SIGMA = "\u03a3"


def _re2_class(code_points, negate: bool = False) -> str:
    """An RE2 character class matching exactly `code_points` (sorted ints), or all others."""
    ranges: list[list[int]] = []
    for code_point in code_points:
        if ranges and ranges[-1][1] == code_point - 1:
            ranges[-1][1] = code_point
        else:
            ranges.append([code_point, code_point])
    parts = [
        f"\\x{{{low:X}}}" if low == high else f"\\x{{{low:X}}}-\\x{{{high:X}}}"
        for low, high in ranges
    ]
    return ("[^" if negate else "[") + "".join(parts) + "]"


# `compute_character_classes()` for this Python's Unicode database, stored with the package:
# computing them walks all 1.1 million code points (about half a second of start-up in every
# process that builds a FastWordpieceBertTokenizer: each create_pretraining_data worker, each
# script). Rewritten by `write_character_classes_file()`; a test checks that it equals a fresh
# computation.
CHARACTER_CLASSES_FILE = os.path.join(os.path.dirname(__file__), "tokenization_classes.json")


@functools.cache
def _character_classes() -> dict[str, str]:
    """`compute_character_classes()`, read from CHARACTER_CLASSES_FILE when it was made with
    the same Unicode version as this Python's `unicodedata` (computed otherwise)."""
    try:
        with open(CHARACTER_CLASSES_FILE, encoding="utf-8") as reader:
            stored = json.load(reader)
    except (OSError, ValueError):
        stored = {}
    if stored.get("unidata_version") == unicodedata.unidata_version:
        return stored["patterns"]
    return compute_character_classes()


def write_character_classes_file(path: str = CHARACTER_CLASSES_FILE) -> None:
    """Stores `compute_character_classes()` with this Python's Unicode version at `path`."""
    data = {
        "unidata_version": unicodedata.unidata_version,
        "patterns": compute_character_classes(),
    }
    with atomic_output(path) as temporary, open(temporary, "w", encoding="utf-8") as writer:
        json.dump(data, writer, indent=1, sort_keys=True)
        writer.write("\n")


def compute_character_classes() -> dict[str, str]:
    """RE2 classes for each character test of `BasicTokenizer`, from Python's `unicodedata`.

    RE2's own `\\p{..}` tables follow a newer Unicode than Python 3.11 (14.0) and disagree on
    about 60 recently assigned code points; building the classes from the database the reference
    reads makes the two agree on every code point. Returns a dict of RE2 patterns:

    - "dropped": what `_clean_text` removes;
    - "other_whitespace": what splits words without being kept, except " " itself;
    - "kept_delimiter": punctuation and CJK ideographs, split off as one-character words;
    - "nonspacing_mark": category Mn, removed after NFD when lower-casing;
    - "final_sigma": a capital sigma that `str.lower()` turns into a final sigma, with the
      context before it as group 1 and the context after it as group 2.
    """
    code_points_by_category = collections.defaultdict(list)
    category = unicodedata.category
    for code_point in range(sys.maxunicode + 1):
        # Surrogates (category Cs) land in no class: they cannot occur in valid UTF-8.
        code_points_by_category[category(chr(code_point))].append(code_point)

    # The tests of _clean_text, _is_whitespace + str.split(), _is_punctuation, _is_chinese_char
    # and _run_strip_accents, written per category to take one pass over the code points; a test
    # checks them code point by code point against BasicTokenizer.
    dropped = {0, 0xFFFD}
    dropped.update(code_points_by_category["Cc"], code_points_by_category["Cf"])
    dropped -= {ord("\t"), ord("\n"), ord("\r")}
    whitespace = {ord(" "), ord("\t"), ord("\n"), ord("\r")}
    whitespace.update(code_points_by_category["Zs"])
    # str.split() also splits on U+2028 and U+2029 (categories Zl, Zp), which _clean_text keeps.
    for name in ("Zl", "Zp", "Cc"):
        whitespace.update(cp for cp in code_points_by_category[name] if chr(cp).isspace())
    whitespace -= dropped | {ord(" ")}
    kept_delimiter = {
        cp
        for low, high in ((33, 47), (58, 64), (91, 96), (123, 126), *_CJK_RANGES)
        for cp in range(low, high + 1)
    }
    for name in ("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po"):
        kept_delimiter.update(code_points_by_category[name])

    # Python's final-sigma rule: a capital sigma preceded by a cased letter and not followed by
    # one, case-ignorable characters skipped on both sides. unicodedata does not expose the
    # Cased and Case_Ignorable properties, so they are read off str.lower() itself: "A" + c + Σ
    # ends in a final sigma iff c is case-ignorable or cased, " " + c + Σ iff c is cased and not
    # case-ignorable (a cased case-ignorable character is always skipped, so that is the only
    # cased set the rule reads). Unassigned and private-use code points have neither property.
    case_ignorable, cased = set(), set()
    for name, code_points in code_points_by_category.items():
        if name in ("Cn", "Co", "Cs"):
            continue
        for code_point in code_points:
            char = chr(code_point)
            if ("A" + char + _CAPITAL_SIGMA).lower()[-1] == "\u03c2":
                if (" " + char + _CAPITAL_SIGMA).lower()[-1] == "\u03c2":
                    cased.add(code_point)
                else:
                    case_ignorable.add(code_point)
    case_ignorable_run = _re2_class(sorted(case_ignorable)) + "*"
    final_sigma = (
        f"({_re2_class(sorted(cased))}{case_ignorable_run})\\x{{3A3}}"
        f"({case_ignorable_run}(?:{_re2_class(sorted(cased | case_ignorable), negate=True)}|$))"
    )
    classes = {
        "dropped": dropped,
        "other_whitespace": whitespace,
        "kept_delimiter": kept_delimiter,
        "nonspacing_mark": code_points_by_category["Mn"],
    }
    patterns = {name: _re2_class(sorted(members)) for name, members in classes.items()}
    patterns["final_sigma"] = final_sigma
    return patterns


# A preserved word as FastWordpieceBertTokenizer._mark_preserved_words writes it (group 1: the
# token without its brackets); U+FFFD cannot come from the text, step 2 of the pipeline drops it.
_PRESERVED_WORD_MARKED = "^\ufffd(.*)\ufffd$"


class FastWordpieceBertTokenizer(tf.Module):
    """`FullTokenizer` rebuilt from TensorFlow ops: same ids, usable in graphs, tf.data and exports.

    The pipeline repeats the original step by step, on whole strings instead of words:

    1. invalid UTF-8 is dropped (as `convert_to_unicode` decodes bytes with errors="ignore");
    2. `_clean_text`: NUL, U+FFFD and control/format characters (Cc, Cf but \\t \\n \\r) removed;
    3. uncased only: `str.lower()` via `tf.strings.lower(encoding="utf-8")` (ICU full case
       mapping), NFD via `tensorflow_text.normalize_utf8`, then category Mn removed;
    4. spaces put around each punctuation character and each CJK ideograph of the original's
       ranges, every whitespace character (Zs, \\t \\n \\r, U+2028, U+2029) turned into a space,
       and the text split on runs of spaces;
    5. words over `max_input_chars_per_word` characters (not bytes) become "[UNK]", the others go
       through `tensorflow_text.FastWordpieceTokenizer` (greedy longest match first, "##" suffixes,
       a word that cannot be covered becomes one "[UNK]").

    `tensorflow_text.BertTokenizer` is not used: its lower-casing is NFKC_Casefold, so it
    disagrees with the original on 65 of the 23,854 lines of the shared English corpus (U+2033
    becomes two U+2032, U+2011 becomes U+2010, superscript letters become letters, ...).

    Python 3.11 knows Unicode 14.0; TensorFlow 2.21 has RE2 tables of Unicode 15.0, ICU case data
    older than Unicode 14.0 and ICU normalization data of Unicode 16.0. To agree with the
    reference anyway, every character class is built from Python's `unicodedata`
    (`_character_classes`), and batches holding a capital sigma or a Unicode 14.0 capital take a
    slower exact path: final sigmas are decided with Python's rule before ICU lower-cases, and
    `_CAPITALS_UNKNOWN_TO_TF_LOWER` are mapped by table. Lower-casing the whole string instead of
    each whitespace-separated word is equivalent because the final sigma is the only context
    `str.lower()` reads, and its context stops at whitespace and CJK ideographs (neither cased nor
    case-ignorable). Tests compare the words of both tokenizers for every code point, alone and
    around sigmas, and the ids on the shared corpus, cased and uncased.

    With `preserve_unused_tokens` (the original's --preserve_unused_tokens), step 2 is followed by
    the original's test of each whitespace-separated word (after `_clean_text` and the spacing of
    CJK ideographs, before lower-casing): an `[unusedN]` of the vocabulary gets U+FFFD in place
    of its brackets, which steps 3 and 4 leave alone (it is no letter, mark, punctuation or space)
    and which the input cannot hold (step 2 removed it); after the split such a word gets its
    brackets back and WordPiece finds it whole in the vocabulary. Its characters are the same as
    without the option, so the offsets of `tokenize_words_with_offsets` hold as they are.

    Known difference from `FullTokenizer`, pinned by a test: NFD (uncased only) decomposes 20
    characters assigned in Unicode 16.0 that Python 3.11 does not know (U+105C9, U+105E4, U+11383,
    U+11385, U+1138E, U+11391, U+113C5, U+113C7, U+113C8, U+16121..U+16128, U+16D68..U+16D6A:
    Todhri, Tulu-Tigalari, Gurung Khema and Kirat Rai), and orders combining marks assigned after
    Unicode 14.0 by their combining class where Python sees unassigned starters (so "x" U+0897
    U+1D165 becomes "x" U+1D165 U+0897). Such a word differs as a string; its ids differ only if
    the vocabulary holds characters assigned after Unicode 14.0 (else both sides give one
    "[UNK]"), which no released BERT vocabulary does.

    Args:
      vocab_file: path of `vocab.txt`, one token a line (id = line number, as `load_vocab`), or
        a vocabulary already loaded by `load_vocab` (token -> id; `as_fast_tokenizer` passes a
        `FullTokenizer`'s).
      do_lower_case: True for uncased models, as for `FullTokenizer`.
      max_input_chars_per_word: longer words become "[UNK]" (the original's 200).
      name: name of the tf.Module.
      preserve_unused_tokens: as for `FullTokenizer`: each `[unusedN]` of the vocabulary written
        as a whitespace-separated word stays one token.

    Attributes:
      vocab_size: int, the number of ids of `vocab_file`: its lines, without empty ones at the
        end (`vocab_id_count`); the embedding table may have more rows.
      tokens_by_id: numpy object array [vocab_size] of str, the token of each id (as `FullTokenizer.inv_vocab`; an id that
        no word can produce, a line overridden by a later duplicate or an empty line, holds a
        placeholder).
      cls_id, sep_id, pad_id, mask_id, unk_id: int ids of "[CLS]", "[SEP]", "[PAD]", "[MASK]",
        "[UNK]"; reading one that the vocabulary lacks raises VocabularyError.
    """

    _UNK_TOKEN = "[UNK]"
    _SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]")

    def __init__(
        self,
        vocab_file: str | os.PathLike | Mapping[str, int],
        do_lower_case: bool = True,
        max_input_chars_per_word: int = 200,
        name: str | None = None,
        preserve_unused_tokens: bool = False,
    ):
        super().__init__(name=name)
        if isinstance(vocab_file, Mapping):
            self._vocab_file = "(a vocabulary given as a mapping)"
            vocab = vocab_file
        else:
            self._vocab_file = os.fspath(vocab_file)
            vocab = load_vocab(vocab_file)
        self.do_lower_case = do_lower_case
        self.max_input_chars_per_word = max_input_chars_per_word
        self.preserve_unused_tokens = preserve_unused_tokens
        self._preserved_word_pattern = (
            self._preserved_word_pattern_of(vocab) if preserve_unused_tokens else None
        )
        if self._UNK_TOKEN not in vocab:
            raise VocabularyError(
                f"{self._vocab_file} has no {self._UNK_TOKEN!r} line; the tokenizer emits it for "
                "words it cannot split, so the vocabulary must contain it."
            )
        self._special_ids = {
            token: vocab[token] for token in self._SPECIAL_TOKENS if token in vocab
        }
        self.vocab_size = vocab_id_count(vocab)
        tokens_by_id = self._wordpiece_vocab(vocab)
        # A numpy array, not a list: tf.Module would wrap a list for checkpoint tracking, which
        # slows every lookup of `convert_ids_to_tokens`.
        self.tokens_by_id = np.array(tokens_by_id, dtype=object)
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=tokens_by_id,
            suffix_indicator="##",
            # A UTF-8 character has at most 4 bytes, so this byte limit never cuts a word that
            # the character limit (applied in `tokenize`) lets through.
            max_bytes_per_word=4 * max_input_chars_per_word,
            token_out_type=tf.int32,
            unknown_token=self._UNK_TOKEN,
            no_pretokenization=True,
        )
        classes = _character_classes()
        self._dropped_pattern = classes["dropped"]
        self._nonspacing_mark_pattern = classes["nonspacing_mark"]
        self._other_whitespace_pattern = classes["other_whitespace"]
        self._kept_delimiter_pattern = classes["kept_delimiter"]
        self._final_sigma_pattern = classes["final_sigma"]
        capitals = [
            code_point
            for low, high in _CAPITALS_UNKNOWN_TO_TF_LOWER
            for code_point in range(low, high + 1)
        ]
        self._needs_exact_lower_pattern = (
            "(?s).*" + _re2_class(sorted([*capitals, ord(_CAPITAL_SIGMA)])) + ".*"
        )
        self._capital_code_points = tf.constant(capitals, tf.int32)
        self._lower_code_points = tf.constant(
            [ord(chr(code_point).lower()) for code_point in capitals], tf.int32
        )

    @property
    def cls_id(self) -> int:
        return self._special_id("[CLS]")

    @property
    def sep_id(self) -> int:
        return self._special_id("[SEP]")

    @property
    def pad_id(self) -> int:
        return self._special_id("[PAD]")

    @property
    def mask_id(self) -> int:
        return self._special_id("[MASK]")

    @property
    def unk_id(self) -> int:
        return self._special_id("[UNK]")

    def convert_ids_to_tokens(self, ids) -> list[str]:
        """The tokens of int `ids` (as `FullTokenizer.convert_ids_to_tokens` for the ids that
        tokenizing can produce)."""
        return self.tokens_by_id[np.asarray(ids, np.int64)].tolist()

    def tokenize_in_batches(
        self, texts: Sequence[str], batch_size: int = 50_000
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ids of each of many Python strings, tokenized `batch_size` strings per call.

        For the pipelines that need ids in numpy (SQuAD windows, tagged words, feature
        extraction): one call per batch instead of one per string, which would cost the fixed
        time of running the ops for every word.

        Returns:
          (ids, row_splits): int32 [total pieces] and int64 [len(texts) + 1]; the pieces of
          texts[i] are ids[row_splits[i]:row_splits[i + 1]] (none for a text that holds no word).
        """
        values, lengths = [], []
        for start in range(0, len(texts), batch_size):
            pieces = self.tokenize(list(texts[start : start + batch_size]))
            values.append(pieces.flat_values.numpy())
            lengths.append(pieces.row_lengths().numpy())
        ids = np.concatenate(values) if values else np.zeros([0], np.int32)
        row_lengths = np.concatenate(lengths) if lengths else np.zeros([0], np.int64)
        return ids, np.concatenate([[0], np.cumsum(row_lengths)]).astype(np.int64)

    @staticmethod
    def _preserved_word_pattern_of(vocab) -> str | None:
        """An RE2 pattern of the vocabulary's `[unusedN]` tokens (`is_preserved_token`) as
        words: a space or the text's start (group 1), the token without its brackets (group 2),
        a space or the text's end (group 3). None when the vocabulary has no such token."""
        names = sorted(
            re.escape(token[1:-1])
            for token in vocab
            if is_preserved_token(token, vocab, preserve_unused_tokens=True)
        )
        if not names:
            return None
        return "(^| )\\[(" + "|".join(names) + ")\\]( |$)"

    def _special_id(self, token: str) -> int:
        if token not in self._special_ids:
            # A vocab made by another tool: the packer needs [CLS] and [SEP], masking [MASK].
            raise VocabularyError(
                f"{self._vocab_file} has no {token!r} line; BERT's inputs need it (use the "
                "vocab.txt that was released with the checkpoint)"
            )
        return self._special_ids[token]

    @staticmethod
    def _wordpiece_vocab(vocab) -> list[str]:
        """The vocabulary as a list indexed by id, with unreachable lines filled in.

        Lines that `load_vocab` dropped (a token repeated later, whose later line wins) and empty
        lines can never be produced by the original; they get a placeholder with "[", which no
        word contains (it is punctuation), so that ids stay equal to line numbers.
        """
        tokens = [f"[unreachable line {index + 1}]" for index in range(vocab_id_count(vocab))]
        for token, index in vocab.items():
            if token:
                tokens[index] = token
        return tokens

    # The methods below branch only on Python values; AutoGraph would rewrite them (and the
    # tensorflow_text functions they call) for nothing but about a second of tracing time.
    @tf.autograph.experimental.do_not_convert
    def split_words(self, strings) -> tf.RaggedTensor:
        """The words of `BasicTokenizer.tokenize`, before WordPiece.

        Args:
          strings: [batch] tf.string, UTF-8 text (invalid bytes are dropped), or a list of
            Python str (valid UTF-8 once encoded, so the pass that drops invalid bytes, about
            a tenth of the time of `tokenize` on English text, is skipped: the same result).

        Returns:
          [batch, (words)] tf.string RaggedTensor.
        """
        python_text = isinstance(strings, list) and all(isinstance(s, str) for s in strings)
        strings = tf.convert_to_tensor(strings, dtype=tf.string)
        if strings.shape.rank is not None and strings.shape.rank != 1:
            raise ValueError(f"Expected strings of shape [batch], got shape {strings.shape}")
        strings = tf.ensure_shape(strings, [None])  # An unknown rank is checked when run.
        text = strings
        if not python_text:
            text = tf.strings.unicode_transcode(strings, "UTF-8", "UTF-8", errors="ignore")
        text = self._normalize(text)
        # Whitespace becomes spaces, punctuation and CJK ideographs get spaces around them (the
        # original's _run_split_on_punc and _tokenize_chinese_chars), then runs of spaces split:
        # 5x faster than tensorflow_text.regex_split with the same classes.
        text = tf.strings.regex_replace(text, self._other_whitespace_pattern, " ")
        text = tf.strings.regex_replace(text, self._kept_delimiter_pattern, " \\0 ")
        words = tf.strings.split(text)
        if self._preserved_word_pattern is None:
            return words
        # The preserved words marked by _normalize get their brackets back.
        return words.with_flat_values(
            tf.strings.regex_replace(words.flat_values, _PRESERVED_WORD_MARKED, "[\\1]")
        )

    @tf.autograph.experimental.do_not_convert
    def tokenize(self, strings) -> tf.RaggedTensor:
        """The ids of `FullTokenizer.tokenize` followed by `convert_tokens_to_ids`.

        Args:
          strings: [batch] tf.string, UTF-8 text (invalid bytes are dropped), or a list of
            Python str (`split_words`).

        Returns:
          [batch, (pieces)] int32 RaggedTensor of wordpiece ids.
        """
        return self.tokenize_words(strings).merge_dims(1, 2)

    @tf.autograph.experimental.do_not_convert
    def tokenize_words(self, strings) -> tf.RaggedTensor:
        """As `tokenize`, with the pieces grouped by word (the TF Hub preprocessor's `tokenize`).

        Args:
          strings: [batch] tf.string, UTF-8 text (invalid bytes are dropped), or a list of
            Python str (`split_words`).

        Returns:
          [batch, (words), (pieces)] int32 RaggedTensor of wordpiece ids.
        """
        words = self.split_words(strings)
        flat_words = words.flat_values
        flat_words = tf.where(self._too_long(flat_words), self._UNK_TOKEN, flat_words)
        return words.with_values(self._wordpiece.tokenize(flat_words))

    def _too_long(self, flat_words: tf.Tensor) -> tf.Tensor:
        """bool [num_words]: the words the original turns into "[UNK]" for their length."""
        # The original's limit counts characters; FastWordpieceTokenizer's counts bytes.
        return tf.strings.length(flat_words, unit="UTF8_CHAR") > self.max_input_chars_per_word

    @tf.autograph.experimental.do_not_convert
    def tokenize_words_with_offsets(self, strings):
        """As `tokenize_words`, with the bytes of the input each piece was made from.

        Args:
          strings: [batch] tf.string, UTF-8 text (invalid bytes are dropped).

        Returns:
          (pieces, starts, limits), each a [batch, (words), (pieces)] RaggedTensor: `pieces` the
          int32 ids of `tokenize_words`; `starts` and `limits` int64 byte offsets such that piece
          k of string i was made from `strings[i][starts[i][..][k]:limits[i][..][k]]`. A span
          also covers the characters the normalization removed right after it (a combining
          accent, a zero-width joiner), so the spans of a word's pieces tile it; a word longer
          than `max_input_chars_per_word` ("[UNK]") spans the whole word.

        How: lower-casing and NFD have no offset map in TensorFlow (tensorflow_text's
        `normalize_utf8_with_offsets_map` covers NFD alone), so each input character is
        normalized on its own. The normalization is a per-character map (the final sigma, the
        one contextual case, and the reordering of combining marks never change how many
        characters come out), so each character of the normalized text is traced back to the
        input character that produced it; without the whitespace, those characters are the
        normalized words' characters in order. The ids themselves come from the exact whole-string
        pipeline; the offsets from wordpiece's offsets within each normalized word.
        """
        strings = tf.convert_to_tensor(strings, dtype=tf.string)
        words = self.split_words(strings)  # Checks the shape.
        flat_words = words.flat_values
        too_long = self._too_long(flat_words)
        pieces, piece_starts, piece_limits = self._wordpiece.tokenize_with_offsets(
            tf.where(too_long, self._UNK_TOKEN, flat_words)
        )  # [num_words, (pieces)]; byte offsets within each normalized word.

        # Each input character with its byte span, normalized on its own.
        chars, char_starts, normalized = self._characters_normalized_one_by_one(strings)
        char_row = chars.value_rowids()
        char_starts = char_starts.flat_values
        char_limits = char_starts + tf.cast(tf.strings.length(chars.flat_values), tf.int64)
        outputs_per_char = normalized.row_lengths()  # 0 for a removed character.
        char_limits = self._limits_over_removed_chars(
            char_starts, char_limits, char_row, outputs_per_char > 0, chars.nrows()
        )

        # The normalized characters, each with the span of the input character it came from,
        # whitespace left out: the characters of the normalized words, laid end to end.
        normalized_chars = normalized.flat_values
        span_starts = tf.repeat(char_starts, outputs_per_char)
        span_limits = tf.repeat(char_limits, outputs_per_char)
        is_space = tf.logical_or(
            tf.equal(normalized_chars, " "),
            tf.strings.regex_full_match(normalized_chars, self._other_whitespace_pattern),
        )
        in_word = tf.logical_not(is_space)
        span_starts = tf.boolean_mask(span_starts, in_word)
        span_limits = tf.boolean_mask(span_limits, in_word)

        # Each normalized word's characters, in the same order: their byte starts on one axis
        # (the words' bytes laid end to end), so that a piece's byte offsets find its characters.
        word_bytes = tf.cast(tf.strings.length(flat_words), tf.int64)
        word_byte_base = tf.cumsum(word_bytes, exclusive=True)
        _, word_char_starts = tf.strings.unicode_split_with_offsets(flat_words, "UTF-8")
        chars_per_word = word_char_starts.row_lengths()
        char_byte_positions = word_char_starts.flat_values + tf.repeat(
            word_byte_base, chars_per_word
        )
        checked = tf.debugging.assert_equal(
            tf.size(span_starts, out_type=tf.int64),
            tf.size(char_byte_positions, out_type=tf.int64),
            message="tokenize_words_with_offsets: the characters normalized one by one differ "
            "in number from the normalized words; please report the input string",
        )
        with tf.control_dependencies([checked]):
            piece_word = pieces.value_rowids()
            base = tf.gather(word_byte_base, piece_word)
            first_char = tf.searchsorted(
                char_byte_positions, base + piece_starts.flat_values, out_type=tf.int64
            )
            last_char = (
                tf.searchsorted(
                    char_byte_positions, base + piece_limits.flat_values, out_type=tf.int64
                )
                - 1
            )
        # A too-long word became "[UNK]": its one piece spans all the word's characters.
        too_long = tf.gather(too_long, piece_word)
        word_first_char = tf.gather(tf.cumsum(chars_per_word, exclusive=True), piece_word)
        first_char = tf.where(too_long, word_first_char, first_char)
        last_char = tf.where(
            too_long, word_first_char + tf.gather(chars_per_word, piece_word) - 1, last_char
        )
        starts = pieces.with_flat_values(tf.gather(span_starts, first_char))
        limits = pieces.with_flat_values(tf.gather(span_limits, last_char))
        return words.with_values(pieces), words.with_values(starts), words.with_values(limits)

    def _characters_normalized_one_by_one(self, strings):
        """(chars, byte_starts, normalized): the characters of [batch] tf.string `strings`
        ([batch, (chars)] tf.string, invalid UTF-8 dropped), their int64 byte offsets in the
        input (same shape), and the characters each becomes alone through steps 2 and 3 of the
        pipeline ([batch * chars, (outputs)] tf.string; none for a removed character)."""
        chars, char_starts = tf.strings.unicode_split_with_offsets(
            strings, "UTF-8", errors="ignore"
        )
        normalized = tf.strings.unicode_split(self._normalize(chars.flat_values), "UTF-8")
        return chars, char_starts, normalized

    @tf.autograph.experimental.do_not_convert
    def word_characters_per_character(self, strings):
        """How many characters of the words of `split_words` each input character becomes:
        0 for a removed one (a control character, an accent stripped by an uncased model) and
        for whitespace, 1 for most, 2 or more where lower-casing or NFD expands it.

        Args:
          strings: [batch] tf.string, UTF-8 text (invalid bytes are dropped).

        Returns:
          (chars, byte_starts, counts): [batch, (chars)] RaggedTensors of the input characters
          (tf.string), their byte offsets (int64) and the counts (int64).
        """
        strings = tf.convert_to_tensor(strings, dtype=tf.string)
        chars, char_starts, normalized = self._characters_normalized_one_by_one(strings)
        is_space = tf.logical_or(
            tf.equal(normalized.flat_values, " "),
            tf.strings.regex_full_match(normalized.flat_values, self._other_whitespace_pattern),
        )
        counts = tf.math.unsorted_segment_sum(
            tf.cast(tf.logical_not(is_space), tf.int64),
            normalized.value_rowids(),
            normalized.nrows(),
        )
        return chars, char_starts, chars.with_flat_values(counts)

    @staticmethod
    def _limits_over_removed_chars(starts, limits, rows, kept, num_rows):
        """Each character's byte limit moved over the removed characters that follow it.

        Args: flat int64 [num_chars] `starts`, `limits` and `rows` (the string of each
        character, ascending), bool [num_chars] `kept` (the character survives normalization),
        int64 scalar `num_rows`. Returns int64 [num_chars]: the start of the next kept character
        of the same string, or the end of the string's last character when there is none.
        """
        kept_indices = tf.concat([tf.where(kept)[:, 0], [tf.size(kept, out_type=tf.int64)]], 0)
        # kept characters up to and including each one = the index of the next one in
        # kept_indices (the sentinel after the last stands for "none").
        following = tf.gather(kept_indices, tf.cumsum(tf.cast(kept, tf.int64)))
        padded_rows = tf.concat([rows, [-1]], 0)
        padded_starts = tf.concat([starts, [0]], 0)
        same_string = tf.equal(tf.gather(padded_rows, following), rows)
        string_ends = tf.math.unsorted_segment_max(limits, rows, num_rows)
        return tf.where(
            same_string, tf.gather(padded_starts, following), tf.gather(string_ends, rows)
        )

    @tf.autograph.experimental.do_not_convert
    def _normalize(self, text: tf.Tensor) -> tf.Tensor:
        """Steps 2 and 3 of the pipeline on [batch] tf.string valid UTF-8; returns the same shape."""
        text = tf.strings.regex_replace(text, self._dropped_pattern, "")
        if self._preserved_word_pattern is not None:
            text = self._mark_preserved_words(text)
        if self.do_lower_case:
            text = self._lower(text)
            text = tf_text.normalize_utf8(text, "NFD")
            text = tf.strings.regex_replace(text, self._nonspacing_mark_pattern, "")
        return text

    def _mark_preserved_words(self, text: tf.Tensor) -> tf.Tensor:
        """[batch] tf.string after step 2 -> the same, each preserved `[unusedN]` word (words as
        the original's whitespace split sees them after _tokenize_chinese_chars) written
        U+FFFD unusedN U+FFFD, and spaces in place of whitespace (split_words' later passes do
        the same, so nothing else changes)."""
        text = tf.strings.regex_replace(text, self._other_whitespace_pattern, " ")
        text = tf.strings.regex_replace(text, CJK_CHARACTER_CLASS, " \\0 ")
        # RE2 has no lookaround: with every space doubled, two adjacent words each have a
        # delimiting space of their own to match.
        text = tf.strings.regex_replace(text, " ", "  ")
        return tf.strings.regex_replace(text, self._preserved_word_pattern, "\\1\ufffd\\2\ufffd\\3")

    @tf.autograph.experimental.do_not_convert
    def _lower(self, text: tf.Tensor) -> tf.Tensor:
        """Python's `str.lower()` of [batch] tf.string `text`; returns [batch] tf.string."""

        def exact_lower():
            exact = tf.strings.regex_replace(text, self._final_sigma_pattern, "\\1\u03c2\\2")
            exact = tf.strings.regex_replace(exact, _CAPITAL_SIGMA, "\u03c3")
            code_points = tf.strings.unicode_decode(exact, "UTF-8")
            flat = code_points.flat_values
            index = tf.minimum(
                tf.searchsorted(self._capital_code_points, flat),
                tf.size(self._capital_code_points) - 1,
            )
            is_capital = tf.gather(self._capital_code_points, index) == flat
            flat = tf.where(is_capital, tf.gather(self._lower_code_points, index), flat)
            exact = tf.strings.unicode_encode(code_points.with_flat_values(flat), "UTF-8")
            return tf.strings.lower(exact, encoding="utf-8")

        # The exact path costs a decode/encode round trip and two more regex passes; only batches
        # with a capital sigma or a Unicode 14.0 capital need it.
        needs_exact = tf.reduce_any(
            tf.strings.regex_full_match(text, self._needs_exact_lower_pattern)
        )
        return tf.cond(needs_exact, exact_lower, lambda: tf.strings.lower(text, encoding="utf-8"))


# FullTokenizer -> (its settings, the FastWordpieceBertTokenizer over its vocabulary); weak so
# that the cache does not keep tokenizers alive.
_FAST_TWINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def as_fast_tokenizer(
    tokenizer: FastWordpieceBertTokenizer | FullTokenizer,
) -> FastWordpieceBertTokenizer:
    """The tokenizer a pipeline runs: `tokenizer` itself, or for a `FullTokenizer` (the
    original's API, which pipelines accept) a FastWordpieceBertTokenizer over the same
    vocabulary, casing, word length limit and preserve_unused_tokens, made once per
    FullTokenizer.

    Raises:
      TypeError: `tokenizer` is neither.
    """
    if isinstance(tokenizer, FastWordpieceBertTokenizer):
        return tokenizer
    if not isinstance(tokenizer, FullTokenizer):
        raise TypeError(
            f"expected a FastWordpieceBertTokenizer or a FullTokenizer, got {type(tokenizer)}"
        )
    settings = (
        tokenizer.basic_tokenizer.do_lower_case,
        tokenizer.wordpiece_tokenizer.max_input_chars_per_word,
        tokenizer.wordpiece_tokenizer.unk_token,
        tokenizer.basic_tokenizer.preserve_unused_tokens,
    )
    cached = _FAST_TWINS.get(tokenizer)
    if cached is None or cached[0] != settings:
        if settings[2] != FastWordpieceBertTokenizer._UNK_TOKEN:
            raise ValueError(
                f"FullTokenizer with unk_token {settings[2]!r}: the fast tokenizer emits "
                f"{FastWordpieceBertTokenizer._UNK_TOKEN!r}"
            )
        fast = FastWordpieceBertTokenizer(
            tokenizer.vocab,
            do_lower_case=settings[0],
            max_input_chars_per_word=settings[1],
            preserve_unused_tokens=settings[3],
        )
        cached = _FAST_TWINS[tokenizer] = (settings, fast)
    return cached[1]
