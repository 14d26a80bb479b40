"""Softmax cross-entropy with integer labels over a large vocabulary, fast on CPU (a speed path:
the plain twin is tf.nn.sparse_softmax_cross_entropy_with_logits).

Written by hand because TensorFlow's SparseSoftmaxCrossEntropyWithLogits kernel (Eigen) is
several times slower on x86 CPUs than the oneDNN softmax that `tf.nn.softmax` runs, and the
masked-LM logits of a pre-training step are large (640 predictions x 30,522 words; figures:
bench/RESULTS.md). Same values (to float32 rounding) and the same gradient formula,
softmax - one_hot; XLA compiles it as well as the fused op.
"""

from __future__ import annotations

import tensorflow as tf

from official_bert.kernels.switch import fast_kernels_enabled


def sparse_softmax_cross_entropy(labels, logits):
    """-log softmax(logits)[label] along the last axis: the hand-written form below when the
    fast kernels are on (read when the caller is traced), else
    tf.nn.sparse_softmax_cross_entropy_with_logits.

    labels: int [...] in [0, num_classes); logits: float [..., num_classes]. Returns float [...]
    in the logits' dtype.
    """
    if fast_kernels_enabled():
        return fast_sparse_softmax_cross_entropy(labels, logits)
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


def fast_sparse_softmax_cross_entropy(labels, logits):
    """-log softmax(logits)[label] along the last axis, as
    tf.nn.sparse_softmax_cross_entropy_with_logits, with a softmax that is fast on CPU.

    labels: int [...] in [0, num_classes) (out-of-range labels are an error on CPU, as
      tf.gather's); logits: float [..., num_classes]. Returns float [...] in the logits' dtype.

    The loss is (max(logits) - logits[label]) - log(max(softmax)): with S the softmax's
    normalizer sum(exp(logits - max)), the largest probability is 1 / S, so this is the usual
    log(S) - (logits[label] - max) without a second pass of exponentials, and it stays exact
    where the label's own probability underflows to 0.
    """
    labels = tf.convert_to_tensor(labels)
    logits = tf.convert_to_tensor(logits)
    num_classes = tf.shape(logits)[-1]
    flat_labels = tf.reshape(tf.cast(labels, tf.int32), [-1])
    flat_logits = tf.reshape(logits, [-1, num_classes])
    loss = _flat_cross_entropy(flat_logits, flat_labels)
    return tf.reshape(loss, tf.shape(labels))


@tf.custom_gradient
def _flat_cross_entropy(logits, labels):
    """logits [n, classes], labels int32 [n] -> loss [n]; gradient softmax - one_hot."""
    probabilities = tf.nn.softmax(logits)
    label_logits = tf.gather(logits, labels, axis=1, batch_dims=1)
    loss = (tf.reduce_max(logits, axis=-1) - label_logits) - tf.math.log(
        tf.reduce_max(probabilities, axis=-1)
    )

    def gradient(upstream):
        rows = tf.range(tf.shape(labels)[0])
        indices = tf.stack([rows, labels], axis=1)
        minus_one_hot = tf.tensor_scatter_nd_sub(probabilities, indices, tf.ones_like(label_logits))
        return minus_one_hot * upstream[:, None], None

    return loss, gradient
