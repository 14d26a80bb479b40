"""FusedEncoderModel: a fine-tuned classifier's or tagger's eval forward with FusedInferenceEncoder
equals the Keras model's, keeps one copy of the encoder, and refuses models it cannot run."""

import numpy as np
import pytest
import tensorflow as tf

from official_bert import kernels
from official_bert.export.fused_encoder_model import FusedEncoderModel
from official_bert.models import (
    BertClassifier,
    BertEncoder,
    BertPretrainer,
    BertSpanLabeler,
    BertTokenTagger,
)
from tests.conftest import random_inputs, tiny_encoder_kwargs


def _model(kind):
    with kernels.fast_kernels(True):
        encoder = BertEncoder(**tiny_encoder_kwargs())
        model = BertClassifier(encoder, 3) if kind == "classifier" else BertTokenTagger(encoder, 5)
        model.build()
    # Heads away from their zero-mean start, so that outputs differ between rows.
    for weight in model.trainable_weights:
        if "encoder" not in weight.path:
            weight.assign(tf.random.stateless_normal(weight.shape, seed=[3, 4]))
    return model


@pytest.mark.parametrize("kind", ["classifier", "tagger"])
def test_outputs_equal_the_keras_model_in_float32_and_bfloat16(kind):
    model = _model(kind)
    inputs = random_inputs(batch=3, seq=16, vocab=100)
    expected = model(inputs, training=False).numpy()
    fused = FusedEncoderModel(model, "float32")
    np.testing.assert_allclose(fused(inputs).numpy(), expected, atol=2e-5)
    assert np.ptp(expected, axis=0).max() > 1e-3  # rows differ: not a constant
    # In a serving signature's graph (batch and length unknown when traced).
    spec = {name: tf.TensorSpec([None, None], tf.int32) for name in inputs}
    served = tf.function(fused.__call__, input_signature=[spec])(inputs)
    np.testing.assert_allclose(served.numpy(), expected, atol=2e-5)
    in_bfloat16 = FusedEncoderModel(model, "bfloat16")(inputs)
    error = np.abs(tf.cast(in_bfloat16, tf.float32).numpy() - expected).max()
    assert 0 < error < 2e-2 * np.abs(expected).max(), error  # bfloat16 keeps 8 bits


def test_span_logits_equal_the_keras_span_labeler():
    with kernels.fast_kernels(True):
        model = BertSpanLabeler(BertEncoder(**tiny_encoder_kwargs()))
        model.build()
    inputs = random_inputs(batch=3, seq=16, vocab=100)
    expected = model(inputs, training=False)
    served = FusedEncoderModel(model, "float32")(inputs)
    assert set(served) == {"start_logits", "end_logits"}
    for name, logits in served.items():
        np.testing.assert_allclose(logits.numpy(), expected[name].numpy(), atol=2e-5)


def test_a_saved_model_of_it_holds_the_fused_encoder_and_the_heads_only(tmp_path):
    model = _model("tagger")
    fused = FusedEncoderModel(model, "float32")
    tf.saved_model.save(fused, str(tmp_path))
    saved = tf.train.list_variables(str(tmp_path / "variables" / "variables"))
    sizes = sorted(int(np.prod(shape)) for name, shape in saved if "OBJECT_GRAPH" not in name)
    head = [int(np.prod(v.shape)) for v in model.tagger.weights]
    fused_encoder = [int(np.prod(v.shape)) for v in fused.encoder.variables]
    assert sizes == sorted(head + fused_encoder)
    # One encoder's worth (the fused one joins query, key and value; nothing else is added).
    assert sum(fused_encoder) == model.encoder.count_params()


def test_a_model_without_heads_on_a_bert_encoder_is_refused():
    encoder = BertEncoder(**tiny_encoder_kwargs())
    with pytest.raises(ValueError, match="BertEncoder with a `heads` method.*BertPretrainer"):
        FusedEncoderModel(BertPretrainer(encoder), "float32")
