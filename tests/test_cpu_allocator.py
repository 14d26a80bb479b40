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

# What a fresh process's environment says after `import official_bert`, and whether TensorFlow's
# CPU allocator then is the BFC one (its name appears in the allocator's statistics). Whether the
# default allocator page-faults on large buffers depends on the host's C library, so that
# comparison is a bench (bench/cpu_allocator_page_faults.py), not a test.
_CHOICE_AFTER_IMPORT = """
import os
import official_bert  # noqa: F401  (chooses the allocator)
print(os.environ.get("TF_CPU_ALLOCATOR_USE_BFC"))
"""


def _choice_after_import(**environment):
    env = {k: v for k, v in os.environ.items() if k != USE_BFC_VARIABLE}
    env.update(environment, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(
        [sys.executable, "-c", _CHOICE_AFTER_IMPORT], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip().splitlines()[-1]


def test_import_asks_for_bfc_unless_the_environment_chose():
    assert _choice_after_import() == "1"
    assert _choice_after_import(**{USE_BFC_VARIABLE: "0"}) == "0"
    assert _choice_after_import(**{USE_BFC_VARIABLE: "false"}) == "false"


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
