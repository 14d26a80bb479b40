"""Tagging records: each word's tag on its first wordpiece, long sentences split at words and put
back together, and the records read by classifier_dataset."""

import numpy as np
import pytest

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.classification.dataset import classifier_dataset
from official_bert.data.classification.features import write_classifier_records
from official_bert.data.tagging.examples import TaggedSentence
from official_bert.data.tagging.features import encode_tagged_sentences, word_predictions
from tests.tiny_data import write_tiny_vocab

LABELS = ["O", "B-POS", "B-ANIMAL", "I-ANIMAL"]


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    tokens = write_tiny_vocab(path)
    return path, {token: index for index, token in enumerate(tokens)}


def _sentence(words, tags=None, index=0):
    return TaggedSentence(f"t-{index}", tuple(words), tuple(tags) if tags else None, 1)


def test_the_tag_goes_on_the_first_piece_of_each_word(vocab):
    path, ids = vocab
    packer = BertInputPacker(str(path), max_seq_length=12)
    sentence = _sentence(
        ["The", "films", "jumped", "brown", "fox", "\x00"],
        ["O", "O", "B-POS", "B-ANIMAL", "I-ANIMAL", "O"],
    )
    arrays = encode_tagged_sentences([sentence], packer, LABELS)
    pieces = ["[CLS]", "the", "film", "##s", "jump", "##ed", "brown", "fox", "[UNK]", "[SEP]"]
    expected_ids = [ids[piece] for piece in pieces] + [0, 0]
    np.testing.assert_array_equal(arrays["input_ids"][0], expected_ids)
    np.testing.assert_array_equal(arrays["input_mask"][0], [1] * 10 + [0, 0])
    np.testing.assert_array_equal(arrays["segment_ids"][0], [0] * 12)
    # Words start at 1 (the), 2 (film), 4 (jump), 6 (brown), 7 (fox), 8 (the dropped "\x00").
    np.testing.assert_array_equal(arrays["label_weights"][0], [0, 1, 1, 0, 1, 0, 1, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(arrays["label_ids"][0], [0, 0, 0, 0, 1, 0, 2, 3, 0, 0, 0, 0])
    assert arrays["label_weights"].dtype == np.float32
    assert arrays["sentence_index"].tolist() == [[0]]


def test_long_sentences_are_split_at_words_and_put_back(vocab):
    path, _ = vocab
    packer = BertInputPacker(str(path), max_seq_length=8)  # 6 pieces per record
    short = _sentence(["fox"], ["B-POS"], 0)
    # 9 words, 13 pieces: records [the films jumped fox] (6 pieces), the same again, [dog].
    words = ["the", "films", "jumped", "fox", "the", "films", "jumped", "fox", "dog"]
    long = _sentence(words, ["O", "O", "B-POS", "B-ANIMAL", "O", "O", "B-POS", "I-ANIMAL", "O"], 1)
    arrays = encode_tagged_sentences([short, long, short], packer, LABELS)
    assert arrays["sentence_index"].ravel().tolist() == [0, 1, 1, 1, 2]
    assert arrays["input_mask"].sum(axis=1).max() <= 8
    assert arrays["label_weights"].sum() == 1 + len(words) + 1
    # Tag ids as outputs: putting the records back gives each sentence's tags in order.
    restored = word_predictions(
        arrays["label_ids"], arrays["label_weights"], arrays["sentence_index"].ravel(), 3
    )
    assert [LABELS[i] for i in restored[1]] == list(long.tags)
    assert [r.tolist() for r in (restored[0], restored[2])] == [[1], [1]]


def test_a_word_longer_than_a_record_keeps_its_first_pieces(vocab):
    path, _ = vocab
    packer = BertInputPacker(str(path), max_seq_length=4)
    arrays = encode_tagged_sentences(
        [_sentence(["films", "jumped"], ["O", "B-POS"])], packer, LABELS
    )
    assert arrays["sentence_index"].ravel().tolist() == [0, 0]
    assert arrays["label_ids"][:, 1].tolist() == [0, 1]


def test_records_missing_a_sentence_are_refused():
    with pytest.raises(ValueError, match=r"no records for sentences \[1\] of 2"):
        word_predictions(np.zeros([1, 4]), np.ones([1, 4]), np.array([0]), 2)


def test_classifier_dataset_reads_tagging_records_with_trimmed_labels(vocab, tmp_path):
    path, _ = vocab
    packer = BertInputPacker(str(path), max_seq_length=32)
    sentences = [_sentence(["the", "fox"], ["O", "B-POS"], 0), _sentence(["dog"], ["O"], 1)]
    arrays = encode_tagged_sentences(sentences, packer, LABELS)
    write_classifier_records(arrays, str(tmp_path / "tagging.tf_record"))
    batch = next(
        iter(
            classifier_dataset(
                str(tmp_path / "tagging.tf_record"), 2, 32, is_training=False, trim_padding=True
            )
        )
    )
    assert batch["input_word_ids"].shape == (2, 8) and batch["label_ids"].shape == (2, 8)
    np.testing.assert_array_equal(batch["label_ids"], arrays["label_ids"][:, :8])
    np.testing.assert_array_equal(batch["label_weights"], arrays["label_weights"][:, :8])
    assert batch["sentence_index"].numpy().tolist() == [0, 1]
    assert batch["is_real_example"].numpy().tolist() == [1.0, 1.0]
