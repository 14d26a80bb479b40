"""scalar_mix_weights.json: a learned ScalarMix written for inspection and read back for features.

run_classifier.py --feature_mode=frozen_scalar_mix writes it; extract_features.py
--scalar_mix_weights reads it. The format:

  {"layers": N, "layer_weights": [N floats: softmax(w), non-negative, summing to 1],
   "gamma": float}

layer_weights[i] is the weight of encoder layer i (0 = the first transformer layer, N-1 = the
last), the order of BertEncoder's `encoder_outputs`.
"""

from __future__ import annotations

import json
import math

import numpy as np
import tensorflow as tf

from official_bert.config import write_text_atomically
from official_bert.layers.scalar_mix import ScalarMix
from official_bert.utf8_text import read_json_file

SCALAR_MIX_WEIGHTS_FILE = "scalar_mix_weights.json"


def write_scalar_mix_weights(path: str, scalar_mix: ScalarMix) -> dict:
    """Writes a built ScalarMix's normalized weights and gamma to `path` (atomically).

    Returns the dict written."""
    values = {
        "layers": scalar_mix.num_layers,
        "layer_weights": [float(value) for value in scalar_mix.normalized_weights],
        "gamma": scalar_mix.gamma_value,
    }
    write_text_atomically(path, json.dumps(values, indent=2) + "\n")
    return values


def read_scalar_mix_weights(path: str, num_layers: int) -> tuple[np.ndarray, float]:
    """(layer_weights float64 [num_layers], gamma) from `path`, checked against the model.

    Raises:
      FileNotFoundError: no file at `path`.
      ValueError: not the format above (naming the field), or written for a model with another
        number of layers.
    """
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"scalar mix weights file not found: {path}")
    values = read_json_file(path, ValueError)
    if not isinstance(values, dict) or not {"layers", "layer_weights", "gamma"} <= set(values):
        raise ValueError(
            f"{path}: expected a JSON object with 'layers', 'layer_weights' and 'gamma' (as "
            f"run_classifier.py --feature_mode=frozen_scalar_mix writes); got {str(values)[:200]}"
        )
    weights = values["layer_weights"]
    if not isinstance(weights, list) or not all(
        isinstance(value, int | float) and not isinstance(value, bool) for value in weights
    ):
        raise ValueError(f"{path}: 'layer_weights' must be a list of numbers, got {weights!r}")
    if values["layers"] != len(weights):
        raise ValueError(
            f"{path}: 'layers' is {values['layers']} but 'layer_weights' has {len(weights)} entries"
        )
    if len(weights) != num_layers:
        raise ValueError(
            f"{path} holds weights of {len(weights)} layers, but the model has {num_layers} "
            "encoder layers (was it written for another model?)"
        )
    weights = np.asarray(weights, np.float64)
    if not np.all(np.isfinite(weights)) or np.any(weights < 0) or abs(weights.sum() - 1) > 1e-4:
        raise ValueError(
            f"{path}: 'layer_weights' must be non-negative and sum to 1 (softmax-normalized), "
            f"got {weights.tolist()} (sum {weights.sum()})"
        )
    gamma = values["gamma"]
    if isinstance(gamma, bool) or not isinstance(gamma, int | float) or not math.isfinite(gamma):
        raise ValueError(f"{path}: 'gamma' must be a finite number, got {gamma!r}")
    return weights, float(gamma)


def load_scalar_mix(path: str, num_layers: int, **kwargs) -> ScalarMix:
    """A fixed (not trainable), built ScalarMix that mixes as the one written at `path`.

    Keyword arguments (e.g. dtype) go to ScalarMix."""
    weights, gamma = read_scalar_mix_weights(path, num_layers)
    # softmax(log p) = p; a weight of 0 becomes -inf, whose softmax weight is exactly 0.
    with np.errstate(divide="ignore"):
        logits = np.log(weights)
    scalar_mix = ScalarMix(
        num_layers, initial_weights=logits.tolist(), initial_gamma=gamma, trainable=False, **kwargs
    )
    scalar_mix.build()
    return scalar_mix
