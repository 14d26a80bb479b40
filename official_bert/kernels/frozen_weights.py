"""oneDNN's frozen-weight products for processes that only infer, and the guard that keeps them
out of training.

TensorFlow's oneDNN matrix products (`MatMul`, and the fused MatMul + bias (+ GELU, + residual
add) its graph rewriter makes of them) treat their second operand as a weight that may change
from call to call, unless `TF_ONEDNN_ASSUME_FROZEN_WEIGHTS` is true in the environment when the
process builds its first such product. Then each product reorders its weight once, into the
blocked layout of oneDNN's brgemm kernels (AMX tiles for bfloat16), keeps that copy and computes
with it on every later call. For an encoder whose weights never change after its first call
(`FusedInferenceEncoder` extracting features or serving) that is the same arithmetic without a
reorder or a plain-layout kernel per call. Measured on an AVX-512 + AMX CPU it is much faster
in bfloat16 at every batch size, faster in float32 at batch 1 and slower in float32 at batch 32,
where the plain kernel suits thousands of rows better (bench/RESULTS.md, encoder_latency.py
--frozen_weights).

For anything whose weights change after the first product (training; evaluating between
training steps; loading other weights into a model that already ran) it is silently wrong: every
product keeps computing with the first weights it saw, and a gradient's product with an
activation keeps the first batch's. A tiny pre-training run's loss then barely falls. Intel's
published TensorFlow recipes export the variable for inference, so it can reach a training job
through a shared environment: `Runner.train` refuses to start and `AdamWeightDecay` to update
while it is set (`refuse_frozen_weight_products`).

TensorFlow reads the variable once per process, at the first product it builds, so
`use_frozen_weight_products` must come before the process runs any model; setting or clearing it
later changes nothing in that process. It has no effect where TensorFlow does not use oneDNN
(`TF_ENABLE_ONEDNN_OPTS=0`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

FROZEN_WEIGHTS_VARIABLE = "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS"
ONEDNN_VARIABLE = "TF_ENABLE_ONEDNN_OPTS"


def _environment_bool(environ: Mapping[str, str], name: str, default: bool) -> bool:
    """`name` read as TensorFlow's ReadBoolFromEnvVar reads it: unset = default; 0, 1, false or
    true in any case; ValueError for anything else (where TensorFlow would stop the process at
    its first product)."""
    value = environ.get(name)
    if value is None:
        return default
    if value.lower() in ("1", "true"):
        return True
    if value.lower() in ("0", "false"):
        return False
    raise ValueError(
        f"{name}={value!r} in the environment: TensorFlow reads it as a boolean and takes only "
        "0, 1, false or true"
    )


def frozen_weight_products_requested(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment (default os.environ) asks TensorFlow's oneDNN products to keep the
    first weights they see: TF_ONEDNN_ASSUME_FROZEN_WEIGHTS true and oneDNN not switched off.
    ValueError where TF_ONEDNN_ASSUME_FROZEN_WEIGHTS holds a value TensorFlow cannot read."""
    environ = os.environ if environ is None else environ
    frozen = _environment_bool(environ, FROZEN_WEIGHTS_VARIABLE, default=False)
    try:
        onednn = _environment_bool(environ, ONEDNN_VARIABLE, default=True)
    except ValueError:
        onednn = True  # TensorFlow warns and keeps its default (on in its x86 builds).
    return frozen and onednn


def use_frozen_weight_products(
    enabled: bool | None = True,
    *,
    default: bool = False,
    environ: MutableMapping[str, str] | None = None,
) -> bool:
    """Asks TensorFlow's oneDNN products to reorder each weight once and keep it (True), or to
    treat weights as changing (False). None keeps a choice already in the environment and
    otherwise makes `default` (a script's flag left unset). Returns whether the environment
    asks for frozen-weight products now.

    Only for a process that never changes a weight after its first product (see the module's
    docstring), and only before that first product: TensorFlow reads the choice once.
    """
    environ = os.environ if environ is None else environ
    if enabled is None:
        if FROZEN_WEIGHTS_VARIABLE in environ:
            return frozen_weight_products_requested(environ)
        enabled = default
    environ[FROZEN_WEIGHTS_VARIABLE] = "1" if enabled else "0"
    return frozen_weight_products_requested(environ)


def refuse_frozen_weight_products(work: str, environ: Mapping[str, str] | None = None) -> None:
    """RuntimeError naming the variable when the environment asks for frozen-weight products:
    `work` (e.g. "training") changes weights after the first product, and would silently run on
    the first ones."""
    if frozen_weight_products_requested(environ):
        value = (os.environ if environ is None else environ)[FROZEN_WEIGHTS_VARIABLE]
        raise RuntimeError(
            f"{FROZEN_WEIGHTS_VARIABLE}={value} is set in this process's environment: "
            "TensorFlow's oneDNN products then keep the first weights (and the first gradient "
            f"operands) they see, so {work} would silently compute with stale values. Unset it, "
            "or set it to 0, for any process that trains; keep it for processes that only infer."
        )
