"""Reading tagging tasks in the CoNLL layout: sentences, tag columns, tag sets, and errors that
name the file and the line."""

import re

import pytest

from official_bert.data.classification.examples import ClassifierDataError, get_processor
from official_bert.data.tagging.examples import ConllTaggingProcessor, read_conll_sentences

CONLL_2003 = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC
call NN I-NP O

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER

-DOCSTART- -X- -X- O

BRUSSELS NNP B-NP B-LOC
"""


def test_sentences_words_and_the_tag_column(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text(CONLL_2003)
    sentences = read_conll_sentences(str(path))
    assert [s.words for s in sentences] == [
        ("EU", "rejects", "German", "call"),
        ("Peter", "Blackburn"),
        ("BRUSSELS",),
    ]
    assert sentences[0].tags == ("B-ORG", "O", "B-MISC", "O")
    assert [s.line_number for s in sentences] == [3, 8, 13]
    assert [s.guid for s in sentences] == ["train-0", "train-1", "train-2"]
    # The part-of-speech column instead.
    assert read_conll_sentences(str(path), tag_column=1)[1].tags == ("NNP", "NNP")


def test_labels_come_from_train_with_o_first_unless_given(tmp_path):
    (tmp_path / "train.txt").write_text(CONLL_2003)
    processor = get_processor("conll", str(tmp_path))
    assert isinstance(processor, ConllTaggingProcessor)
    assert processor.get_labels() == ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-PER"]
    given = get_processor("conll", str(tmp_path), labels=["O", "B-PER", "I-PER"])
    assert given.get_labels() == ["O", "B-PER", "I-PER"]
    pos = get_processor("conll", str(tmp_path), label_column="1")
    assert pos.get_labels() == ["JJ", "NN", "NNP", "VBZ"]


def test_split_files_of_conll_2003_and_of_other_releases(tmp_path):
    for name in ("eng.train", "eng.testa", "eng.testb"):
        (tmp_path / name).write_text(CONLL_2003)
    processor = get_processor("conll", str(tmp_path))
    assert processor.split_path("dev").endswith("eng.testa")
    (tmp_path / "valid.txt").write_text(CONLL_2003)
    assert processor.split_path("dev").endswith("valid.txt")
    assert len(processor.get_examples("test")) == 3


def test_an_unknown_dev_tag_names_file_line_and_word(tmp_path):
    (tmp_path / "train.txt").write_text(CONLL_2003)
    (tmp_path / "dev.txt").write_text("A X O\n\nin IN O O\nParis NNP B-NP B-GPE\n")
    processor = get_processor("conll", str(tmp_path))
    # The word's own line, and the tags in the model's order (the order --labels needs).
    labels = processor.get_labels()
    assert labels[0] == "O"
    with pytest.raises(
        ClassifierDataError,
        match=rf"dev.txt, line 4, word 'Paris': tag 'B-GPE' is not one of {re.escape(str(labels))}",
    ):
        processor.get_examples("dev")


def test_a_word_holding_a_line_separator_of_unicode_stays_one_word(tmp_path):
    """Only "\n" ends a line and only spaces and tabs separate columns: U+2028, U+0085 and
    U+001C inside a word split it (str.splitlines, str.split), adding words to the sentence."""
    (tmp_path / "train.txt").write_text(CONLL_2003)
    words = ["a\u2028b", "c\x85d", "e\x1cf"]
    (tmp_path / "test.txt").write_text(
        "".join(f"{word} NN O O\r\n" for word in words), encoding="utf-8"
    )
    sentences = get_processor("conll", str(tmp_path)).get_examples("test")
    assert [sentence.words for sentence in sentences] == [tuple(words)]


def test_without_a_training_file_the_tag_set_must_be_given(tmp_path):
    (tmp_path / "test.txt").write_text("EU\n")
    with pytest.raises(
        FileNotFoundError, match=r"train.txt not found: .* must be given \(--labels"
    ):
        get_processor("conll", str(tmp_path)).get_labels()


def test_a_test_file_of_words_only_is_read_without_tags(tmp_path):
    (tmp_path / "test.txt").write_text("EU\nrejects\n\nPeter\n")
    processor = get_processor("conll", str(tmp_path), labels=["O"])
    sentences = processor.get_examples("test")
    assert [s.words for s in sentences] == [("EU", "rejects"), ("Peter",)]
    assert sentences[0].tags is None


@pytest.mark.parametrize(
    "text, column, message",
    [
        ("EU NNP B-ORG\nrejects\n", -1, r"line 2: 1 column\(s\), but the file's first word"),
        ("EU NNP B-ORG\n", 5, r"line 1: 3 columns, no tag column 5"),
        ("EU NNP B-ORG\n", -3, r"line 1: tag column -3 \(--label_column\) is the word's column 0"),
    ],
)
def test_malformed_files_name_the_line(tmp_path, text, column, message):
    path = tmp_path / "train.txt"
    path.write_text(text)
    with pytest.raises(ClassifierDataError, match=message):
        read_conll_sentences(str(path), tag_column=column)


def test_a_file_that_is_not_utf8_names_its_line(tmp_path):
    path = tmp_path / "train.txt"
    path.write_bytes(b"EU B-ORG\n\nK\xf6ln B-LOC\n")  # Latin-1 on line 3
    with pytest.raises(ClassifierDataError, match=r"train\.txt, line 3 \(byte 11\): not UTF-8"):
        read_conll_sentences(str(path))


def test_a_train_file_without_tags_is_refused(tmp_path):
    (tmp_path / "train.txt").write_text("EU\nrejects\n")
    with pytest.raises(ClassifierDataError, match="the train split has no tag column"):
        get_processor("conll", str(tmp_path)).get_labels()


def test_label_column_must_be_an_index(tmp_path):
    with pytest.raises(ValueError, match="--label_column='ner'"):
        get_processor("conll", str(tmp_path), label_column="ner")
