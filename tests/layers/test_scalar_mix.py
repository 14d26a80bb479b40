"""ScalarMix: ELMo's softmax-weighted, gamma-scaled sum of layers."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert.layers import ScalarMix
from tests.conftest import assert_config_round_trip


def _layers(num_layers=3, shape=(2, 5, 8), seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape).astype(np.float32) for _ in range(num_layers)]


@pytest.mark.parametrize("chosen", [0, 1, 2])
def test_one_hot_weights_pick_one_layer_times_gamma(chosen):
    layers = _layers()
    initial = [-1e9, -1e9, -1e9]
    initial[chosen] = 0.0
    mix = ScalarMix(3, initial_weights=initial, initial_gamma=2.5)
    mixed = mix(layers)
    np.testing.assert_allclose(mixed, 2.5 * layers[chosen], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(mix.normalized_weights, np.eye(3, dtype=np.float32)[chosen])
    assert mix.gamma_value == 2.5


def test_default_weights_give_the_mean_and_assigned_weights_their_softmax():
    layers = _layers(num_layers=4)
    mix = ScalarMix(4)
    np.testing.assert_allclose(mix(layers), np.mean(layers, axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mix.normalized_weights, [0.25] * 4, atol=1e-7)

    logits = np.array([0.3, -1.0, 2.0, 0.5], np.float32)
    mix.scalar_weights.assign(logits)
    mix.gamma.assign(0.7)
    expected_weights = np.exp(logits) / np.exp(logits).sum()
    np.testing.assert_allclose(mix.normalized_weights, expected_weights, rtol=1e-6)
    expected = 0.7 * sum(w * layer for w, layer in zip(expected_weights, layers, strict=True))
    np.testing.assert_allclose(mix(layers), expected, rtol=1e-5, atol=1e-6)


def test_gradients_reach_the_weights_and_gamma():
    layers = [tf.constant(layer) for layer in _layers()]
    mix = ScalarMix(3, initial_weights=[0.1, -0.2, 0.3])
    target = tf.constant(_layers(num_layers=1, seed=1)[0])
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((mix(layers) - target) ** 2)
    gradients = tape.gradient(loss, [mix.scalar_weights, mix.gamma])
    assert [v.path.split("/")[-1] for v in mix.trainable_variables] == ["scalar_weights", "gamma"]
    for gradient in gradients:
        values = np.asarray(gradient)
        assert np.all(np.isfinite(values)) and np.all(values != 0), values
    # The softmax weights' gradients sum to 0 (adding a constant to w changes nothing).
    assert abs(float(tf.reduce_sum(gradients[0]))) < 1e-6


@pytest.mark.parametrize("policy", ["mixed_float16", "float32"])
def test_float16_inputs_give_float16_outputs_and_float32_variables(policy):
    layers = [tf.constant(layer, tf.float16) for layer in _layers()]
    mix = ScalarMix(3, initial_weights=[1.0, 0.0, -1.0], dtype=policy)
    mixed = mix(layers)
    assert mixed.dtype == tf.float16 and mixed.shape == (2, 5, 8)
    assert {v.dtype for v in mix.weights} == {"float32"}
    reference = ScalarMix(3, initial_weights=[1.0, 0.0, -1.0])([np.float32(x) for x in layers])
    assert reference.dtype == tf.float32
    np.testing.assert_allclose(np.float32(mixed), reference, atol=1e-2)


def test_not_trainable_has_no_trainable_weights():
    mix = ScalarMix(2, trainable=False)
    mix.build()
    assert mix.trainable_weights == [] and len(mix.non_trainable_weights) == 2


def test_config_round_trip_through_keras_serialization():
    mix = ScalarMix(3, initial_weights=[0.5, 0.0, -0.5], initial_gamma=1.5, name="mix")
    assert_config_round_trip(mix)
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(mix))
    assert type(clone) is ScalarMix and clone.get_config() == mix.get_config()
    layers = _layers()
    np.testing.assert_allclose(clone(layers), mix(layers), rtol=1e-6)


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="initial_weights has 2 entries, expected num_layers=3"):
        ScalarMix(3, initial_weights=[0.0, 0.0])
    with pytest.raises(ValueError, match="at least one layer"):
        ScalarMix(0)
    with pytest.raises(ValueError, match="takes a list of 3 tensors, got 2"):
        ScalarMix(3)(_layers(num_layers=2))
