"""Page faults and time of a step that makes large host buffers, with TensorFlow's default CPU
allocator and with the BFC allocator that the scripts ask for with the fast kernels on (see
official_bert/kernels/host_allocator.py).

Each side runs in a fresh process (TensorFlow picks its allocator at its first tensor), makes a
[640, 30522] float32 tensor (the masked-LM logits of a 'small' pre-training step, 78 MB), calls a
tf.function that allocates two such buffers `--calls` times after one warm-up call, and prints
the minor page faults and the seconds per call. Whether the default allocator faults depends on
the host's C library and kernel settings (glibc's mmap threshold, transparent huge pages), so the
figures belong to the machine they were measured on: they are printed, never asserted.

  python bench/cpu_allocator_page_faults.py --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

USE_BFC_VARIABLE = "TF_CPU_ALLOCATOR_USE_BFC"

_ONE_SIDE = r"""
import json, resource, sys, time
from official_bert.kernels import use_fast_kernels
use_fast_kernels()  # as the scripts do; the TF_CPU_ALLOCATOR_USE_BFC set for this side is kept
import tensorflow as tf

calls = int(sys.argv[1])
logits = tf.random.uniform([640, 30522])

@tf.function
def step(logits):
    return tf.reduce_sum(tf.nn.softmax(logits * 2.0))

step(logits).numpy()
faults_before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
start = time.perf_counter()
for _ in range(calls):
    step(logits).numpy()
seconds = time.perf_counter() - start
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults_before
print(json.dumps({"faults_per_call": faults / calls, "ms_per_call": 1000 * seconds / calls}))
"""


def measure(use_bfc: bool, calls: int) -> dict:
    """One fresh process with TF_CPU_ALLOCATOR_USE_BFC set to 1 or 0."""
    environ = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    environ[USE_BFC_VARIABLE] = "1" if use_bfc else "0"
    result = subprocess.run(
        [sys.executable, "-c", _ONE_SIDE, str(calls)],
        env=environ,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def cpu_description() -> str:
    """The CPU model and its AVX-512 / bf16 flags, from /proc/cpuinfo where there is one."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            lines = cpuinfo.read().splitlines()
    except OSError:
        return "unknown CPU"
    model = next((line.split(":", 1)[1].strip() for line in lines if "model name" in line), "?")
    flags = next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), [])
    wanted = [flag for flag in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if flag in flags]
    return f"{model}, {os.cpu_count()} CPUs, flags: {' '.join(wanted) or 'none of avx2/avx512'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10, help="timed calls per process")
    parser.add_argument("--rounds", type=int, default=3, help="processes per allocator")
    args = parser.parse_args()
    print(f"# {cpu_description()}")
    rows = {"default": [], "bfc": []}
    for _ in range(args.rounds):
        # Alternate which side goes first so that a busy period does not favour one.
        for name in ("default", "bfc") if len(rows["bfc"]) % 2 == 0 else ("bfc", "default"):
            figures = measure(name == "bfc", args.calls)
            rows[name].append(figures)
            print(json.dumps({"allocator": name, **figures}))
    print("| allocator | page faults per call (median) | ms per call (median) |")
    print("|---|---|---|")
    for name, figures in rows.items():
        faults = statistics.median(f["faults_per_call"] for f in figures)
        milliseconds = statistics.median(f["ms_per_call"] for f in figures)
        print(f"| {name} | {faults:.0f} | {milliseconds:.1f} |")


if __name__ == "__main__":
    main()
