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
    with pytest.raises(TypeError, match="activation must be a name"):
        canonical_activation_name(get_activation("gelu"))
