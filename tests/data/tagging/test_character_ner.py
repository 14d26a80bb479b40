"""Chinese NER corpora, one character per line: tab and space columns, BIO/BIOES/BMES tags, CRLF
files, characters the vocabulary lacks (one [UNK] each, the tags after them in place), errors
naming the file and line; the shipped sample; and MSRA NER itself when ../shared has it."""

import collections

import numpy as np
import pytest

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.classification.examples import ClassifierDataError, get_processor
from official_bert.data.tagging.character_ner import (
    CharacterNerProcessor,
    read_character_ner_sentences,
)
from official_bert.data.tagging.features import encode_tagged_sentences
from official_bert.tokenization import FullTokenizer
from tests.conftest import REPO_ROOT, SHARED_DATA

MSRA_DEV = SHARED_DATA / "zh" / "msra_ner" / "dev.txt"
BERT_BASE_CHINESE_VOCAB = SHARED_DATA / "zh" / "vocab" / "bert-base-chinese_vocab.txt"
SAMPLE_NER = REPO_ROOT / "samples" / "zh" / "ner"
SAMPLE_VOCAB = REPO_ROOT / "samples" / "zh" / "vocab.txt"

# Sentence 1: space-separated BIO. Sentence 2: tab-separated BIOES with a full-width space
# (U+3000) as a character of its own, and 龘 and "\u2028" (a line separator for
# str.splitlines), characters that the test vocabulary lacks. Sentence 3: BMES.
WRITTEN = (
    "王 B-PER\n小 I-PER\n明 I-PER\n在 O\n杭 B-LOC\n州 I-LOC\n。 O\n"
    "\n"
    "张\tS-PER\n\u3000\tO\n龘\tO\n去\tO\n长\tB-ORG\n江\tI-ORG\n\u2028\tO\n大\tI-ORG\n学\tE-ORG\n"
    "\n\n"
    "北 B-LOC\n京 E-LOC\n银 B-ORG\n行 M-ORG\n行 M-ORG\n长 E-ORG\n"
)
WRITTEN_TOKENS = [
    ("王", "小", "明", "在", "杭", "州", "。"),
    ("张", "\u3000", "龘", "去", "长", "江", "\u2028", "大", "学"),
    ("北", "京", "银", "行", "行", "长"),
]
WRITTEN_TAGS = [
    ("B-PER", "I-PER", "I-PER", "O", "B-LOC", "I-LOC", "O"),
    ("S-PER", "O", "O", "O", "B-ORG", "I-ORG", "O", "I-ORG", "E-ORG"),
    ("B-LOC", "E-LOC", "B-ORG", "M-ORG", "M-ORG", "E-ORG"),
]


@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
def test_tokens_tags_and_line_numbers_with_either_line_end(tmp_path, line_end):
    path = tmp_path / "train.txt"
    path.write_bytes(("\ufeff" + WRITTEN).replace("\n", line_end).encode("utf-8"))
    sentences = read_character_ner_sentences(str(path))
    assert [s.words for s in sentences] == WRITTEN_TOKENS
    assert [s.tags for s in sentences] == WRITTEN_TAGS
    assert [s.line_number for s in sentences] == [1, 9, 20]
    assert [s.guid for s in sentences] == ["train-0", "train-1", "train-2"]


def test_an_unlabeled_file_and_trailing_whitespace(tmp_path):
    path = tmp_path / "test.txt"
    path.write_text("我 \n爱\t\n\n北  \n京\n", encoding="utf-8")
    sentences = read_character_ner_sentences(str(path), split="test")
    assert [s.words for s in sentences] == [("我", "爱"), ("北", "京")]
    assert [s.tags for s in sentences] == [None, None]


@pytest.mark.parametrize(
    "text, line, expected",
    [
        ("王 B-PER\n小 I-PER extra\n", 2, "not `token<TAB or spaces>tag` (found 3 columns"),
        ("王\tB-PER\n\tO\n", 2, "the first empty"),
        ("王 B-PER\n\n小 B_PER\n", 3, "tag 'B_PER' is not O or <B|I|M|E|S>-<type>"),
        ("王 B-PER\n小 I-\n", 2, "tag 'I-' is not O"),
        ("王 B-PER\n小\n", 2, "has no tag, but the file's first token line has one"),
        ("王\n小 O\n", 2, "has a tag, but the file's first token line has none"),
        ("王 B-PER\n  O\n", 2, "(a space character as the token needs a tab before its tag)"),
    ],
)
def test_malformed_lines_are_named_by_file_and_line(tmp_path, text, line, expected):
    path = tmp_path / "train.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ClassifierDataError) as error:
        read_character_ner_sentences(str(path))
    assert f"{path}, line {line}: " in str(error.value)
    assert expected in str(error.value)


def test_a_file_that_is_not_utf8_is_named_with_its_line(tmp_path):
    path = tmp_path / "train.txt"
    path.write_bytes("王 B-PER\n\n北 B-LOC\n".encode("gbk"))
    with pytest.raises(
        ClassifierDataError, match=rf"{path}, line 1 \(byte 0\): not UTF-8.*iconv -f GB18030"
    ):
        read_character_ner_sentences(str(path))


def test_unknown_characters_become_one_unk_each_and_no_tag_moves(tmp_path):
    """With a vocabulary that lacks U+3000, 龘 and U+2028, each is one [UNK] carrying its own
    tag; every other character is its own id with its own tag."""
    path = tmp_path / "train.txt"
    path.write_text(WRITTEN, encoding="utf-8")
    sentences = read_character_ner_sentences(str(path))
    known = sorted({c for tokens in WRITTEN_TOKENS for c in tokens} - {"\u3000", "龘", "\u2028"})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *known]
    vocab_path = tmp_path / "vocab.txt"
    vocab_path.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    labels = ["O", "B-PER", "I-PER", "S-PER", "B-LOC", "I-LOC", "E-LOC"]
    labels += ["B-ORG", "I-ORG", "M-ORG", "E-ORG"]
    arrays = encode_tagged_sentences(sentences, BertInputPacker(str(vocab_path), 16), labels)
    ids = {token: index for index, token in enumerate(vocab)}
    assert arrays["input_ids"].shape == (3, 16)
    for row, (tokens, tags) in enumerate(zip(WRITTEN_TOKENS, WRITTEN_TAGS, strict=True)):
        length = len(tokens)
        expected_ids = [ids["[CLS]"], *(ids.get(c, ids["[UNK]"]) for c in tokens), ids["[SEP]"]]
        np.testing.assert_array_equal(arrays["input_ids"][row, : length + 2], expected_ids)
        np.testing.assert_array_equal(arrays["label_weights"][row, 1 : length + 1], 1.0)
        assert arrays["label_weights"][row].sum() == length
        np.testing.assert_array_equal(
            arrays["label_ids"][row, 1 : length + 1], [labels.index(tag) for tag in tags]
        )
    assert (arrays["input_ids"] == ids["[UNK]"]).sum() == 3


def test_the_task_names_and_the_file_names_corpora_ship_with(tmp_path):
    for name in ("example.train", "example.dev", "example.test"):
        (tmp_path / name).write_text("北\tB-LOC\n京\tI-LOC\n是\tO\n\n", encoding="utf-8")
    for task_name in ("chinese_ner", "msra_ner", "peoples_daily_ner", "MSRA_NER"):
        processor = get_processor(task_name, str(tmp_path))
        assert isinstance(processor, CharacterNerProcessor)
    assert processor.split_path("dev").endswith("example.dev")
    assert processor.get_labels() == ["O", "B-LOC", "I-LOC"]
    assert processor.get_examples("test")[0].words == ("北", "京", "是")
    # A dev tag outside the given tag set is named with its sentence and character.
    (tmp_path / "example.dev").write_text("北\tB-GPE\n", encoding="utf-8")
    with pytest.raises(ClassifierDataError, match=r"example.dev, line 1, word '北'"):
        get_processor("msra_ner", str(tmp_path)).get_examples("dev")


def test_the_shipped_sample_is_covered_by_its_vocabulary():
    processor = get_processor("chinese_ner", str(SAMPLE_NER))
    counts = {split: len(processor.get_examples(split)) for split in ("train", "dev", "test")}
    assert counts == {"train": 200, "dev": 50, "test": 50}
    assert processor.get_labels() == ["O", "B-LOC", "B-ORG", "B-PER", "I-LOC", "I-ORG", "I-PER"]
    tokenizer = FullTokenizer(str(SAMPLE_VOCAB), do_lower_case=True)
    characters = {c for split in counts for s in processor.get_examples(split) for c in s.words}
    assert [c for c in sorted(characters) if tokenizer.tokenize(c) != [c]] == []
    train_names = {s.words for s in processor.get_examples("train")}
    assert not train_names & {s.words for s in processor.get_examples("dev")}


@pytest.mark.skipif(
    not (MSRA_DEV.exists() and BERT_BASE_CHINESE_VOCAB.exists()),
    reason=f"reads MSRA NER and the bert-base-chinese vocab from {SHARED_DATA}",
)
def test_msra_ner_as_it_ships_with_the_released_vocabulary():
    """MSRA NER's dev file (4631 sentences, `character TAG`, BIO): the counts of the file, and
    every character's first piece (FullTokenizer, the reference) at its tagged position."""
    sentences = read_character_ner_sentences(str(MSRA_DEV), split="dev")
    assert len(sentences) == 4631
    characters = [c for s in sentences for c in s.words]
    assert len(characters) == 172601
    assert all(len(c) == 1 for c in characters)
    tag_counts = collections.Counter(tag for s in sentences for tag in s.tags)
    assert tag_counts == {
        "O": 152505,
        "I-ORG": 5670,
        "I-LOC": 4394,
        "I-PER": 3851,
        "B-LOC": 2877,
        "B-PER": 1973,
        "B-ORG": 1331,
    }
    labels = ["O", "B-LOC", "B-ORG", "B-PER", "I-LOC", "I-ORG", "I-PER"]
    packer = BertInputPacker(str(BERT_BASE_CHINESE_VOCAB), max_seq_length=128)
    arrays = encode_tagged_sentences(sentences, packer, labels)
    reference = FullTokenizer(str(BERT_BASE_CHINESE_VOCAB), do_lower_case=True)
    first_piece = {}
    for character in set(characters):
        pieces = reference.convert_tokens_to_ids(reference.tokenize(character))
        first_piece[character] = pieces[0] if pieces else reference.vocab["[UNK]"]
    weights = arrays["label_weights"] > 0
    order = np.argsort(arrays["sentence_index"][:, 0], kind="stable")
    tagged_ids = np.concatenate([arrays["input_ids"][row][weights[row]] for row in order])
    tagged_labels = np.concatenate([arrays["label_ids"][row][weights[row]] for row in order])
    np.testing.assert_array_equal(tagged_ids, [first_piece[c] for c in characters])
    tags = [tag for s in sentences for tag in s.tags]
    np.testing.assert_array_equal(tagged_labels, [labels.index(tag) for tag in tags])
    # Some characters are [UNK] (not in the released vocabulary), each exactly once.
    unknown = sum(first_piece[c] == reference.vocab["[UNK]"] for c in characters)
    assert 0 < unknown == (tagged_ids == reference.vocab["[UNK]"]).sum()
