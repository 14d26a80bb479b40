"""Tests of the original's --preserve_unused_tokens in official_bert/tokenization.py.

The reference is the original google-research/bert `tokenization.py` of the PyPI release
(bert-tensorflow 1.0.4) with `--preserve_unused_tokens=true`: the expected tokens below were
printed by its `FullTokenizer` over PRESERVE_VOCAB, uncased and cased. `FullTokenizer` and
`FastWordpieceBertTokenizer` (ids, words, offsets) must both give them.
"""

from pathlib import Path

import pytest
import tensorflow as tf

from official_bert.tokenization import (
    BasicTokenizer,
    FastWordpieceBertTokenizer,
    FullTokenizer,
    as_fast_tokenizer,
    load_vocab,
)
from tests.test_tokenization import write_vocab

FIXTURE_VOCAB = Path(__file__).resolve().parent / "fixtures" / "orig_tiny_v1000" / "vocab.txt"

# [unused5], [unused8] and [unused999] are absent; [UNUSED5] is not of the [unusedN] form;
# [unused\u0661] is (the original's \\d is any Unicode digit).
PRESERVE_VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "[unused0]",
    "[unused1]",
    "[unused2]",
    "[unused3]",
    "[unused4]",
    "[unused7]",
    "[unused10]",
    "[unused\u0661]",
    "[UNUSED5]",
    "[",
    "]",
    "unused",
    "UNUSED",
    "##1",
    "##9",
    "##0",
    "##5",
    "##\uff11",
    "hello",
    "Hello",
    "world",
    "a",
    "b",
    "x",
    "cafe",
    "caf",
    "##\xe9",
    "\xe9",
    "\u0301",
    "\u4e2d",
    "\u6587",
    ".",
    ",",
    "(",
    ")",
    "\u03c3\u03b1\u03c2",
    "\u03a3\u0391\u03a3",
    "\u03bf\u03b4\u03bf\u03c2",
    "\u039f\u0394\u039f\u03a3",
    "##a",
    "##b",
]

# (text, uncased tokens, cased tokens), from the original with --preserve_unused_tokens=true.
# Among them: words next to each other, around CJK ideographs, after other whitespace (U+3000,
# U+00A0, tab), a zero-width space inside (removed before the test), uppercase (tested before
# lower-casing), an accent after it, not whitespace-delimited ("a[unused1]", "[unused1]a"),
# leading zeros, fullwidth digits, final sigmas around it.
ORIGINAL_PRESERVED = [
    ("[unused1]", ["[unused1]"], ["[unused1]"]),
    ("hello [unused1] world", ["hello", "[unused1]", "world"], ["hello", "[unused1]", "world"]),
    ("[unused1] [unused2]", ["[unused1]", "[unused2]"], ["[unused1]", "[unused2]"]),
    (
        "[unused1][unused2]",
        ["[", "unused", "##1", "]", "[", "[UNK]", "]"],
        ["[", "unused", "##1", "]", "[", "[UNK]", "]"],
    ),
    ("[UNUSED1] Hello", ["[", "unused", "##1", "]", "hello"], ["[", "UNUSED", "##1", "]", "Hello"]),
    ("a[unused1] b", ["a", "[", "unused", "##1", "]", "b"], ["a", "[", "unused", "##1", "]", "b"]),
    ("[unused1]a", ["[", "unused", "##1", "]", "a"], ["[", "unused", "##1", "]", "a"]),
    (
        "[unused999] [unused5]",
        ["[", "unused", "##9", "##9", "##9", "]", "[", "unused", "##5", "]"],
        ["[", "unused", "##9", "##9", "##9", "]", "[", "unused", "##5", "]"],
    ),
    (
        "\u4e2d[unused3]\u6587 [unused4]\u4e2d",
        ["\u4e2d", "[unused3]", "\u6587", "[unused4]", "\u4e2d"],
        ["\u4e2d", "[unused3]", "\u6587", "[unused4]", "\u4e2d"],
    ),
    (
        "H\xe9llo [unused7]\t[unused8]\n",
        ["hello", "[unused7]", "[", "[UNK]", "]"],
        ["[UNK]", "[unused7]", "[", "[UNK]", "]"],
    ),
    (
        "[unused1]. (x) [unused2],",
        ["[", "unused", "##1", "]", ".", "(", "x", ")", "[", "[UNK]", "]", ","],
        ["[", "unused", "##1", "]", ".", "(", "x", ")", "[", "[UNK]", "]", ","],
    ),
    ("  [unused10]  ", ["[unused10]"], ["[unused10]"]),
    (
        "[unu\u200bsed1] \xa0[unused2]\u3000[unused3]",
        ["[unused1]", "[unused2]", "[unused3]"],
        ["[unused1]", "[unused2]", "[unused3]"],
    ),
    (
        "[unused1]\u0301 caf\xe9",
        ["[", "unused", "##1", "]", "cafe"],
        ["[", "unused", "##1", "]", "\u0301", "caf", "##\xe9"],
    ),
    (
        "\u03a3\u0391\u03a3 [unused1] \u039f\u0394\u039f\u03a3",
        ["\u03c3\u03b1\u03c2", "[unused1]", "\u03bf\u03b4\u03bf\u03c2"],
        ["\u03a3\u0391\u03a3", "[unused1]", "\u039f\u0394\u039f\u03a3"],
    ),
    (
        "[unused0001] [unused01]",
        ["[", "unused", "##0", "##0", "##0", "##1", "]", "[", "unused", "##0", "##1", "]"],
        ["[", "unused", "##0", "##0", "##0", "##1", "]", "[", "unused", "##0", "##1", "]"],
    ),
    (
        "[[unused1]] [unused1",
        ["[", "[", "unused", "##1", "]", "]", "[", "unused", "##1"],
        ["[", "[", "unused", "##1", "]", "]", "[", "unused", "##1"],
    ),
    (
        "[unused\uff11] [unused\uff11]",
        ["[", "unused", "##\uff11", "]", "[", "unused", "##\uff11", "]"],
        ["[", "unused", "##\uff11", "]", "[", "unused", "##\uff11", "]"],
    ),
    (
        "[unused\u0661] [UNUSED5] [unused5]",
        ["[unused\u0661]", "[", "unused", "##5", "]", "[", "unused", "##5", "]"],
        ["[unused\u0661]", "[", "UNUSED", "##5", "]", "[", "unused", "##5", "]"],
    ),
    (
        "Hello\u3000[unused0]\xa0world",
        ["hello", "[unused0]", "world"],
        ["Hello", "[unused0]", "world"],
    ),
    (
        "x[unused2]x [unused3]",
        ["x", "[", "[UNK]", "]", "x", "[unused3]"],
        ["x", "[", "[UNK]", "]", "x", "[unused3]"],
    ),
]


@pytest.fixture(scope="module")
def preserve_vocab_file(tmp_path_factory):
    return write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt", PRESERVE_VOCAB)


@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_full_tokenizer_preserves_as_the_original(preserve_vocab_file, do_lower_case):
    tokenizer = FullTokenizer(preserve_vocab_file, do_lower_case, preserve_unused_tokens=True)
    for text, uncased, cased in ORIGINAL_PRESERVED:
        assert tokenizer.tokenize(text) == (uncased if do_lower_case else cased), text


@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_fast_tokenizer_preserves_as_the_original(preserve_vocab_file, do_lower_case):
    fast = FastWordpieceBertTokenizer(
        preserve_vocab_file, do_lower_case, preserve_unused_tokens=True
    )
    texts = [text for text, _, _ in ORIGINAL_PRESERVED]
    expected = [uncased if do_lower_case else cased for _, uncased, cased in ORIGINAL_PRESERVED]
    ids = fast.tokenize(texts).to_list()
    assert [fast.convert_ids_to_tokens(row) for row in ids] == expected
    # The bytes each piece came from: a preserved token spans itself.
    pieces, starts, limits = fast.tokenize_words_with_offsets(tf.constant(texts))
    assert pieces.merge_dims(1, 2).to_list() == ids
    # The characters each input character becomes are those without the option.
    plain = FastWordpieceBertTokenizer(preserve_vocab_file, do_lower_case)
    assert (
        fast.word_characters_per_character(texts)[2].to_list()
        == plain.word_characters_per_character(texts)[2].to_list()
    )
    vocab = load_vocab(preserve_vocab_file)
    for text, row, row_starts, row_limits in zip(
        texts,
        ids,
        starts.merge_dims(1, 2).to_list(),
        limits.merge_dims(1, 2).to_list(),
        strict=True,
    ):
        data = text.encode("utf-8")
        for piece, start, limit in zip(
            fast.convert_ids_to_tokens(row), row_starts, row_limits, strict=True
        ):
            if piece.startswith("[unused"):
                assert data[start:limit].decode("utf-8").replace("\u200b", "") == piece
        assert fast.split_words([text]).to_list()[0] == [
            word.encode("utf-8")
            for word in BasicTokenizer(do_lower_case, vocab, True).tokenize(text)
        ]


def test_off_by_default_as_the_original(preserve_vocab_file):
    text = "hello [unused1] world"
    split = ["hello", "[", "unused", "##1", "]", "world"]
    assert FullTokenizer(preserve_vocab_file).tokenize(text) == split
    fast = FastWordpieceBertTokenizer(preserve_vocab_file)
    assert fast.convert_ids_to_tokens(fast.tokenize([text]).to_list()[0]) == split


def test_full_tokenizers_fast_twin_preserves(preserve_vocab_file):
    full = FullTokenizer(preserve_vocab_file, preserve_unused_tokens=True)
    fast = as_fast_tokenizer(full)
    assert fast.preserve_unused_tokens
    assert fast.convert_ids_to_tokens(fast.tokenize(["[unused2]"]).to_list()[0]) == ["[unused2]"]


def test_a_released_size_vocabulary_preserves_each_unused_token():
    # 994 [unusedN] tokens, as in Google's uncased vocabularies: one RE2 alternation of them all.
    fast = FastWordpieceBertTokenizer(FIXTURE_VOCAB, preserve_unused_tokens=True)
    vocab = load_vocab(FIXTURE_VOCAB)
    unused = [token for token in vocab if token.startswith("[unused")]
    assert len(unused) == 994
    ids = fast.tokenize([" ".join(unused), "x " + "  ".join(reversed(unused))]).to_list()
    assert ids[0] == [vocab[token] for token in unused]
    assert ids[1][1:] == [vocab[token] for token in reversed(unused)]
