"""gelu_tanh (fast: XLA-fused gradient) against its plain twin keras.activations.gelu(x,
approximate=True) and against the original's formula (modeling.gelu), values and gradients."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert.activations import get_activation
from official_bert.kernels import fast_kernels, gelu_tanh


def _tanh_gelu(x):
    # modeling.gelu of the original BERT.
    return 0.5 * x * (1.0 + math.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _tanh_gelu_derivative(x):
    # d/dx of the original's formula, by hand: 0.5 (1 + t) + 0.5 x (1 - t^2) u'(x).
    c = math.sqrt(2 / math.pi)
    t = math.tanh(c * (x + 0.044715 * x**3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x**2)


def _value_and_gradient(function, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = function(x)
    return y, tape.gradient(y, x, tf.random.stateless_normal(x.shape, seed=[5, 6]))


def test_same_values_and_gradients_as_the_plain_gelu():
    x = tf.constant(np.linspace(-9.0, 9.0, 2001).astype(np.float32).reshape(3, 667))
    fast = _value_and_gradient(gelu_tanh, x)
    plain = _value_and_gradient(lambda v: keras.activations.gelu(v, approximate=True), x)
    # atol 1e-5: where x < -5 Keras's tanh rounds to -1 in float32 and its gradient to 0, while
    # the sigmoid form keeps the true value (a few 1e-6).
    for a, b in zip(fast, plain, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_get_activation_takes_the_fast_gelu_only_with_the_fast_kernels_on():
    with fast_kernels(False):
        plain = get_activation("gelu")
    with fast_kernels(True):
        fast = get_activation("gelu")
        assert get_activation("gelu_exact") is not gelu_tanh
    assert fast is gelu_tanh and plain is not gelu_tanh


@pytest.mark.parametrize("dtype, atol", [("float32", 2e-6), ("bfloat16", 1e-2)])
def test_hand_written_gradient_matches_the_original_formula(dtype, atol):
    xs = np.linspace(-9.0, 9.0, 721).astype(np.float32)
    x = tf.cast(tf.constant(xs), dtype)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = gelu_tanh(x)
    gradient = tape.gradient(y, x)
    assert y.dtype == x.dtype and gradient.dtype == x.dtype
    # Compared at the input as the dtype rounded it.
    rounded = tf.cast(x, tf.float64).numpy()
    np.testing.assert_allclose(
        tf.cast(y, tf.float64).numpy(), [_tanh_gelu(v) for v in rounded], atol=atol * 4
    )
    np.testing.assert_allclose(
        tf.cast(gradient, tf.float64).numpy(),
        [_tanh_gelu_derivative(v) for v in rounded],
        atol=atol,
    )
