"""PackedBitsDropout (fast) against its plain twin keras.layers.Dropout: rate, scaling,
gradient, config and checkpoint layout."""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert.kernels import (
    BatchedMatmulAttention,
    PackedBitsDropout,
    ReplicaDropout,
    fast_kernels,
)
from official_bert.kernels.packed_bits_dropout import dropout_layer
from official_bert.layers import SelfAttention
from tests.conftest import assert_config_round_trip


def _layout(layer, rename=None):
    """Variable paths without Keras's global uniquifying counters (seed_generator_12)."""
    paths = [re.sub(r"_\d+(?=/|$)", "", v.path) for v in layer.variables]
    return [p.replace(*rename) for p in paths] if rename else paths


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_drops_at_the_rate_and_scales_the_rest(dtype, rate):
    layer = PackedBitsDropout(rate, seed=7, dtype=dtype)
    # An odd element count: the last 32-bit draw is only half used.
    x = tf.cast(tf.fill([3, 101, 333], 2.0), dtype)
    y = tf.cast(layer(x, training=True), tf.float64).numpy()
    kept = y != 0
    # 100,899 Bernoulli draws: 5 standard deviations of the kept fraction is < 0.008.
    sd = np.sqrt(rate * (1 - rate) / kept.size)
    assert abs(kept.mean() - (1 - rate)) < 5 * sd
    expected = float(tf.cast(tf.cast(2.0 / (1 - rate), dtype), tf.float64))
    np.testing.assert_array_equal(y[kept], expected)
    assert layer(x, training=True).dtype == x.dtype


def test_inference_is_the_identity_and_training_masks_differ_per_call():
    layer = PackedBitsDropout(0.1, seed=3)
    x = tf.random.stateless_normal([8, 64], seed=[1, 2])
    np.testing.assert_array_equal(layer(x), x)
    np.testing.assert_array_equal(layer(x, training=False), x)
    first, second = layer(x, training=True), layer(x, training=True)
    assert not np.array_equal(first, second)
    # The same seed gives the same sequence of masks.
    again = PackedBitsDropout(0.1, seed=3)
    np.testing.assert_array_equal(again(x, training=True), first)


def test_gradient_is_the_mask_times_the_scale():
    layer = PackedBitsDropout(0.25, seed=11)
    x = tf.random.stateless_normal([16, 40], seed=[3, 4])

    @tf.function
    def forward_and_gradient(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, training=True)
        return y, tape.gradient(y, x)

    y, gradient = forward_and_gradient(x)
    mask = (y.numpy() != 0).astype(np.float32)
    np.testing.assert_allclose(gradient, mask / 0.75, rtol=1e-6)


def test_same_config_and_checkpoint_layout_as_keras_dropout():
    ours, theirs = PackedBitsDropout(0.1, seed=5, name="d"), keras.layers.Dropout(0.1, name="d")
    assert _layout(ours) == _layout(theirs) == ["seed_generator/seed_generator_state"]
    config = ours.get_config()
    assert config["rate"] == 0.1 and config["seed"] == 5
    assert_config_round_trip(ours)
    # With a noise_shape (not used by BERT) it is Keras's dropout: one mask per row.
    rows = PackedBitsDropout(0.5, noise_shape=(4, 1), seed=1)(tf.ones([4, 6]), training=True)
    assert all(len(set(row)) == 1 for row in np.asarray(rows).tolist())


def test_batched_matmul_attention_is_the_plain_attention_with_the_packed_dropout():
    kwargs = dict(num_heads=2, key_dim=8, dropout=0.1, seed=1)
    ours, theirs = BatchedMatmulAttention(**kwargs), SelfAttention(**kwargs)
    x = tf.random.stateless_normal([2, 5, 16], seed=[5, 6])
    mask = tf.constant(np.tril(np.ones([5, 5], bool))[None].repeat(2, 0))
    ours(x, x, attention_mask=mask), theirs(x, x, attention_mask=mask)
    assert isinstance(ours._dropout_layer, PackedBitsDropout)
    assert _layout(ours) == _layout(theirs, ("self_attention", "batched_matmul_attention"))
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(
        ours(x, x, attention_mask=mask), theirs(x, x, attention_mask=mask), atol=1e-6
    )
    trained = ours(x, x, attention_mask=mask, training=True)
    assert not np.allclose(trained, ours(x, x, attention_mask=mask), atol=1e-3)


def test_dropout_layer_is_the_plain_dropout_unless_the_fast_kernels_are_on():
    with fast_kernels(False):
        plain = dropout_layer(0.1, name="d")
    with fast_kernels(True):
        fast = dropout_layer(0.1, name="d")
    assert type(plain) is ReplicaDropout and type(fast) is PackedBitsDropout
    assert plain.get_config() == fast.get_config()
