"""The original BERT's tanh GELU with a hand-written, XLA-fused gradient (a speed path: the
plain twin is keras.activations.gelu(x, approximate=True))."""

import math

import tensorflow as tf

# tanh-form GELU as x * sigmoid(x * (_GELU_A + _GELU_B * x^2)), since 0.5 * (1 + tanh(u)) equals
# sigmoid(2u) and u = sqrt(2 / pi) * (x + 0.044715 x^3).
_GELU_A = 2.0 * math.sqrt(2.0 / math.pi)
_GELU_B = _GELU_A * 0.044715


def _gelu_tanh_gate(x, x_squared):
    """sigmoid(x * (A + B x^2)), the factor gelu_tanh multiplies x by."""
    return tf.sigmoid(x * (_GELU_A + _GELU_B * x_squared))


@tf.function(jit_compile=True, autograph=False)  # straight-line code
def _gelu_tanh_gradient(x, dy):
    """dy * d/dx gelu_tanh(x) for float32 x, dy; compiled by XLA into one element-wise loop.

    d/dx [x * s(z)] = s + x * s * (1 - s) * dz/dx, with dz/dx = A + 3 B x^2. The forward's
    sigmoid is recomputed here rather than kept: with XLA fusing the whole expression, reading x
    and dy once is cheaper than the element-wise passes TensorFlow would make over stored
    intermediates.
    """
    x_squared = tf.square(x)
    gate = _gelu_tanh_gate(x, x_squared)
    y = x * gate
    return dy * (gate + y * (1.0 - gate) * (_GELU_A + 3.0 * _GELU_B * x_squared))


@tf.custom_gradient
def gelu_tanh(x):
    """The original BERT's GELU (tanh approximation), with a hand-written, XLA-fused gradient.

    Same values as `keras.activations.gelu(x, approximate=True)` (to float rounding), for
    fewer element-wise passes: Keras's form costs a Pow forward and another in its autodiff
    gradient; here the forward is square, multiply-add, sigmoid, multiply (plain TensorFlow
    ops, so serving the model needs no XLA), and the gradient is one XLA-compiled loop over x
    and dy (`_gelu_tanh_gradient`; it only runs in training, where XLA is always available).
    16-bit inputs are computed in float32 (cast in and out): on a CPU that is faster than
    bfloat16 element-wise math and keeps the gradient as accurate as Keras's. Written by hand
    because neither Keras nor TensorFlow has a fused tanh-GELU gradient.

    Args:
      x: float tensor of any shape and dtype.

    Returns:
      a tensor of x's shape and dtype.
    """
    x32 = tf.cast(x, tf.float32)
    y = x32 * _gelu_tanh_gate(x32, tf.square(x32))

    def gradient(dy):
        return tf.cast(_gelu_tanh_gradient(x32, tf.cast(dy, tf.float32)), x.dtype)

    return tf.cast(y, x.dtype), gradient
