"""BatchedMatmulAttention (fast) against its plain twin SelfAttention (Keras's
MultiHeadAttention): probabilities, outputs and gradients."""

import numpy as np
import pytest
import tensorflow as tf

from official_bert.kernels import BatchedMatmulAttention
from official_bert.layers import SelfAttention


def _padding_and_causal_masks(batch=3, seq=6):
    lengths = np.array([6, 4, 1])[:batch]
    keys = np.arange(seq)[None, None, :] < lengths[:, None, None]  # [batch, 1, seq]
    padding = np.broadcast_to(keys, (batch, seq, seq))
    causal = padding & np.tril(np.ones((seq, seq), bool))[None]
    return padding, causal


@pytest.mark.parametrize("dtype, atol", [("float32", 1e-6), ("bfloat16", 2e-2)])
def test_probabilities_and_outputs_equal_keras_with_padding_and_causal_masks(dtype, atol):
    kwargs = dict(num_heads=2, key_dim=4, dtype=dtype)
    ours, theirs = BatchedMatmulAttention(**kwargs), SelfAttention(**kwargs)
    x = tf.cast(tf.random.stateless_normal([3, 6, 8], seed=[7, 8]) * 3, dtype)
    ours(x, x), theirs(x, x)
    theirs.set_weights(ours.get_weights())
    for mask in _padding_and_causal_masks():
        mask = tf.constant(mask)
        y_ours, p_ours = ours(x, x, attention_mask=mask, return_attention_scores=True)
        y_theirs, p_theirs = theirs(x, x, attention_mask=mask, return_attention_scores=True)
        p_ours = tf.cast(p_ours, tf.float32).numpy()
        np.testing.assert_allclose(p_ours, tf.cast(p_theirs, tf.float32), atol=atol)
        np.testing.assert_allclose(
            tf.cast(y_ours, tf.float32), tf.cast(y_theirs, tf.float32), atol=atol * 10
        )
        # Masked keys get exactly zero probability, rows sum to one.
        assert np.all(p_ours[np.broadcast_to(~mask.numpy()[:, None], p_ours.shape)] == 0)
        np.testing.assert_allclose(p_ours.sum(-1), 1.0, atol=atol * 10)


def test_a_row_with_every_key_masked_gets_the_unmasked_softmax_as_the_original():
    attention = BatchedMatmulAttention(num_heads=1, key_dim=4)
    x = tf.random.stateless_normal([1, 3, 4], seed=[1, 1])
    mask = tf.constant([[[True, True, False], [False, False, False], [True, False, False]]])
    _, probabilities = attention(x, x, attention_mask=mask, return_attention_scores=True)
    _, unmasked = attention(x, x, return_attention_scores=True)
    # float32 keeps the scores to ~1e-3 next to -10000.
    np.testing.assert_allclose(probabilities[0, 0, 1], unmasked[0, 0, 1], atol=2e-3)
    np.testing.assert_allclose(probabilities[0, 0, 2], [1.0, 0.0, 0.0], atol=1e-6)


def test_masked_softmax_gradient_equals_keras():
    ours = BatchedMatmulAttention(num_heads=2, key_dim=4)
    theirs = SelfAttention(num_heads=2, key_dim=4)
    x = tf.random.stateless_normal([3, 6, 8], seed=[3, 3])
    ours(x, x), theirs(x, x)
    theirs.set_weights(ours.get_weights())
    mask = tf.constant(_padding_and_causal_masks()[0])
    gradients = []
    for layer in (ours, theirs):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(tf.sin(layer(x, x, attention_mask=mask)))
        gradients.append(tape.gradient(loss, [x, *layer.trainable_weights]))
    for a, b in zip(*gradients, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_heads_products_are_matmuls_and_keras_paths_stay_for_causal_and_other_axes():
    x = tf.random.stateless_normal([2, 5, 8], seed=[4, 4])
    mask = tf.constant(_padding_and_causal_masks(batch=2, seq=5)[0])
    ours = BatchedMatmulAttention(num_heads=2, key_dim=4, dropout=0.5)
    ours(x, x)

    def forward_and_backward(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = ours(x, x, attention_mask=mask, training=True)
        return tape.gradient(tf.reduce_sum(y), x)

    graph = tf.function(forward_and_backward).get_concrete_function(x).graph
    assert "Einsum" not in {op.type for op in graph.get_operations()}

    # Dropout acts in training only; without it the layer is Keras's, dropout rate and all.
    theirs = SelfAttention(num_heads=2, key_dim=4, dropout=0.5)
    theirs(x, x)
    theirs.set_weights(ours.get_weights())
    inference = ours(x, x, attention_mask=mask)
    np.testing.assert_allclose(inference, theirs(x, x, attention_mask=mask), atol=1e-6)
    assert np.abs(ours(x, x, attention_mask=mask, training=True) - inference).max() > 1e-3

    # use_causal_mask and attention over two axes take Keras's own code, with the same results.
    np.testing.assert_allclose(
        ours(x, x, use_causal_mask=True), theirs(x, x, use_causal_mask=True), atol=1e-6
    )
    grid = tf.random.stateless_normal([2, 3, 4, 8], seed=[5, 5])
    kwargs = dict(num_heads=2, key_dim=4, attention_axes=(1, 2))
    ours_2d, theirs_2d = BatchedMatmulAttention(**kwargs), SelfAttention(**kwargs)
    ours_2d(grid, grid), theirs_2d(grid, grid)
    theirs_2d.set_weights(ours_2d.get_weights())
    np.testing.assert_allclose(ours_2d(grid, grid), theirs_2d(grid, grid), atol=1e-6)
