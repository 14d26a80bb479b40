"""The raw-text classifier serving module packs each call to its longest text: the model then
runs on short rows, and its probabilities equal those of max_seq_length rows (Keras encoder and
FusedInferenceEncoder alike). With a doc_stride it windows a long text and combines the windows'
logits as the predict path does (data/classification/features.py encode_classifier_windows,
tasks/window_aggregation.py); the run's exported model end to end:
tests/tasks/test_long_documents.py."""

import numpy as np
import pytest
import tensorflow as tf

from official_bert import kernels
from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.classification.data_processor import ClassifierExample
from official_bert.data.classification.features import encode_classifier_windows
from official_bert.export.classifier_serving import ClassifierServingModule
from official_bert.export.fused_encoder_model import FusedEncoderModel
from official_bert.models import BertClassifier, BertEncoder
from official_bert.tasks.classification_objective import softmax
from official_bert.tasks.window_aggregation import WINDOW_AGGREGATIONS, aggregate_windows
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


def _window_model(inputs, training=False):
    """Logits float32 [rows, 3] that depend on each real piece's id, its position in the row and
    its segment (so on which pieces a window holds and where), never on padding."""
    del training
    ids = tf.cast(inputs["input_word_ids"], tf.float32)
    mask = tf.cast(inputs["input_mask"], tf.float32)
    types = tf.cast(inputs["input_type_ids"], tf.float32)
    positions = tf.range(tf.shape(ids)[1], dtype=tf.float32)[None, :]
    features = tf.stack(
        [tf.math.floormod(ids, 5.0), tf.math.floormod(ids * positions, 7.0), ids * (1 + types)],
        axis=-1,
    )
    return tf.reduce_sum(features * mask[..., None], axis=1) / 10.0


def _regression_model(inputs, training=False):
    """A score float32 [rows, 1] (the first of _window_model's logits minus the others)."""
    logits = _window_model(inputs, training)
    return logits[:, :1] - logits[:, 1:2] + logits[:, 2:]


# At max_seq_length 8 a single text's windows hold 6 pieces; 18 pieces (film ##s, jump ##ed)
# take [0, 6), [2, 8), ... [12, 18) at doc_stride 2 and [0, 6), [3, 9), ... [12, 18) at 3.
_LONG = "the films was very good and the plot jumped fun over the lazy dog jumped"
_SINGLE_TEXTS = [
    _LONG,
    "",
    "good fun",  # one window
    "the movie was very good and",  # 6 pieces: one window exactly
    "the movie was very good and fun",  # 7 pieces: windows [0, 6) and [k, 7)
    " ",
]
# Of a pair, text_a repeated in every window and text_b windowed in what text_a leaves.
_PAIRS = [
    ("good fun", _LONG),  # windows of 8 - 3 - 2 = 3 pieces of text_b
    ("", _LONG),
    ("the dog", ""),  # one window, packed as a single text
    ("the movie was", "very good"),
    ("fun", "the movie was very good and fun"),
]


@pytest.mark.parametrize("aggregation", WINDOW_AGGREGATIONS)
def test_doc_stride_windows_combine_as_the_predict_path(classifier_and_packer, aggregation):
    packer = BertInputPacker(classifier_and_packer[1].tokenizer, 8)
    labels = ["a", "b", "c"]
    cases = [(False, [(text, None) for text in _SINGLE_TEXTS]), (True, _PAIRS)]
    for doc_stride in (2, 3):
        for takes_pairs, texts in cases:
            examples = [ClassifierExample(f"test-{i}", a, b) for i, (a, b) in enumerate(texts)]
            arrays = encode_classifier_windows(examples, packer, labels, doc_stride)
            assert np.bincount(arrays["example_index"].ravel()).max() > 4  # the long text
            inputs = {
                "input_word_ids": arrays["input_ids"],
                "input_mask": arrays["input_mask"],
                "input_type_ids": arrays["segment_ids"],
            }
            owners = arrays["example_index"].ravel()
            text_a = tf.constant([a for a, _ in texts])
            text_b = tf.constant([b for _, b in texts]) if takes_pairs else None
            for model, names in ((_window_model, labels), (_regression_model, None)):
                module = ClassifierServingModule(
                    model,
                    packer,
                    names,
                    takes_pairs,
                    doc_stride=doc_stride,
                    window_aggregation=aggregation,
                )
                served = module.classify(text_a, text_b)
                combined, _ = aggregate_windows(model(inputs).numpy(), owners, aggregation)
                if names is None:
                    np.testing.assert_allclose(served["scores"], combined[:, 0], rtol=1e-6)
                    continue
                expected = softmax(combined)
                np.testing.assert_allclose(served["probabilities"], expected, atol=1e-6)
                label_ids = served["label_ids"].numpy()
                np.testing.assert_array_equal(label_ids, combined.argmax(-1))
                assert [label.decode() for label in served["labels"].numpy()] == [
                    labels[i] for i in label_ids
                ]

    pair_module = ClassifierServingModule(_window_model, packer, labels, True, doc_stride=2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="leaves no room for its text_b"):
        pair_module.classify(tf.constant(["the movie was very good"]), tf.constant(["fun"]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="text_a and text_b must hold"):
        pair_module.classify(tf.constant(["the", "fun"]), tf.constant(["fun"]))
    with pytest.raises(ValueError, match="doc_stride must be at least 1"):
        ClassifierServingModule(_window_model, packer, labels, False, doc_stride=0)
    with pytest.raises(ValueError, match="window_aggregation must be one of"):
        ClassifierServingModule(
            _window_model, packer, labels, False, doc_stride=2, window_aggregation="sum"
        )
