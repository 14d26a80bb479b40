"""The one switch between the plain layers and the speed paths of `official_bert.kernels`.

Off by default: a model built by a user of the library is plain Keras (public API only, any
Keras 3 release in the supported range). The scripts turn it on (`--fast_kernels`, default true)
by calling `use_fast_kernels` first, before any model or tensor exists; so can a user.

What the switch decides is read when a layer is built (its sub-layers and activation are chosen
in its constructor) and when a loss is traced; flipping it later does not change a model that
exists. Checkpoints, variable names and configs are the same either way.
"""

from __future__ import annotations

import contextlib

from official_bert.kernels.host_allocator import prefer_bfc_cpu_allocator

_fast_kernels_enabled = False


def fast_kernels_enabled() -> bool:
    """Whether layers built now take the speed paths (False unless switched on)."""
    return _fast_kernels_enabled


def use_fast_kernels(enabled: bool = True) -> None:
    """Switches the speed paths on (or off) for the layers and losses built from now on.

    On also asks TensorFlow for its BFC host allocator (see host_allocator.py) unless the
    environment already chose one; TensorFlow reads that choice at its first tensor, so call this
    first thing in a script. Off leaves the environment as it is.
    """
    global _fast_kernels_enabled
    _fast_kernels_enabled = bool(enabled)
    if enabled:
        prefer_bfc_cpu_allocator()


@contextlib.contextmanager
def fast_kernels(enabled: bool = True):
    """Within the block, layers and losses are built with the speed paths on (or off); the
    previous choice is restored after it. The host allocator is left alone (it is a choice of
    the process, made once)."""
    global _fast_kernels_enabled
    previous = _fast_kernels_enabled
    _fast_kernels_enabled = bool(enabled)
    try:
        yield
    finally:
        _fast_kernels_enabled = previous
