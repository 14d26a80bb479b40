"""FoldedEinsumDense (fast) against its plain twin keras.layers.EinsumDense: values, gradients,
weights and the ops it runs."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert.kernels import BatchedMatmulAttention, FoldedEinsumDense
from official_bert.kernels.folded_einsum_dense import _fold_plan
from tests.conftest import assert_config_round_trip

# (equation, input shape, output_shape, bias_axes): the attention's projections first.
CASES = [
    ("abc,cde->abde", (3, 7, 16), (None, 4, 5), "de"),  # query / key / value
    ("abcd,cde->abe", (3, 7, 4, 5), (None, 16), "e"),  # attention output
    ("abc,cd->abd", (3, 7, 16), (None, 9), None),  # a Dense without bias
    ("abc,cde->abde", (3, 7, 16), (None, 4, 5), "e"),  # bias on some output axes: Keras's path
    ("abc,dce->abde", (3, 7, 16), (None, 4, 5), "de"),  # kernel not in order: Keras's path
]


def test_fold_plan_accepts_only_plain_projections():
    assert _fold_plan("abc,cde->abde") == 1
    assert _fold_plan("abcd,cde->abe") == 2
    assert _fold_plan("ab,bc->ac") == 1
    for equation in ("abc,dce->abde", "abc,cde->abed", "...b,bc->...c", "abc,cc->abc", "ab->ba"):
        assert _fold_plan(equation) is None, equation


@pytest.mark.parametrize("equation, shape, output_shape, bias_axes", CASES)
def test_same_values_and_gradients_as_einsum_dense(equation, shape, output_shape, bias_axes):
    kwargs = dict(bias_axes=bias_axes, bias_initializer="glorot_uniform", name="projection")
    theirs = keras.layers.EinsumDense(equation, output_shape, **kwargs)
    ours = FoldedEinsumDense(equation, output_shape, **kwargs)
    x = tf.random.stateless_normal(shape, seed=[1, 2])
    theirs(x), ours(x)
    assert [v.path for v in ours.weights] == [v.path for v in theirs.weights]
    ours.set_weights(theirs.get_weights())
    upstream = tf.random.stateless_normal(theirs(x).shape, seed=[3, 4])
    results = []
    for layer in (theirs, ours):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x)
        results.append([y, *tape.gradient(y, [x, *layer.trainable_weights], upstream)])
    for a, b in zip(*results, strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert_config_round_trip(ours)


def _op_types(fn, *specs):
    graph = tf.function(fn).get_concrete_function(*specs).graph
    return {op.type for op in graph.get_operations()}


def test_projection_and_its_gradient_are_plain_matmuls():
    layer = FoldedEinsumDense("abc,cde->abde", (None, 4, 8), bias_axes="de")
    layer.build((None, None, 32))

    def forward_and_backward(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x)
        return tape.gradient(y, [x, *layer.trainable_weights])

    ops = _op_types(forward_and_backward, tf.TensorSpec([None, None, 32]))
    # Keras's einsum path is a broadcast BatchMatMulV2 whose kernel gradient sums over the batch.
    assert "MatMul" in ops and "BiasAddGrad" in ops
    assert "BatchMatMulV2" not in ops and "Sum" not in ops
    # Unknown batch and sequence lengths keep their static shape where known.
    y = layer(tf.zeros([2, 3, 32]))
    assert y.shape == (2, 3, 4, 8)


def test_batched_matmul_attention_projections_are_folded():
    attention = BatchedMatmulAttention(num_heads=2, key_dim=8)
    x = tf.zeros([2, 5, 16])
    attention(x, x)
    for dense in (
        attention._query_dense,
        attention._key_dense,
        attention._value_dense,
        attention._output_dense,
    ):
        assert type(dense) is FoldedEinsumDense
