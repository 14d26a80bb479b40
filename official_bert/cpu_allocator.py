"""TensorFlow's BFC allocator for host memory, chosen before TensorFlow makes its first tensor.

Set by hand because TensorFlow's default CPU allocator passes every buffer to malloc, and glibc
serves a buffer above 32 MiB (its largest mmap threshold) with a fresh mmap that it unmaps again
on free: the kernel then zero-fills each page of it on first touch. A pre-training step's
masked-LM logits (640 predictions x 30,522 words, float32) are 78 MB, 19,000 page faults per
buffer, and the step makes several such buffers (logits, probabilities, their gradient). On the
'small' pre-training step of bench/train_step.py (2 cores) this took 0.62 cores of kernel time:
2.71 s a step with the default allocator, 1.70 s with the BFC one. The BFC allocator (the one
TensorFlow gives its GPUs) keeps freed regions and reuses them, so a step's buffers page-fault only
in the first step.

TensorFlow reads `TF_CPU_ALLOCATOR_USE_BFC` once, when it creates its CPU allocator at its first
host allocation (importing tensorflow or keras allocates nothing), so `import official_bert` sets
it; a process that ran TensorFlow ops before that import keeps the allocator it already has.
`TF_CPU_ALLOCATOR_USE_BFC=0` in the environment keeps TensorFlow's default.
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
