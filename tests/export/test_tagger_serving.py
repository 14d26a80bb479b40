"""The tagger serving module with a doc_stride (run_classifier.py --doc_stride) tags a long
sentence as the predict path does: overlapping windows of its words' whole pieces, each word read
in the window where its first piece has the most context (data/tagging/features.py
encode_tagged_windows, word_predictions). The run's exported model end to end:
tests/tasks/test_long_documents.py."""

import numpy as np
import pytest
import tensorflow as tf

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.tagging.examples import TaggedSentence
from official_bert.data.tagging.features import encode_tagged_windows, word_predictions
from official_bert.evaluation.tagging_metrics import entity_spans
from official_bert.export.tagger_serving import TaggerServingModule
from tests.tiny_data import write_tiny_vocab

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]


def _position_model(inputs, training=False):
    """Tag logits float32 [rows, length, len(LABELS)], one-hot of (piece id + 3 * position in
    the row + the row's first piece id) mod 7: a word read in another window, or at another
    position, gets another tag; padding changes nothing."""
    del training
    ids = tf.cast(inputs["input_word_ids"], tf.int64)
    positions = tf.range(tf.shape(ids, out_type=tf.int64)[1])[None, :]
    return tf.one_hot((ids + 3 * positions + ids[:, 1:2]) % len(LABELS), len(LABELS))


@pytest.fixture(scope="module")
def packer(tmp_path_factory):
    vocab = tmp_path_factory.mktemp("tagger_serving") / "vocab.txt"
    write_tiny_vocab(vocab)
    return BertInputPacker(str(vocab), 8)  # windows of 6 pieces


def _predicted_tags(sentences: list[list[str]], packer, doc_stride) -> list[list[str]]:
    """The predict path's tags (of _position_model) for each sentence's words."""
    arrays = encode_tagged_windows(
        [TaggedSentence(f"test-{i}", tuple(words), None, 1) for i, words in enumerate(sentences)],
        packer,
        LABELS,
        doc_stride,
    )
    tag_ids = np.argmax(_position_model({"input_word_ids": arrays["input_ids"]}), axis=-1)
    per_word = word_predictions(
        tag_ids, arrays["label_weights"], arrays["sentence_index"].ravel(), len(sentences)
    )
    return [[LABELS[index] for index in words] for words in per_word]


@pytest.mark.parametrize("characters_are_words", [False, True])
def test_doc_stride_windows_tag_each_word_as_the_predict_path(packer, characters_are_words):
    # "the films was very good and the plot jumped fun over <BEL> lazy dog jumped": 18 pieces
    # (film ##s, jump ##ed; the BEL word has none, so [UNK]); windows of 6 starting 2 apart:
    # [0, 6), [2, 8), ... [12, 18). "films" straddles [2, 8) and "jumped" [4, 10).
    texts = [
        "the films was very good and the plot jumped fun over \x07 lazy dog jumped",
        "",
        "good fun",  # one window
        " the   jumped films \t the the dog fun ",
        " ",
    ]
    if characters_are_words:
        texts[0] = "the fox\u3000jumped over the lazy dog"  # U+3000 is a character-word too
        sentences = [[char for char in text if char not in " \t\r\n"] for text in texts]
    else:
        sentences = [text.split() for text in texts]
    kept = [index for index, words in enumerate(sentences) if words]
    for doc_stride in (2, 3):
        module = TaggerServingModule(
            _position_model, packer, LABELS, characters_are_words, doc_stride=doc_stride
        )
        served = {name: value.numpy() for name, value in module.tag(tf.constant(texts)).items()}
        words = [[word.decode() for word in row if word] for row in served["words"]]
        tags = [[tag.decode() for tag in row if tag] for row in served["tags"]]
        assert words == sentences
        expected = _predicted_tags([sentences[index] for index in kept], packer, doc_stride)
        assert [tags[index] for index in kept] == expected, doc_stride
        assert tags[1] == tags[4] == []
        for index, sentence_tags in zip(kept, expected, strict=True):
            types = [kind.decode() for kind in served["entity_types"][index] if kind]
            assert sorted(types) == sorted(kind for kind, _, _ in entity_spans(sentence_tags))

    with pytest.raises(ValueError, match="doc_stride must be at least 1"):
        TaggerServingModule(_position_model, packer, LABELS, doc_stride=0)
