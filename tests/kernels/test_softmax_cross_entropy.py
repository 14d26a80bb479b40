"""fast_sparse_softmax_cross_entropy against its plain twin, TensorFlow's fused op: values and
gradients; sparse_softmax_cross_entropy picks one by the switch."""

import numpy as np
import pytest
import tensorflow as tf

from official_bert.kernels import fast_kernels
from official_bert.kernels.softmax_cross_entropy import (
    fast_sparse_softmax_cross_entropy,
    sparse_softmax_cross_entropy,
)


def _loss_and_gradient(function, labels, logits, weights, compile_mode):
    def run(logits):
        with tf.GradientTape() as tape:
            tape.watch(logits)
            loss = tf.reduce_sum(weights * function(labels=labels, logits=logits))
        return loss, tape.gradient(loss, logits)

    if compile_mode is not None:
        run = tf.function(run, jit_compile=compile_mode == "xla")
    loss, gradient = run(logits)
    return loss.numpy(), gradient.numpy()


@pytest.mark.parametrize("compile_mode", [None, "graph", "xla"])
def test_equals_the_fused_op_in_value_and_gradient(compile_mode):
    rng = np.random.default_rng(0)
    logits = rng.normal(0.0, 4.0, (3, 5, 997)).astype(np.float32)
    labels = rng.integers(0, 997, (3, 5)).astype(np.int32)
    # A label whose probability underflows to 0 in float32 (loss about 300) and a confident one.
    logits[0, 0, labels[0, 0]] = -250.0
    logits[1, 2, labels[1, 2]] = 60.0
    weights = rng.uniform(0.0, 2.0, (3, 5)).astype(np.float32)
    ours = _loss_and_gradient(
        fast_sparse_softmax_cross_entropy, labels, tf.constant(logits), weights, compile_mode
    )
    fused = _loss_and_gradient(
        tf.nn.sparse_softmax_cross_entropy_with_logits,
        labels,
        tf.constant(logits),
        weights,
        compile_mode,
    )
    np.testing.assert_allclose(ours[0], fused[0], rtol=1e-6)
    np.testing.assert_allclose(ours[1], fused[1], rtol=0, atol=1e-6)
    per_label = fast_sparse_softmax_cross_entropy(labels, logits).numpy()
    assert per_label.shape == (3, 5)
    assert per_label[0, 0] > 250 and np.isfinite(per_label).all()
    assert per_label[1, 2] < 1e-6


def test_out_of_range_label_is_an_error():
    with pytest.raises(tf.errors.InvalidArgumentError):
        fast_sparse_softmax_cross_entropy(tf.constant([3]), tf.zeros([1, 3]))


def test_the_switch_picks_the_fast_form_when_on():
    logits = tf.random.stateless_normal([4, 50], seed=[1, 2])
    labels = tf.constant([0, 7, 49, 3])

    def ops_traced(enabled):
        with fast_kernels(enabled):
            graph = (
                tf.function(sparse_softmax_cross_entropy)
                .get_concrete_function(labels, logits)
                .graph
            )
        return {op.type for op in graph.get_operations()}

    assert "SparseSoftmaxCrossEntropyWithLogits" in ops_traced(False)
    assert "SparseSoftmaxCrossEntropyWithLogits" not in ops_traced(True)
    with fast_kernels(True):
        fast = sparse_softmax_cross_entropy(labels, logits)
    np.testing.assert_allclose(
        fast, tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits), rtol=1e-6
    )
