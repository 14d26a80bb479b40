"""Activation functions by name, as the different BERT weight layouts spell them.

The original BERT calls the tanh approximation of GELU "gelu" (modeling.gelu); Hugging Face
configs call the exact erf form "gelu" and the tanh form "gelu_new". Our BertConfig uses the
original names, plus "gelu_exact" for the erf form; converters map the other layouts' names.
"""

import keras

from official_bert.kernels.gelu_gradient import gelu_tanh
from official_bert.kernels.switch import fast_kernels_enabled


def _plain_gelu_tanh(x):
    """The original's modeling.gelu (tanh form), as Keras computes it."""
    return keras.activations.gelu(x, approximate=True)


_ACTIVATIONS = {
    "gelu": _plain_gelu_tanh,
    "gelu_exact": lambda x: keras.activations.gelu(x, approximate=False),
    "relu": keras.activations.relu,
    "tanh": keras.activations.tanh,
    "linear": keras.activations.linear,
    "swish": keras.activations.silu,
}
# Other spellings accepted in a bert_config.json, mapped to the names above.
_ALIASES = {"gelu_new": "gelu", "gelu_tanh": "gelu", "gelu_erf": "gelu_exact", "silu": "swish"}


def canonical_activation_name(name: str) -> str:
    """Returns our name for an activation, or raises ValueError naming the known ones.

    Only names: a config must serialize, and a name says which GELU form a checkpoint
    was trained with (a Python function does not); a callable raises TypeError.
    """
    if name is not None and not isinstance(name, str):
        known = sorted(set(_ACTIVATIONS) | set(_ALIASES))
        raise TypeError(f"activation must be a name, one of {known}; got {name!r}")
    key = (name or "linear").lower()
    key = _ALIASES.get(key, key)
    if key not in _ACTIVATIONS:
        known = sorted(set(_ACTIVATIONS) | set(_ALIASES))
        raise ValueError(f"unknown activation {name!r}; expected one of {known}")
    return key


def get_activation(name: str):
    """The activation function for `name` (original BERT naming: "gelu" is the tanh form).

    With the fast kernels on (official_bert.kernels.use_fast_kernels), "gelu" is the same
    function with a fused gradient (official_bert.kernels.gelu_gradient.gelu_tanh).
    """
    key = canonical_activation_name(name)
    if key == "gelu" and fast_kernels_enabled():
        return gelu_tanh
    return _ACTIVATIONS[key]
