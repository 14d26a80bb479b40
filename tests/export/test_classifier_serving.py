"""The raw-text classifier serving module packs each call to its longest text: the model then
runs on short rows, and its probabilities equal those of max_seq_length rows (Keras encoder and
FusedInferenceEncoder alike)."""

import numpy as np
import pytest
import tensorflow as tf

from official_bert import kernels
from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.export.classifier_serving import ClassifierServingModule
from official_bert.export.fused_encoder_model import FusedEncoderModel
from official_bert.models import BertClassifier, BertEncoder
from tests.conftest import tiny_encoder_kwargs
from tests.export.fresh_process import serve_each_in_one_fresh_process
from tests.tiny_data import write_tiny_vocab

MAX_SEQ_LENGTH = 48


class _WidthReporting(ClassifierServingModule):
    """Adds the packed rows' width to the outputs."""

    def outputs(self, inputs):
        width = tf.shape(inputs["input_word_ids"])[1]
        return {**super().outputs(inputs), "width": width}


@pytest.fixture(scope="module")
def classifier_and_packer(tmp_path_factory):
    vocab = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    write_tiny_vocab(vocab)
    with kernels.fast_kernels(True):
        model = BertClassifier(BertEncoder(**tiny_encoder_kwargs()), 3)
        model.build()
    return model, BertInputPacker(str(vocab), MAX_SEQ_LENGTH)


@pytest.mark.parametrize("fused", [False, True])
def test_rows_are_as_long_as_the_longest_text_and_probabilities_do_not_change(
    classifier_and_packer, fused
):
    model, packer = classifier_and_packer
    if fused:
        model = FusedEncoderModel(model, "float32")
    labels = ["a", "b", "c"]
    short_rows, long_rows = (
        _WidthReporting(model, packer, labels, takes_pairs=True, pad_to_longest=pad).signature()
        for pad in (True, False)
    )
    cases = [
        # ([CLS] a [SEP] b [SEP]) of 2 + 3 + 2 pieces -> a row of 8.
        (["the movie was", "good"], ["fun", "it was very dull"], 8),
        # 1 + 10 + 1 + 3 + 1 pieces -> 16.
        (["the plot of this film was boring and very dull"], ["loved it ."], 16),
        # Longer than max_seq_length: trimmed to it as before.
        ([" ".join(["great"] * 40), "bad"], [" ".join(["awful"] * 30), "fox"], MAX_SEQ_LENGTH),
    ]
    served = []
    for text_a, text_b, width in cases:
        short = short_rows(tf.constant(text_a), tf.constant(text_b))
        full = long_rows(tf.constant(text_a), tf.constant(text_b))
        assert int(short["width"]) == width
        assert int(full["width"]) == MAX_SEQ_LENGTH
        np.testing.assert_allclose(short["probabilities"], full["probabilities"], atol=2e-6)
        np.testing.assert_array_equal(short["labels"], full["labels"])
        served.append(full["probabilities"].numpy())
    # The texts move the probabilities (the comparison above is not of constants).
    assert np.ptp(np.concatenate(served), axis=0).max() > 1e-6


def test_fused_layer_norms_serve_the_same_probabilities_with_and_without_onednn(
    classifier_and_packer, tmp_path
):
    """An export whose LayerNorms are FusedBatchNormV3 graphs (as where TensorFlow uses oneDNN,
    forced here for every LayerNorm of more than a few tokens) serves the Keras model's
    probabilities, loaded in this process and in a fresh TensorFlow with oneDNN's rewrites off
    (TF_ENABLE_ONEDNN_OPTS=0: the FusedBatchNormV3 runs as written)."""
    model, packer = classifier_and_packer
    fused = FusedEncoderModel(model, "float32")
    fused.encoder.fused_norms = True
    fused.encoder.FUSED_NORM_ELEMENTS = 0
    serve = ClassifierServingModule(fused, packer, ["a", "b", "c"], takes_pairs=True).signature()
    tf.saved_model.save(fused, str(tmp_path), signatures={"serving_default": serve})
    assert b"FusedBatchNormV3" in (tmp_path / "saved_model.pb").read_bytes()
    text_a = ["the movie was", "the plot of this film was boring and very dull", "fun"] * 3
    text_b = ["good", "loved it .", "it was very dull"] * 3
    expected = model(packer(tf.constant(text_a), tf.constant(text_b)), training=False)
    expected = tf.nn.softmax(expected).numpy()
    assert np.ptp(expected, axis=0).max() > 1e-6  # rows differ
    # Loaded here, with this process's TensorFlow settings (oneDNN on where it is by default).
    loaded = tf.saved_model.load(str(tmp_path)).signatures["serving_default"]
    served = loaded(text_a=tf.constant(text_a), text_b=tf.constant(text_b))
    np.testing.assert_allclose(served["probabilities"].numpy(), expected, atol=2e-5)
    (served,) = serve_each_in_one_fresh_process(
        [tmp_path], {"text_a": text_a, "text_b": text_b}, {"TF_ENABLE_ONEDNN_OPTS": "0"}
    )
    np.testing.assert_allclose(served["probabilities"], expected, atol=2e-5)
