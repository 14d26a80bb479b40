import math

import numpy as np
import pytest

from official_bert.activations import canonical_activation_name, get_activation


def _tanh_gelu(x):
    # modeling.gelu of the original BERT.
    return 0.5 * x * (1.0 + math.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _erf_gelu(x):
    return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))


def test_original_gelu_is_the_tanh_form_and_gelu_exact_the_erf_form():
    xs = np.array([-3.0, -1.0, -0.5, 0.0, 0.7, 2.0, 4.0], np.float32)
    tanh_form = np.asarray(get_activation("gelu")(xs))
    erf_form = np.asarray(get_activation("gelu_exact")(xs))
    np.testing.assert_allclose(tanh_form, [_tanh_gelu(x) for x in xs], atol=1e-6)
    np.testing.assert_allclose(erf_form, [_erf_gelu(x) for x in xs], atol=1e-6)
    assert np.abs(tanh_form - erf_form).max() > 1e-4  # they really differ


def test_aliases_and_unknown_names():
    assert canonical_activation_name("gelu_new") == "gelu"
    assert canonical_activation_name("GELU_ERF") == "gelu_exact"
    assert canonical_activation_name("silu") == "swish"
    with pytest.raises(ValueError, match="unknown activation 'mish'"):
        get_activation("mish")


def _tanh_gelu_derivative(x):
    # d/dx of the original's formula, by hand: 0.5 (1 + t) + 0.5 x (1 - t^2) u'(x).
    c = math.sqrt(2 / math.pi)
    t = math.tanh(c * (x + 0.044715 * x**3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x**2)


@pytest.mark.parametrize("dtype, atol", [("float32", 2e-6), ("bfloat16", 1e-2)])
def test_gelu_hand_written_gradient_matches_the_original_formula(dtype, atol):
    import tensorflow as tf

    xs = np.linspace(-9.0, 9.0, 721).astype(np.float32)
    x = tf.cast(tf.constant(xs), dtype)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = get_activation("gelu")(x)
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
