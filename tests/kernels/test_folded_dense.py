"""FoldedDense (fast) against its plain twin keras.layers.Dense: values, gradients, weights,
the ops it runs, and where the fast kernels put it."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert.kernels import FoldedDense, dense_layer
from official_bert.kernels.switch import fast_kernels
from official_bert.layers.transformer_block import TransformerBlock
from tests.conftest import assert_twin_layers_agree, forward_and_backward_op_types

# (input shape, units, use_bias, activation)
CASES = [
    ((3, 7, 16), 9, True, "gelu"),  # a feed-forward's first product
    ((3, 7, 16), 16, True, None),  # its second
    ((2, 3, 4, 16), 5, True, "tanh"),  # more leading axes
    ((3, 7, 16), 9, False, None),  # no bias
    ((6, 16), 9, True, "relu"),  # rank 2: Keras's own path
]


@pytest.mark.parametrize("shape, units, use_bias, activation", CASES)
def test_same_values_and_gradients_as_dense(shape, units, use_bias, activation):
    kwargs = dict(
        use_bias=use_bias, activation=activation, bias_initializer="glorot_uniform", name="dense"
    )
    assert_twin_layers_agree(
        keras.layers.Dense(units, **kwargs), FoldedDense(units, **kwargs), shape
    )


def test_mixed_bfloat16_computes_in_bfloat16_as_dense():
    kwargs = dict(activation="gelu", dtype="mixed_bfloat16", name="dense")
    theirs, ours = keras.layers.Dense(12, **kwargs), FoldedDense(12, **kwargs)
    x = tf.random.stateless_normal((2, 5, 8), seed=[5, 6])
    theirs(x), ours(x)
    ours.set_weights(theirs.get_weights())
    assert ours.kernel.dtype == "float32"
    a, b = theirs(x), ours(x)
    assert b.dtype == a.dtype == tf.bfloat16
    np.testing.assert_allclose(tf.cast(b, tf.float32), tf.cast(a, tf.float32), atol=2e-2)


def test_the_product_and_its_gradients_are_plain_matmuls():
    layer = FoldedDense(24)
    layer.build((None, None, 32))
    ops = forward_and_backward_op_types(layer, tf.TensorSpec([None, None, 32]))
    # Keras 3.12's Dense runs a broadcast BatchMatMulV2 whose kernel gradient sums over the
    # batch; Keras 3.15's adds the bias to the 3-D product, whose gradient is a Sum too.
    assert "MatMul" in ops and "BiasAdd" in ops and "BiasAddGrad" in ops
    assert "BatchMatMulV2" not in ops and "Sum" not in ops
    # Unknown batch and sequence lengths keep their static shape where known.
    assert layer(tf.zeros([2, 3, 32])).shape == (2, 3, 24)


def test_dense_layer_follows_the_switch_and_reaches_the_transformer_block():
    with fast_kernels(False):
        assert type(dense_layer(4)) is keras.layers.Dense
        plain = TransformerBlock(16, 2, 32, name="block")
    with fast_kernels(True):
        assert type(dense_layer(4)) is FoldedDense
        fast = TransformerBlock(16, 2, 32, name="block")
    assert type(plain.intermediate_dense) is keras.layers.Dense
    assert type(fast.intermediate_dense) is FoldedDense
    assert type(fast.output_dense) is FoldedDense
    for block in (plain, fast):
        block.build((None, None, 16))
    assert [v.path for v in fast.weights] == [v.path for v in plain.weights]
