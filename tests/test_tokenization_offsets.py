"""Tests of `FastWordpieceBertTokenizer.tokenize_words_with_offsets`.

The ids must be those of `tokenize_words`; the offsets must point at the bytes of the input
each piece was made from, checked by re-tokenizing those bytes with the reference
`BasicTokenizer` (a span normalizes to its word or piece), over the hard cases of
test_tokenization.py, invalid UTF-8 and the shared English corpus, cased and uncased.
"""

import pytest
import tensorflow as tf

from official_bert.tokenization import BasicTokenizer, FastWordpieceBertTokenizer, load_vocab
from tests.test_tokenization import (
    HARD_CASES,
    ORIGINAL_TEST_VOCAB,
    corpus_lines,
    write_vocab,
)


@pytest.fixture(scope="module")
def small_vocab_file(tmp_path_factory):
    return write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt", ORIGINAL_TEST_VOCAB)


def fold_sigma(words: list[str]) -> list[str]:
    # Whether a sigma is final depends on what follows it: a span cut out of its text can lower
    # it to the other form.
    return [word.replace("\u03c2", "\u03c3") for word in words]


def check_offsets(tokenizer: FastWordpieceBertTokenizer, vocab_file, texts) -> int:
    """Asserts every property of the offsets of `texts`; returns the number of pieces checked."""
    encoded = [text.encode("utf-8") if isinstance(text, str) else text for text in texts]
    inputs = tf.constant(encoded, tf.string)
    ids, starts, limits = tokenizer.tokenize_words_with_offsets(inputs)
    assert ids.to_list() == tokenizer.tokenize_words(inputs).to_list()
    assert starts.dtype == limits.dtype == tf.int64
    words = tokenizer.split_words(inputs).to_list()
    inverse_vocab = {index: token for token, index in load_vocab(vocab_file).items()}
    basic = BasicTokenizer(tokenizer.do_lower_case)
    checked = 0
    for text, row_ids, row_starts, row_limits, row_words in zip(
        encoded, ids.to_list(), starts.to_list(), limits.to_list(), words, strict=True
    ):
        previous_start = previous_limit = 0
        for word_ids, word_starts, word_limits, word in zip(
            row_ids, row_starts, row_limits, row_words, strict=True
        ):
            assert len(word_ids) == len(word_starts) == len(word_limits) >= 1
            # The word's span re-tokenizes to exactly that word.
            word_span = text[word_starts[0] : word_limits[-1]]
            got = fold_sigma(basic.tokenize(word_span))
            assert got == fold_sigma([word.decode("utf-8")]), (text, word, got)
            for k, (piece, start, limit) in enumerate(
                zip(word_ids, word_starts, word_limits, strict=True)
            ):
                assert 0 <= start < limit <= len(text), (text, word, k)
                # In order, not overlapping, except pieces from one input character.
                assert start >= previous_limit or (start, limit) == (previous_start, previous_limit)
                previous_start, previous_limit = start, limit
                token = inverse_vocab[piece]
                if token == "[UNK]":
                    continue
                # A piece that ends inside one input character (a Hangul syllable split into
                # jamo) shares that character's span with its neighbour; the others re-tokenize
                # to their own text.
                shared = (k > 0 and word_limits[k - 1] > start) or (
                    k + 1 < len(word_ids) and word_starts[k + 1] < limit
                )
                if not shared:
                    got = fold_sigma(basic.tokenize(text[start:limit]))
                    assert got == fold_sigma([token.removeprefix("##")]), (text, token, got)
                checked += 1
    return checked


@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_offsets_of_hard_cases(small_vocab_file, do_lower_case):
    tokenizer = FastWordpieceBertTokenizer(small_vocab_file, do_lower_case=do_lower_case)
    texts = list(HARD_CASES.values())
    # Invalid UTF-8 is dropped; the offsets still index the bytes as given.
    texts += [b"caf\xc3\xa9 \xff wa\xe2\x82nt", b"\xc0\xafun\xed\xa0\x80want", b"\xf0\x9f\x98"]
    check_offsets(tokenizer, small_vocab_file, texts)


@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_offsets_of_hard_cases_real_vocab(minilm_dir, do_lower_case):
    vocab_file = minilm_dir / "vocab.txt"
    tokenizer = FastWordpieceBertTokenizer(vocab_file, do_lower_case=do_lower_case)
    assert check_offsets(tokenizer, vocab_file, list(HARD_CASES.values())) > 300


def test_offsets_golden(small_vocab_file):
    tokenizer = FastWordpieceBertTokenizer(small_vocab_file, do_lower_case=True)
    # "unwanted" -> un ##want ##ed; "RUNNING" -> runn ##ing; the decomposed accent of "e\u0301"
    # and the zero-width joiner are covered by the piece before them.
    text = "UNwant\u00e9d,  RUN\u200dNING e\u0301"
    ids, starts, limits = tokenizer.tokenize_words_with_offsets(tf.constant([text]))
    encoded = text.encode("utf-8")
    spans = [
        [encoded[a:b] for a, b in zip(s, e, strict=True)]
        for s, e in zip(starts[0], limits[0], strict=True)
    ]
    assert spans == [
        [b"UN", b"want", b"\xc3\xa9d"],
        [b","],
        [b"RUN\xe2\x80\x8dN", b"ING"],
        [b"e\xcc\x81"],
    ]
    assert ids.to_list() == [[[7, 4, 5], [10], [8, 9], [0]]]


def test_too_long_word_spans_the_word(small_vocab_file):
    tokenizer = FastWordpieceBertTokenizer(small_vocab_file, max_input_chars_per_word=5)
    _, starts, limits = tokenizer.tokenize_words_with_offsets(tf.constant(["ab \u00e9\u00e9xxxx!"]))
    assert starts.to_list() == [[[0], [3], [11]]]
    assert limits.to_list() == [[[2], [11], [12]]]


def test_offsets_in_a_dataset_map_and_empty_batches(small_vocab_file):
    tokenizer = FastWordpieceBertTokenizer(small_vocab_file)
    dataset = tf.data.Dataset.from_tensor_slices(["unwanted running", "", "  "]).batch(3)
    dataset = dataset.map(lambda text: tokenizer.tokenize_words_with_offsets(text)[1:])
    starts, limits = next(iter(dataset))
    assert starts.to_list() == [[[0, 2, 6], [9, 13]], [], []]
    assert limits.to_list() == [[[2, 6, 8], [13, 16]], [], []]
    ids, starts, _ = tokenizer.tokenize_words_with_offsets(tf.constant([], tf.string))
    assert ids.shape[0] == 0 and starts.shape[0] == 0


@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_offsets_on_shared_corpus(minilm_dir, do_lower_case):
    # 500 lines: about 12,000 pieces, each checked in Python (14 s on a slow 2-core machine).
    lines = corpus_lines()[:500]
    vocab_file = minilm_dir / "vocab.txt"
    tokenizer = FastWordpieceBertTokenizer(vocab_file, do_lower_case=do_lower_case)
    assert check_offsets(tokenizer, vocab_file, lines) > 10_000


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_word_characters_per_character_are_basic_tokenizers(small_vocab_file, do_lower_case):
    """Each character alone through the original BasicTokenizer: the characters of its words
    (0 for whitespace, removed characters and stripped accents; 3 jamo for a Hangul syllable
    under NFD; 1 for a capital I with dot, whose lower-case dot is stripped)."""
    tokenizer = FastWordpieceBertTokenizer(small_vocab_file, do_lower_case=do_lower_case)
    text = (
        "aÉ\u0301 \u00a0\u00ad\u200b\t\u2028x\u0130\u00df\ud55c\u4e2d,\u0007\ufffd\U0001f600\u202f"
    )
    chars, byte_starts, counts = tokenizer.word_characters_per_character([text, ""])
    assert [c.decode() for c in chars.to_list()[0]] == list(text)
    assert byte_starts.to_list()[0] == [len(text[:i].encode()) for i in range(len(text))]
    expected = [
        len("".join(BasicTokenizer(do_lower_case=do_lower_case).tokenize(char))) for char in text
    ]
    assert counts.to_list() == [expected, []]
    assert expected.count(0) >= 8 and (3 in expected) == do_lower_case
