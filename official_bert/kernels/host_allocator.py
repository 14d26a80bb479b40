"""TensorFlow's BFC allocator for host memory, asked for before TensorFlow makes its first tensor.

Why: TensorFlow's default CPU allocator passes every buffer to malloc, and glibc serves a buffer
above 32 MiB with a fresh mmap that it unmaps again on free, so the kernel zero-fills each page of
it on first touch: a pre-training step's masked-LM logits (640 predictions x 30,522 words,
float32, 78 MB) fault 19,000 pages per buffer on such hosts (figures: bench/RESULTS.md,
cpu_allocator_page_faults.py). The BFC allocator (the one TensorFlow gives its GPUs) keeps freed
regions and reuses them.

TensorFlow reads `TF_CPU_ALLOCATOR_USE_BFC` once, at its first host allocation (importing
tensorflow or keras allocates nothing). `import official_bert` does not set it: the scripts do,
through `official_bert.kernels.use_fast_kernels` called first in their main. A process that ran
TensorFlow ops before keeps the allocator it already has; `TF_CPU_ALLOCATOR_USE_BFC` already in
the environment (e.g. `=0` for TensorFlow's default) is kept.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

USE_BFC_VARIABLE = "TF_CPU_ALLOCATOR_USE_BFC"
MEMORY_LIMIT_VARIABLE = "TF_CPU_BFC_MEM_LIMIT_IN_MB"
# TensorFlow's cap when MEMORY_LIMIT_VARIABLE is unset (process_state.cc): 64 GiB.
TENSORFLOW_DEFAULT_LIMIT_MB = 64 * 1024


def physical_memory_mb() -> int | None:
    """This machine's physical memory in MiB, or None where the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
    except (ValueError, OSError, AttributeError):
        return None


def prefer_bfc_cpu_allocator(environ: MutableMapping[str, str] | None = None) -> bool:
    """Asks TensorFlow for its BFC allocator on the host, unless the environment already chose.

    environ: the environment to change (default os.environ).
    Returns True when this call set TF_CPU_ALLOCATOR_USE_BFC, False when it was already set
    (the user's choice, kept).

    The BFC allocator caps the host memory it hands out (TensorFlow's default cap: 64 GiB);
    the cap is raised to this machine's physical memory so that a large host (a TPU VM's input
    pipeline) is not limited below what the default allocator would give. A cap already in the
    environment is kept.
    """
    environ = os.environ if environ is None else environ
    if USE_BFC_VARIABLE in environ:
        return False
    environ[USE_BFC_VARIABLE] = "1"
    memory_mb = physical_memory_mb()
    if memory_mb and memory_mb > TENSORFLOW_DEFAULT_LIMIT_MB:
        environ.setdefault(MEMORY_LIMIT_VARIABLE, str(memory_mb))
    return True
