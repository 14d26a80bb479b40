"""The product both folded projection layers run: leading axes folded into rows, one 2-D MatMul.

Keras's TensorFlow backend multiplies a [batch, seq, in] input by a 2-D kernel in one of two
ways, depending on the Keras release: `tf.tensordot` (a reshape to rows, a MatMul, a reshape
back: Keras 3.15's Dense) or a broadcast `BatchMatMulV2` (Keras 3.12's Dense, which Python
3.10 installs, and every release's EinsumDense). The broadcast product's kernel gradient is one
[in, out] product per batch row followed by a Sum over the batch, and oneDNN runs it slower
forward as well (bench/RESULTS.md). Folding the leading axes into rows gives one MatMul whose
gradients are two MatMuls, with the bias added to the 2-D product, where TensorFlow's graph
rewriter fuses it into the MatMul.
"""

from __future__ import annotations

import math

import tensorflow as tf


def folded_product(inputs, kernel, bias, contracted_axes: int):
    """inputs [*leading, *kernel.shape[:k]] times kernel [*contracted, *kept] (+ bias [*kept])
    -> [*leading, *kept] in inputs' dtype, with k = contracted_axes: the leading axes folded
    into rows of one 2-D MatMul and a BiasAdd. Static sizes of the leading axes are kept."""
    k = contracted_axes
    kept = kernel.shape[k:]
    rows = tf.reshape(inputs, [-1, math.prod(kernel.shape[:k])])
    y = tf.matmul(rows, tf.reshape(kernel, [rows.shape[-1], math.prod(kept)]))
    if bias is not None:
        y = tf.nn.bias_add(y, tf.reshape(bias, [-1]))
    y = tf.reshape(y, tf.concat([tf.shape(inputs)[: inputs.shape.rank - k], kept], 0))
    y.set_shape(inputs.shape[:-k].concatenate(kept))
    return y
