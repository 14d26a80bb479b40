"""FeatureBasedClassifier: frozen encoder, [CLS] features of the chosen layers, a linear head."""

import keras
import numpy as np
import pytest

from official_bert.models import BertEncoder, FeatureBasedClassifier
from tests.conftest import random_inputs, tiny_encoder_kwargs


def _model(features, num_layers=4, dropout_rate=0.0, **kwargs):
    encoder = BertEncoder(**tiny_encoder_kwargs(num_layers=num_layers))
    model = FeatureBasedClassifier(
        encoder, num_classes=3, features=features, dropout_rate=dropout_rate, **kwargs
    )
    model.build()
    return model


@pytest.mark.parametrize("features", ["last", "concat_last4", "scalar_mix"])
def test_logits_are_the_head_over_the_cls_features(features):
    model = _model(features)
    inputs = random_inputs()
    layers = [np.asarray(x) for x in model.encoder(inputs, training=False)["encoder_outputs"]]
    cls = {
        "last": layers[-1][:, 0],
        "concat_last4": np.concatenate([layer[:, 0] for layer in layers[-4:]], axis=-1),
        # The untrained mix is the mean of all layers.
        "scalar_mix": np.mean(layers, axis=0)[:, 0],
    }[features]
    kernel, bias = (np.asarray(v) for v in model.classifier.dense.weights)
    assert kernel.shape == (32 * (4 if features == "concat_last4" else 1), 3)
    np.testing.assert_allclose(model(inputs), cls @ kernel + bias, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("features", ["last", "concat_last4", "scalar_mix"])
def test_per_token_logits_are_the_head_over_each_position(features):
    model = _model(features, per_token=True)
    inputs = random_inputs()
    layers = [np.asarray(x) for x in model.encoder(inputs, training=False)["encoder_outputs"]]
    if model.scalar_mix is not None:
        model.scalar_mix.scalar_weights.assign([-1e9, 0.0, -1e9, -1e9])
    tokens = {
        "last": layers[-1],
        "concat_last4": np.concatenate(layers[-4:], axis=-1),
        # One-hot weights pick layer 1 (gamma 1).
        "scalar_mix": layers[1],
    }[features]
    kernel, bias = (np.asarray(v) for v in model.classifier.dense.weights)
    logits = np.asarray(model(inputs))
    assert logits.shape == (*tokens.shape[:2], 3)
    np.testing.assert_allclose(logits, tokens @ kernel + bias, rtol=1e-5, atol=1e-5)


def test_only_the_head_and_the_mix_train_and_encoder_dropout_stays_off():
    model = _model("scalar_mix", dropout_rate=0.0)
    names = [v.path.split("/", 1)[1] for v in model.trainable_variables]
    assert names == [
        "scalar_mix/scalar_weights",
        "scalar_mix/gamma",
        "classifier/logits/kernel",
        "classifier/logits/bias",
    ]
    assert model.encoder.trainable is False
    assert not any(v.trainable for v in model.encoder.weights)
    # The encoder's dropout (0.1) would make these differ if training=True reached it.
    inputs = random_inputs()
    np.testing.assert_array_equal(model(inputs, training=True), model(inputs, training=True))
    np.testing.assert_array_equal(model(inputs, training=True), model(inputs, training=False))


def test_keras_file_round_trip_keeps_the_encoder_frozen(tmp_path):
    model = _model("scalar_mix")
    model.scalar_mix.scalar_weights.assign([1.0, 0.0, -1.0, 2.0])
    inputs = random_inputs()
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert type(loaded) is FeatureBasedClassifier and loaded.encoder.trainable is False
    assert len(loaded.trainable_variables) == 4  # the mix's 2 and the head's 2
    np.testing.assert_array_equal(loaded(inputs), model(inputs))
    np.testing.assert_allclose(
        loaded.scalar_mix.normalized_weights, model.scalar_mix.normalized_weights
    )


def test_bad_features_are_clear_errors():
    with pytest.raises(ValueError, match="features must be one of"):
        _model("pooled")
    with pytest.raises(ValueError, match="at least 4 layers; this one has 2"):
        _model("concat_last4", num_layers=2)
