"""FoldedEinsumDense (fast) against its plain twin keras.layers.EinsumDense: values, gradients,
weights and the ops it runs."""

import keras
import pytest
import tensorflow as tf

from official_bert.kernels import BatchedMatmulAttention, FoldedEinsumDense
from official_bert.kernels.folded_einsum_dense import _fold_plan
from tests.conftest import assert_twin_layers_agree, forward_and_backward_op_types

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
    assert_twin_layers_agree(
        keras.layers.EinsumDense(equation, output_shape, **kwargs),
        FoldedEinsumDense(equation, output_shape, **kwargs),
        shape,
    )


def test_projection_and_its_gradient_are_plain_matmuls():
    layer = FoldedEinsumDense("abc,cde->abde", (None, 4, 8), bias_axes="de")
    layer.build((None, None, 32))
    ops = forward_and_backward_op_types(layer, tf.TensorSpec([None, None, 32]))
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
