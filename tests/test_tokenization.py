"""Tests of official_bert/tokenization.py.

The reference is the original google-research/bert `tokenization.py` (and its
`tokenization_test.py`, whose vectors are repeated here); `FullTokenizer` must reproduce it, and
`FastWordpieceBertTokenizer` must give the same ids as `FullTokenizer`.
"""

import collections
import json
import sys
import unicodedata
from pathlib import Path

import pytest
import tensorflow as tf

from official_bert import tokenization
from official_bert.tokenization import (
    BasicTokenizer,
    FastWordpieceBertTokenizer,
    FullTokenizer,
    VocabularyError,
    WordpieceTokenizer,
    load_vocab,
    vocab_id_count,
)

SHARED_TEXT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "text"

# The vocabulary of the original tokenization_test.py, plus "," as in its FullTokenizer test.
ORIGINAL_TEST_VOCAB = [
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "want",
    "##want",
    "##ed",
    "wa",
    "un",
    "runn",
    "##ing",
    ",",
]

# The 20 code points that TensorFlow's NFD (Unicode 16.0) decomposes and Python 3.11's
# (Unicode 14.0) does not know; see the FastWordpieceBertTokenizer docstring.
NFD_NEWER_THAN_PYTHON = {
    0x105C9,
    0x105E4,
    0x11383,
    0x11385,
    0x1138E,
    0x11391,
    0x113C5,
    0x113C7,
    0x113C8,
    *range(0x16121, 0x16129),
    *range(0x16D68, 0x16D6B),
}


def write_vocab(path: Path, tokens) -> Path:
    path.write_text("".join(token + "\n" for token in tokens), encoding="utf-8")
    return path


def fast_words(tokenizer: FastWordpieceBertTokenizer, texts) -> list[list[str]]:
    encoded = [text.encode("utf-8") if isinstance(text, str) else text for text in texts]
    words = tokenizer.split_words(tf.constant(encoded, tf.string)).to_list()
    return [[word.decode("utf-8") for word in row] for row in words]


def fast_ids(tokenizer: FastWordpieceBertTokenizer, texts) -> list[list[int]]:
    encoded = [text.encode("utf-8") if isinstance(text, str) else text for text in texts]
    return tokenizer.tokenize(tf.constant(encoded, tf.string)).to_list()


def reference_ids(tokenizer: FullTokenizer, text) -> list[int]:
    return tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))


# === Fixtures ===


@pytest.fixture(scope="module")
def original_vocab_file(tmp_path_factory):
    return write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt", ORIGINAL_TEST_VOCAB)


@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def small_pair(request, original_vocab_file):
    """(FullTokenizer, FastWordpieceBertTokenizer) on the original test vocabulary."""
    return (
        FullTokenizer(original_vocab_file, do_lower_case=request.param),
        FastWordpieceBertTokenizer(original_vocab_file, do_lower_case=request.param),
    )


@pytest.fixture(scope="module")
def bert_vocab_file(minilm_dir):
    """The real bert-base-uncased vocabulary (30522 lines) shipped with all-MiniLM-L6-v2."""
    return minilm_dir / "vocab.txt"


@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def bert_pair(request, bert_vocab_file):
    """(FullTokenizer, FastWordpieceBertTokenizer) on bert-base-uncased's vocabulary."""
    return (
        FullTokenizer(bert_vocab_file, do_lower_case=request.param),
        FastWordpieceBertTokenizer(bert_vocab_file, do_lower_case=request.param),
    )


# === The original tokenization_test.py ===


def test_basic_tokenizer_lower():
    tokenizer = BasicTokenizer(do_lower_case=True)
    assert tokenizer.tokenize(" \tHeLLo!how  \n Are yoU?  ") == [
        "hello",
        "!",
        "how",
        "are",
        "you",
        "?",
    ]
    assert tokenizer.tokenize("H\u00e9llo") == ["hello"]


def test_basic_tokenizer_no_lower():
    tokenizer = BasicTokenizer(do_lower_case=False)
    assert tokenizer.tokenize(" \tHeLLo!how  \n Are yoU?  ") == [
        "HeLLo",
        "!",
        "how",
        "Are",
        "yoU",
        "?",
    ]


def test_chinese():
    assert BasicTokenizer().tokenize("ah\u535a\u63a8zz") == ["ah", "\u535a", "\u63a8", "zz"]


def test_wordpiece_tokenizer():
    vocab = {token: index for index, token in enumerate(ORIGINAL_TEST_VOCAB[:10])}
    tokenizer = WordpieceTokenizer(vocab=vocab)
    assert tokenizer.tokenize("") == []
    assert tokenizer.tokenize("unwanted running") == ["un", "##want", "##ed", "runn", "##ing"]
    assert tokenizer.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]


def test_full_tokenizer(original_vocab_file):
    tokenizer = FullTokenizer(original_vocab_file)
    tokens = tokenizer.tokenize("UNwant\u00e9d,running")
    assert tokens == ["un", "##want", "##ed", ",", "runn", "##ing"]
    assert tokenizer.convert_tokens_to_ids(tokens) == [7, 4, 5, 10, 8, 9]
    assert tokenizer.convert_ids_to_tokens([7, 4, 5, 10, 8, 9]) == tokens


def test_convert_tokens_to_ids_module_functions():
    vocab = {token: index for index, token in enumerate(ORIGINAL_TEST_VOCAB[:10])}
    tokens = ["un", "##want", "##ed", "runn", "##ing"]
    assert tokenization.convert_tokens_to_ids(vocab, tokens) == [7, 4, 5, 8, 9]
    inverse = {index: token for token, index in vocab.items()}
    assert tokenization.convert_ids_to_tokens(inverse, [7, 4, 5, 8, 9]) == tokens


def test_character_predicates():
    for char in (" ", "\t", "\r", "\n", "\u00a0"):
        assert tokenization._is_whitespace(char)
    for char in ("A", "-"):
        assert not tokenization._is_whitespace(char)
    assert tokenization._is_control("\u0005")
    for char in ("A", " ", "\t", "\r", "\U0001f4a9"):
        assert not tokenization._is_control(char)
    for char in ("-", "$", "`", "."):
        assert tokenization._is_punctuation(char)
    for char in ("A", " "):
        assert not tokenization._is_punctuation(char)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("UNwant\u00e9d,running", [7, 4, 5, 10, 8, 9]),
        ("unwanted running", [7, 4, 5, 8, 9]),
        ("unwantedX running", [0, 8, 9]),
        ("", []),
    ],
)
def test_fast_tokenizer_on_original_vectors(original_vocab_file, text, expected):
    fast = FastWordpieceBertTokenizer(original_vocab_file, do_lower_case=True)
    assert fast_ids(fast, [text]) == [expected]


def test_fast_split_words_on_original_vectors(original_vocab_file):
    texts = [" \tHeLLo!how  \n Are yoU?  ", "H\u00e9llo", "ah\u535a\u63a8zz"]
    lower = FastWordpieceBertTokenizer(original_vocab_file, do_lower_case=True)
    cased = FastWordpieceBertTokenizer(original_vocab_file, do_lower_case=False)
    assert fast_words(lower, texts) == [
        ["hello", "!", "how", "are", "you", "?"],
        ["hello"],
        ["ah", "\u535a", "\u63a8", "zz"],
    ]
    assert fast_words(cased, texts[:1]) == [["HeLLo", "!", "how", "Are", "yoU", "?"]]


# === Errors and vocabulary files ===


def test_load_vocab_missing_file_names_the_path(tmp_path):
    missing = tmp_path / "no_such_dir" / "vocab.txt"
    with pytest.raises(FileNotFoundError, match="no_such_dir"):
        tokenization.load_vocab(missing)
    with pytest.raises(FileNotFoundError, match="no_such_dir"):
        FullTokenizer(missing)


def test_load_vocab_keeps_line_numbers_as_the_original(tmp_path):
    # Lines are stripped (so "\r\n" endings and blank lines work as in the original readline()
    # loop) and a repeated token keeps its last line.
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"[UNK]\r\n  a  \n\nb\na\n\xe4\xb8\xad\nlast-without-newline")
    vocab = tokenization.load_vocab(path)
    assert isinstance(vocab, collections.OrderedDict)
    assert vocab == {"[UNK]": 0, "a": 4, "": 2, "b": 3, "\u4e2d": 5, "last-without-newline": 6}


def test_load_vocab_invalid_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"[UNK]\nok\nbad\xff\n")
    with pytest.raises(ValueError, match=r"vocab\.txt, line 3: not valid UTF-8"):
        tokenization.load_vocab(path)


def test_convert_errors_name_the_missing_item(original_vocab_file):
    tokenizer = FullTokenizer(original_vocab_file)
    with pytest.raises(KeyError, match="'nope' is not in the vocabulary"):
        tokenizer.convert_tokens_to_ids(["un", "nope"])
    with pytest.raises(KeyError, match="12345 is not in the vocabulary"):
        tokenizer.convert_ids_to_tokens([7, 12345])


def test_convert_to_unicode():
    assert tokenization.convert_to_unicode("h\u00e9") == "h\u00e9"
    assert tokenization.convert_to_unicode(b"h\xc3\xa9\xff") == "h\u00e9"
    with pytest.raises(ValueError, match="Unsupported string type: int"):
        tokenization.convert_to_unicode(3)


@pytest.mark.parametrize(
    "do_lower_case, init_checkpoint, flag_to_pass",
    [
        (False, "/models/uncased_L-12_H-768_A-12/bert_model.ckpt", "True"),
        (False, "gs://bucket/uncased_L-24_H-1024_A-16/bert_model.ckpt", "True"),
        (False, "multilingual_L-12_H-768_A-12/bert_model.ckpt", "True"),
        (False, "/x/chinese_L-12_H-768_A-12/bert_model.ckpt.index", "True"),
        (True, "/models/cased_L-12_H-768_A-12/bert_model.ckpt", "False"),
        (True, "/models/cased_L-24_H-1024_A-16/bert_model.ckpt", "False"),
        (True, "/models/multi_cased_L-12_H-768_A-12/bert_model.ckpt", "False"),
    ],
)
def test_validate_case_rejects_mismatch(do_lower_case, init_checkpoint, flag_to_pass):
    model_name = init_checkpoint.split("/")[-2]
    with pytest.raises(ValueError) as error:
        tokenization.validate_case_matches_checkpoint(do_lower_case, init_checkpoint)
    message = str(error.value)
    assert model_name in message
    assert f"You passed in `--do_lower_case={do_lower_case}`" in message
    assert f"should pass in `--do_lower_case={flag_to_pass}`" in message


@pytest.mark.parametrize(
    "do_lower_case, init_checkpoint",
    [
        (True, "/models/uncased_L-12_H-768_A-12/bert_model.ckpt"),
        (False, "/models/cased_L-12_H-768_A-12/bert_model.ckpt"),
        (True, "/models/multilingual_L-12_H-768_A-12/bert_model.ckpt"),
        (False, "/models/multi_cased_L-12_H-768_A-12/bert_model.ckpt"),
        (False, "/models/my_finetuned_model/bert_model.ckpt"),
        (True, "/models/my_finetuned_model/bert_model.ckpt"),
        # As in the original, only the released file name identifies a released model.
        (False, "/models/uncased_L-12_H-768_A-12/model.ckpt-1000"),
        (True, None),
        (False, ""),
    ],
)
def test_validate_case_accepts_match_or_unknown(do_lower_case, init_checkpoint):
    tokenization.validate_case_matches_checkpoint(do_lower_case, init_checkpoint)


def test_a_release_folder_is_checked_as_its_checkpoint():
    """The unzipped release folder (or a release zip's URL, unpacked under its name) is an
    --init_checkpoint too: its name is checked as the original checks the file's folder."""
    with pytest.raises(ValueError, match="should pass in `--do_lower_case=False`"):
        tokenization.validate_case_matches_checkpoint(True, "/models/cased_L-12_H-768_A-12/")
    tokenization.validate_case_matches_checkpoint(True, "/models/uncased_L-12_H-768_A-12")


@pytest.mark.parametrize(
    "path, lower_case",
    [
        ("/models/uncased_L-12_H-768_A-12/bert_model.ckpt", True),
        ("/models/cased_L-24_H-1024_A-16", False),
        ("gs://bucket/wwm_cased_L-24_H-1024_A-16/", False),
        ("/cache/1f2e/wwm_uncased_L-24_H-1024_A-16", True),
        ("/models/multi_cased_L-12_H-768_A-12", False),
        ("/models/multilingual_L-12_H-768_A-12", True),
        ("/models/chinese_L-12_H-768_A-12/bert_model.ckpt", True),
        ("/models/uncased_L-2_H-128_A-2", True),  # the 2020 small BERTs
        ("/models/my_model/bert_model.ckpt", None),
        ("/models/bert-base-cased", None),  # not a name of Google's release
        (None, None),
    ],
)
def test_a_released_models_casing_is_in_its_name(path, lower_case):
    assert tokenization.released_model_lower_case(path) is lower_case


def test_fast_tokenizer_requires_unk(tmp_path):
    path = write_vocab(tmp_path / "vocab.txt", ["[CLS]", "a"])
    with pytest.raises(ValueError, match=r"vocab\.txt has no '\[UNK\]' line"):
        FastWordpieceBertTokenizer(path)


def test_fast_tokenizer_special_ids_and_size(tmp_path, original_vocab_file):
    path = write_vocab(tmp_path / "vocab.txt", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"])
    fast = FastWordpieceBertTokenizer(path)
    assert (fast.pad_id, fast.unk_id, fast.cls_id, fast.sep_id, fast.mask_id) == (0, 1, 2, 3, 4)
    assert fast.vocab_size == 6
    small = FastWordpieceBertTokenizer(original_vocab_file)
    assert (small.unk_id, small.cls_id, small.sep_id, small.vocab_size) == (0, 1, 2, 11)
    # A library error (a ValueError): the scripts print its one line, not a traceback.
    with pytest.raises(VocabularyError, match=r"vocab\.txt has no '\[MASK\]' line"):
        _ = small.mask_id


def test_fast_tokenizer_rejects_other_ranks(original_vocab_file):
    fast = FastWordpieceBertTokenizer(original_vocab_file)
    with pytest.raises(ValueError, match=r"shape \[batch\]"):
        fast.tokenize(tf.constant([["a"]]))


def test_duplicate_and_blank_vocab_lines_keep_original_ids(tmp_path):
    # A repeated token takes its last line's id; blank lines still count: ids are line numbers.
    path = write_vocab(tmp_path / "vocab.txt", ["[UNK]", "dup", "", "b", "dup", "##b", "##"])
    reference, fast = FullTokenizer(path, False), FastWordpieceBertTokenizer(path, False)
    texts = ["dup b", "bb dupb", "## x", ""]
    assert [reference_ids(reference, text) for text in texts] == fast_ids(fast, texts)
    assert fast_ids(fast, ["dup bb"]) == [[4, 3, 5]]
    assert fast.vocab_size == 7


def test_word_length_limit_counts_characters_not_bytes(tmp_path):
    emoji = "\U0001f600"  # 4 bytes in UTF-8
    path = write_vocab(tmp_path / "vocab.txt", ["[UNK]", emoji, "##" + emoji, "e", "##e"])
    for do_lower_case in (True, False):
        reference = FullTokenizer(path, do_lower_case)
        fast = FastWordpieceBertTokenizer(path, do_lower_case)
        texts = [
            emoji * 200,  # 800 bytes, exactly at the limit: 200 pieces
            emoji * 201,
            "e" * 200,
            "e" * 201,
            "\u00e9" * 201,  # 402 bytes; uncased it is 201 "e" after stripping accents
            "e\u0301" * 101,  # 202 characters cased, 101 once accents are stripped
        ]
        expected = [reference_ids(reference, text) for text in texts]
        assert fast_ids(fast, texts) == expected
        assert len(expected[0]) == 200 and expected[1] == [0]
        assert expected[3] == [0]
        assert len(expected[5]) == (101 if do_lower_case else 1)


# === Hard cases: FullTokenizer and the fast tokenizer side by side ===

HARD_CASES = {
    "accents": "Café naïve résumé Ångström façade",
    "combining_diacritics": "e\u0301te\u0301 a\u0300\u0316\u0301 o\u0308\u0304",
    "precomposed_and_stacked": "\u1ea0\u0300 \u01d5 \u1e69",
    "cjk": "\u4e2d\u6587\u5206\u8bcd\u6d4b\u8bd5abc\u4e2d",
    "cjk_extension_b": "x\U00020000y\U0002a6d6z\U0002b740",
    "cjk_compatibility": "\uf900\uf901 \ufa10\U0002f800x",
    "kangxi_radical_not_cjk": "\u2f00\u2f01 \u3005\u3007",
    "japanese_kana": "\u304c\u3063\u3053\u3046\u3000\u30ab\u30bf\u30ab\u30ca\u3001"
    "\u3067\u3059\u3002",
    "halfwidth_katakana": "\uff76\uff9e\uff97\uff7d",
    "korean": "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8",
    "korean_jamo": "\u1112\u1161\u11ab",
    "thai": "\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22 \u0e01\u0e34\u0e19\u0e02\u0e49\u0e32\u0e27",
    "arabic_harakat": "\u0645\u064e\u0631\u0652\u062d\u064e\u0628\u064b\u0627 \u060c\u061f",
    "hebrew_points": "\u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd",
    "devanagari": "\u0928\u092e\u0938\u094d\u0924\u0947 \u0915\u094d\u0937",
    "emoji": "\U0001f600 \U0001f44d\U0001f3fd \u2764\ufe0f 1\ufe0f\u20e3",
    "emoji_zwj": "\U0001f468\u200d\U0001f469\u200d\U0001f467 \U0001f3f3\ufe0f\u200d\U0001f308",
    "emoji_tag_sequence": "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
    "regional_indicators": "\U0001f1fa\U0001f1f8\U0001f1eb\U0001f1f7",
    "control_chars": "a\x00b\x01c\x07d\x1be\x7ff\x9fg",
    "c0_whitespace_controls": "a\x0bb\x0cc\x1cd\x1de\x1ef\x1fg\x85h",
    "zero_width": "foo\u200bbar baz\u200cqux zw\u200dj \u2060wj \u180emvs",
    "bom": "\ufeffhello \ufeffworld\ufeff",
    "soft_hyphen": "co\u00adoperate hy\u00ad-phen",
    "replacement_char": "bad\ufffdbyte \ufffd",
    "fullwidth": "\uff21\uff22\uff23\uff11\uff12\uff13\uff01 \uff48\uff45\uff4c\uff4c\uff4f\uff1f",
    "ligatures": "\ufb01ne \ufb02ow \ufb00 \u0132sselmeer \u01c4",
    "turkish_i": "\u0130stanbul \u0131s\u0131k D\u0130YARBAKIR i\u0307",
    "german_sharp_s": "Stra\u00dfe STRASSE \u1e9e \u00df",
    "greek_final_sigma": "\u039f\u0394\u039f\u03a3 \u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5"
    "\u03a3. \u03a3",
    "greek_sigma_contexts": "\u0391\u03a3'\u0391 \u0391\u03a3\u0301 \u0391\u0301\u03a3 "
    "\u0391\u03a3\u4e2d\u03a3\u0391 \u0391\u00ad\u03a3 \u0391\x01\u03a3",
    "greek_tonos": "\u0386\u03b8\u03ae\u03bd\u03b1 \u0390 \u1fef\u037e\u0387",
    "line_paragraph_separators": "one\u2028two\u2029three",
    "nbsp_and_other_zs": "a\u00a0b\u1680c\u2000d\u2007e\u202ff\u205fg\u3000h",
    "tabs_newlines": "\ta\tb\n\nc\r\nd\re ",
    "symbols_not_punctuation": "5$ +3 ^2 `x` |y| ~z 10\u20ac \u00a9\u00ae\u2122 \u00b1\u00d7\u00f7",
    "unicode_punctuation": "\u00bfQu\u00e9? \u00a1S\u00ed! \u00abquote\u00bb \u201cq\u201d "
    "\u2014dash\u2013 \u2026 \u00b7",
    "only_punctuation": "!?...,;:()[]{}<>@#%&*_-/\\\"'",
    "numbers_with_commas": "1,000,000.50 3.14 1e-5 12:30 50%",
    "cls_like": "[CLS] [SEP] [MASK] [UNK] [PAD] ##ing ##",
    "long_word_200": "a" * 200,
    "long_word_201": "a" * 201,
    "long_multibyte_201": "\u00e9" * 201,
    "long_multibyte_200": "\u4e2d" * 3 + "\u00fc" * 200,
    "empty": "",
    "whitespace_only": " \t\n\r\u00a0\u3000\u2028 ",
    "combining_marks_alone": "\u0301 \u0300\u0301 a \u0308",
    "enclosing_and_spacing_marks": "a\u20dd b\u0903 \u0488",
    "variation_selectors": "\u845b\U000e0100 \u2603\ufe0e x\ufe00",
    "noncharacters_private_use": "\ufdd0 \ufffe\uffff \ue000abc \U0010fffd \U000f0000",
    # U+0378 is unassigned; U+1FBFA is newer than Python 3.11; U+30000 (CJK extension G) is an
    # ideograph outside the original's ranges, so it is not split off.
    "unassigned_newer_or_outside_cjk_ranges": "\u0378 \U0001fbfa x\U00030000y",
    "angstrom_kelvin_ohm": "\u212b \u212a \u2126 \u2160",
    "titlecase_and_special_lower": "\u01c5 \u1f88 \u0149 \u1e9b",
    "mixed_scripts": "Hello\u4e16\u754c\u041f\u0440\u0438\u0432\u0435\u0442 "
    "\u0645\u0631\u062d\u0628\u0627!",
    "url_and_email": "https://example.com/a?b=c&d=e user@example.org",
    "math_alphanumerics": "\U0001d400\U0001d401\U0001d7ce \u2102\u211d",
    "superscripts": "x\u00b2 \u1d35\u1d3a\u1d40\u1d43 \u2074\u2075",
    "bert_sample_line": "This text is included to make sure Unicode is handled properly: "
    "\u529b\u52a0\u52dd\u5317\u533a\u1d35\u1d3a\u1d40\u1d43\u099b\u099c\u099f\u09a1\u09a3\u09a4",
}


def test_at_least_forty_hard_cases():
    assert len(HARD_CASES) >= 40


@pytest.mark.parametrize("name", sorted(HARD_CASES))
def test_hard_case_words_match(small_pair, name):
    reference, fast = small_pair
    text = HARD_CASES[name]
    assert fast_words(fast, [text]) == [reference.basic_tokenizer.tokenize(text)]


def test_hard_cases_ids_match(bert_pair):
    reference, fast = bert_pair
    names = sorted(HARD_CASES)
    expected = [reference_ids(reference, HARD_CASES[name]) for name in names]
    got = fast_ids(fast, [HARD_CASES[name] for name in names])
    mismatches = [
        name for name, want, have in zip(names, expected, got, strict=True) if want != have
    ]
    assert not mismatches
    # Python strings skip the pass that drops invalid UTF-8 (they have none): the same ids.
    texts = [HARD_CASES[name] for name in names if isinstance(HARD_CASES[name], str)]
    assert len(texts) > 30
    assert fast.tokenize(texts).to_list() == fast_ids(fast, texts)


@pytest.mark.parametrize(
    "text, uncased, cased",
    [
        # Full-width forms and ligatures are not folded (that is NFKC, not the original's NFD).
        (
            "\uff21\uff22\uff23\uff11\uff12\uff13\uff01",
            ["\uff41\uff42\uff43\uff11\uff12\uff13", "\uff01"],
            ["\uff21\uff22\uff23\uff11\uff12\uff13", "\uff01"],
        ),
        ("\ufb01ne", ["\ufb01ne"], ["\ufb01ne"]),
        ("\u0130stanbul \u0131", ["istanbul", "\u0131"], ["\u0130stanbul", "\u0131"]),
        ("Stra\u00dfe \u1e9e", ["stra\u00dfe", "\u00df"], ["Stra\u00dfe", "\u1e9e"]),
        (
            "\u039f\u0394\u039f\u03a3 \u03a3\u0391\u03a3.",
            ["\u03bf\u03b4\u03bf\u03c2", "\u03c3\u03b1\u03c2", "."],
            ["\u039f\u0394\u039f\u03a3", "\u03a3\u0391\u03a3", "."],
        ),
        # Format characters vanish without splitting; U+2028 and NBSP split.
        ("foo\u200bbar co\u00adop \ufeffx", ["foobar", "coop", "x"], ["foobar", "coop", "x"]),
        ("one\u2028two\u00a0three", ["one", "two", "three"], ["one", "two", "three"]),
        # NEL (U+0085) is whitespace to str.split() but a control character: it is dropped.
        ("a\x85b", ["ab"], ["ab"]),
        # Kana voicing marks are Mn after NFD; Hangul syllables decompose into jamo.
        ("\u304c\u3063\u3053\u3046", ["\u304b\u3063\u3053\u3046"], ["\u304c\u3063\u3053\u3046"]),
        ("\ud55c", ["\u1112\u1161\u11ab"], ["\ud55c"]),
        ("\uf900x", ["\u8c48", "x"], ["\uf900", "x"]),
        ("\u0301 a\u0301", ["a"], ["\u0301", "a\u0301"]),
        ("1,000", ["1", ",", "000"], ["1", ",", "000"]),
        ("[CLS]", ["[", "cls", "]"], ["[", "CLS", "]"]),
        ("\u1fef", ["`"], ["\u1fef"]),
    ],
)
def test_reference_words_golden(text, uncased, cased):
    # Goldens worked out by hand from the original's rules, pinning the reference itself.
    assert BasicTokenizer(True).tokenize(text) == uncased
    assert BasicTokenizer(False).tokenize(text) == cased


def test_invalid_utf8_bytes_are_dropped_by_both(small_pair):
    reference, fast = small_pair
    texts = [b"caf\xc3\xa9 \xff wa\xe2\x82nt", b"\xc0\xafun\xed\xa0\x80want", b"\xf0\x9f\x98"]
    assert fast_ids(fast, texts) == [reference_ids(reference, text) for text in texts]
    assert fast_words(fast, texts) == [reference.basic_tokenizer.tokenize(t) for t in texts]


# === Exhaustive comparisons over code points ===

# Planes 0-3 and 14 hold every character assigned by Unicode 16.0 outside private use.
SWEPT_CODE_POINTS = [
    code_point
    for code_point in [*range(0x40000), *range(0xE0000, 0xF0000)]
    if not 0xD800 <= code_point <= 0xDFFF
]


def differing_code_points(reference: BasicTokenizer, fast, template, code_points) -> set[int]:
    """Code points c whose `template.format(c=chr(c))` splits differently in the two tokenizers.

    Many code points are checked per string, separated by spaces: a space ends every context the
    original reads (a whitespace-separated word, the final sigma, canonical reordering).
    """
    chunk_size = 4096
    chunks = [code_points[i : i + chunk_size] for i in range(0, len(code_points), chunk_size)]
    texts = [" ".join(template.format(c=chr(c)) for c in chunk) for chunk in chunks]
    got = fast_words(fast, texts)
    differing = set()
    for chunk, text, words in zip(chunks, texts, got, strict=True):
        if reference.tokenize(text) != words:
            singles = [template.format(c=chr(c)) for c in chunk]
            for code_point, text_one, words_one in zip(
                chunk, singles, fast_words(fast, singles), strict=True
            ):
                if reference.tokenize(text_one) != words_one:
                    differing.add(code_point)
    return differing


@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_every_code_point_splits_as_reference(original_vocab_file, do_lower_case):
    fast = FastWordpieceBertTokenizer(original_vocab_file, do_lower_case=do_lower_case)
    differing = differing_code_points(BasicTokenizer(do_lower_case), fast, "{c}", SWEPT_CODE_POINTS)
    # The documented difference: TensorFlow's newer NFD, uncased only.
    assert differing == (NFD_NEWER_THAN_PYTHON if do_lower_case else set())


def test_final_sigma_context_of_every_code_point(original_vocab_file):
    # A code point matters to the final-sigma rule when it is skipped (case-ignorable) or cased.
    # Probing "A" + c + sigma finds every code point that Python or TensorFlow's ICU (Unicode 13
    # case data) treats so; each is then checked before and after a sigma. The slow test below
    # runs the same templates over all code points.
    code_points = [c for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    probes = ["A" + chr(c) + "\u03a3" for c in code_points]
    tf_lowered = tf.strings.lower(tf.constant([p.encode("utf-8") for p in probes]), "utf-8")
    relevant = [
        code_point
        for code_point, probe, tf_lower in zip(code_points, probes, tf_lowered.numpy(), strict=True)
        if probe.lower().endswith("\u03c2") or tf_lower.decode("utf-8").endswith("\u03c2")
    ]
    assert 2000 < len(relevant) < 10000
    fast = FastWordpieceBertTokenizer(original_vocab_file, do_lower_case=True)
    template = "\u0391{c}\u03a3 \u0391\u03a3{c}\u0391 \u03a3{c}\u03a3"
    differing = differing_code_points(BasicTokenizer(True), fast, template, relevant)
    assert differing == set()


def test_tf_lower_misses_exactly_the_listed_capitals(original_vocab_file):
    """Pins the TensorFlow fact behind _CAPITALS_UNKNOWN_TO_TF_LOWER, and its fix."""
    fast = FastWordpieceBertTokenizer(original_vocab_file, do_lower_case=True)
    # NUL is excluded: it is removed before lower-casing (tf.strings.lower stops at it).
    code_points = [c for c in range(1, sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    chars = [chr(c) for c in code_points]
    encoded = tf.constant([char.encode("utf-8") for char in chars])
    plain = tf.strings.lower(encoded, encoding="utf-8").numpy()
    fixed = fast._lower(encoded).numpy()
    expected = [char.lower().encode("utf-8") for char in chars]
    listed = {
        code_point
        for low, high in tokenization._CAPITALS_UNKNOWN_TO_TF_LOWER
        for code_point in range(low, high + 1)
        if chr(code_point).lower() != chr(code_point)
    }
    assert {
        c for c, got, want in zip(code_points, plain, expected, strict=True) if got != want
    } == listed
    assert [
        c for c, got, want in zip(code_points, fixed, expected, strict=True) if got != want
    ] == []


def test_documented_difference_newer_nfd(bert_vocab_file):
    """The one known difference: words holding characters Python 3.11 does not know.

    TensorFlow's NFD decomposes U+105C9 (Todhri, Unicode 16.0) and orders U+0897 (Unicode 16.0,
    combining class 230) before U+1D165 (class 216); Python 3.11 sees unassigned starters. The
    words differ, the ids agree because no vocabulary token holds such characters.
    """
    reference = FullTokenizer(bert_vocab_file, do_lower_case=True)
    fast = FastWordpieceBertTokenizer(bert_vocab_file, do_lower_case=True)
    texts = ["x\U000105c9 ok", "x\u0897\U0001d165 ok"]
    assert [reference.basic_tokenizer.tokenize(text) for text in texts] == [
        ["x\U000105c9", "ok"],
        ["x\u0897\U0001d165", "ok"],
    ]
    assert fast_words(fast, texts) == [["x\U000105d2", "ok"], ["x\U0001d165\u0897", "ok"]]
    assert fast_ids(fast, texts) == [reference_ids(reference, text) for text in texts]
    assert fast_ids(fast, texts)[0][0] == fast.unk_id
    unknown_to_python = [
        token
        for token in reference.vocab
        if any(unicodedata.category(char) == "Cn" for char in token)
    ]
    assert unknown_to_python == []


@pytest.mark.slow
@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
@pytest.mark.parametrize(
    "template",
    ["{c}", "a{c}b", "\u0391{c}\u03a3", "\u0391\u03a3{c}\u0391", "{c}\u0301x", "{c}{c}A\u03a3"],
)
def test_every_code_point_in_context(original_vocab_file, do_lower_case, template):
    fast = FastWordpieceBertTokenizer(original_vocab_file, do_lower_case=do_lower_case)
    code_points = [c for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    differing = differing_code_points(BasicTokenizer(do_lower_case), fast, template, code_points)
    assert differing == (NFD_NEWER_THAN_PYTHON if do_lower_case else set())


# === Graphs and tf.data ===


def test_fast_tokenizer_in_tf_function_and_tf_data(original_vocab_file):
    fast = FastWordpieceBertTokenizer(original_vocab_file, do_lower_case=True)
    texts = ["UNwant\u00e9d,running", "", "unwantedX running", "\u03a3 want"]
    expected = fast_ids(fast, texts)
    assert expected[0] == [7, 4, 5, 10, 8, 9]

    tokenize = tf.function(fast.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    result = tokenize(tf.constant(texts))
    assert isinstance(result, tf.RaggedTensor) and result.dtype == tf.int32
    assert result.shape.rank == 2
    assert result.to_list() == expected

    unknown_rank = tf.function(fast.tokenize, input_signature=[tf.TensorSpec(None, tf.string)])
    assert unknown_rank(tf.constant(texts)).to_list() == expected

    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(3).map(fast.tokenize)
    batches = [batch.to_list() for batch in dataset]
    assert batches == [expected[:3], expected[3:]]


# === Acceptance: the shared English corpus ===


def corpus_lines() -> list[str]:
    files = sorted(SHARED_TEXT.glob("*.txt"))
    if not files:
        pytest.skip(f"shared text corpus not present: {SHARED_TEXT}")
    lines = []
    for path in files:
        # Split on "\n" only: str.splitlines() would also split on U+2028, \x1c, ...
        file_lines = path.read_text(encoding="utf-8").split("\n")
        if file_lines[-1] == "":
            file_lines.pop()
        lines.extend(file_lines)
    return lines


def test_corpus_ids_identical(bert_pair):
    reference, fast = bert_pair
    lines = corpus_lines()
    batch_size = 2048
    got, got_from_str = [], []
    for start in range(0, len(lines), batch_size):
        got.extend(fast_ids(fast, lines[start : start + batch_size]))
        # As Python str, which skips the pass that drops invalid UTF-8 (they have none).
        got_from_str.extend(fast.tokenize(lines[start : start + batch_size]).to_list())
    expected = [reference_ids(reference, line) for line in lines]
    mismatches = [index for index in range(len(lines)) if got[index] != expected[index]]
    pieces = sum(len(ids) for ids in expected)
    print(
        f"\ncorpus, do_lower_case={fast.do_lower_case}: {len(lines)} lines, {pieces} wordpieces "
        f"compared, {len(mismatches)} mismatching lines"
    )
    assert len(lines) > 20000 and fast.vocab_size == 30522
    assert not mismatches, [lines[index] for index in mismatches[:5]]
    assert got_from_str == got


# === The stored character classes ===


def test_stored_character_classes_equal_a_fresh_computation():
    # If this fails after a change to compute_character_classes, rewrite the file with
    # `python -c "from official_bert.tokenization import write_character_classes_file as w; w()"`.
    with open(tokenization.CHARACTER_CLASSES_FILE, encoding="utf-8") as reader:
        stored = json.load(reader)
    fresh = tokenization.compute_character_classes()
    tokenization._character_classes.cache_clear()
    if stored["unidata_version"] == unicodedata.unidata_version:
        assert stored["patterns"] == fresh
    else:
        # Another Python's Unicode database (e.g. 3.10's 13.0): its own classes are used.
        assert tokenization._character_classes() == fresh


def test_character_classes_are_computed_for_another_unicode_version(tmp_path, monkeypatch):
    path = tmp_path / "classes.json"
    tokenization.write_character_classes_file(str(path))
    stored = json.loads(path.read_text(encoding="utf-8"))
    monkeypatch.setattr(tokenization, "CHARACTER_CLASSES_FILE", str(path))
    monkeypatch.setattr(tokenization, "compute_character_classes", lambda: {"computed": "yes"})
    tokenization._character_classes.cache_clear()
    try:
        assert tokenization._character_classes() == stored["patterns"]
        tokenization._character_classes.cache_clear()
        path.write_text(json.dumps({**stored, "unidata_version": "1.0.0"}), encoding="utf-8")
        assert tokenization._character_classes() == {"computed": "yes"}
    finally:
        tokenization._character_classes.cache_clear()


def test_a_utf8_byte_order_mark_is_not_part_of_the_first_token(tmp_path):
    """Notepad's "UTF-8" starts the file with EF BB BF; "[PAD]" must stay "[PAD]" (the
    preprocessing export asks for its id)."""
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"\xef\xbb\xbf" + "".join(t + "\n" for t in ORIGINAL_TEST_VOCAB).encode())
    plain = write_vocab(tmp_path / "plain.txt", ORIGINAL_TEST_VOCAB)
    assert load_vocab(path) == load_vocab(plain)
    assert next(iter(load_vocab(path))) == ORIGINAL_TEST_VOCAB[0]
    fast = FastWordpieceBertTokenizer(path)
    assert fast.unk_id == 0 and fast.tokens_by_id[0] == "[UNK]"


def test_a_utf16_vocab_is_named_as_not_utf8(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("".join(t + "\n" for t in ORIGINAL_TEST_VOCAB), encoding="utf-16")
    with pytest.raises(VocabularyError, match=r"vocab\.txt is not UTF-8: .*UTF-16"):
        load_vocab(path)


def test_a_folder_as_vocab_file_is_named_with_the_vocab_in_it(tmp_path):
    with pytest.raises(ValueError, match=r"--vocab_file=.* is a folder, not a file"):
        load_vocab(tmp_path)
    write_vocab(tmp_path / "vocab.txt", ORIGINAL_TEST_VOCAB)
    with pytest.raises(ValueError, match=r"is a folder, not a file; .*\(.*vocab\.txt\?\)"):
        load_vocab(tmp_path)


def test_empty_lines_at_the_end_give_no_ids(tmp_path):
    """`echo >> vocab.txt`: the empty last lines hold no token; ids stay line numbers."""
    path = write_vocab(tmp_path / "vocab.txt", [*ORIGINAL_TEST_VOCAB, "", " "])
    assert load_vocab(path)[""] == len(ORIGINAL_TEST_VOCAB) + 1  # as the original reads it
    assert vocab_id_count(load_vocab(path)) == len(ORIGINAL_TEST_VOCAB)
    fast = FastWordpieceBertTokenizer(path)
    assert fast.vocab_size == len(ORIGINAL_TEST_VOCAB) == len(fast.tokens_by_id)
    middle = write_vocab(tmp_path / "middle.txt", ["[UNK]", "", "a"])
    assert vocab_id_count(load_vocab(middle)) == 3  # an empty line before a token counts
