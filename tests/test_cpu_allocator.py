import os
import subprocess
import sys

import pytest

from official_bert.cpu_allocator import (
    MEMORY_LIMIT_VARIABLE,
    USE_BFC_VARIABLE,
    physical_memory_mb,
    prefer_bfc_cpu_allocator,
)

# Page faults per call of a function that makes two fresh 78 MB float32 buffers (the masked-LM
# logits' size in a 'small' pre-training step), after one warm-up call; printed by a fresh
# process so that the allocator is the one that process's environment chose.
_FAULTS_PER_CALL = """
import resource
import official_bert  # noqa: F401  (chooses the allocator)
import tensorflow as tf

logits = tf.random.uniform([640, 30522])

@tf.function
def step(logits):
    return tf.reduce_sum(tf.nn.softmax(logits * 2.0))

step(logits).numpy()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    step(logits).numpy()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5)
"""


def _faults_per_call(**environment):
    env = {k: v for k, v in os.environ.items() if k != USE_BFC_VARIABLE}
    env.update(environment, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(
        [sys.executable, "-c", _FAULTS_PER_CALL], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return float(result.stdout.strip().splitlines()[-1])


def test_import_chooses_bfc_and_large_buffers_stop_page_faulting():
    # One 78 MB buffer is 19,076 pages of 4 KiB.
    with_bfc = _faults_per_call()
    default_allocator = _faults_per_call(**{USE_BFC_VARIABLE: "0"})
    assert with_bfc < 1000, with_bfc
    assert default_allocator > 15_000, default_allocator


def test_an_explicit_choice_is_kept():
    environ = {USE_BFC_VARIABLE: "false"}
    assert prefer_bfc_cpu_allocator(environ) is False
    assert environ == {USE_BFC_VARIABLE: "false"}

    environ = {}
    assert prefer_bfc_cpu_allocator(environ) is True
    assert environ[USE_BFC_VARIABLE] == "1"


@pytest.mark.parametrize("limit", [None, "2048"])
def test_the_memory_cap_is_the_machine_and_a_given_cap_is_kept(limit, monkeypatch):
    import official_bert.cpu_allocator as cpu_allocator

    monkeypatch.setattr(cpu_allocator, "physical_memory_mb", lambda: 256 * 1024)
    environ = {} if limit is None else {MEMORY_LIMIT_VARIABLE: limit}
    prefer_bfc_cpu_allocator(environ)
    assert environ[MEMORY_LIMIT_VARIABLE] == (limit or str(256 * 1024))

    # Below TensorFlow's own 64 GiB cap nothing is set: TensorFlow's default stands.
    monkeypatch.setattr(cpu_allocator, "physical_memory_mb", lambda: 24 * 1024)
    environ = {}
    prefer_bfc_cpu_allocator(environ)
    assert MEMORY_LIMIT_VARIABLE not in environ


def test_physical_memory_is_reported():
    assert physical_memory_mb() > 512
