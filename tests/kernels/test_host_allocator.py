"""The host allocator choice: made when the project says so (use_fast_kernels, which the scripts
call first), never at import, and an explicit choice in the environment is kept."""

import os
import subprocess
import sys

import pytest

from official_bert.kernels.host_allocator import (
    MEMORY_LIMIT_VARIABLE,
    USE_BFC_VARIABLE,
    physical_memory_mb,
    prefer_bfc_cpu_allocator,
)
from tests.warm_interpreter import run_script

# Whether the default allocator page-faults on large buffers depends on the host's C library, so
# that comparison is a bench (bench/cpu_allocator_page_faults.py), not a test.
_CHOICE_AFTER = """
import os, sys
import official_bert  # noqa: F401
from official_bert.kernels import use_fast_kernels
if sys.argv[1] != "import":
    use_fast_kernels(sys.argv[1] == "on")
print(os.environ.get("TF_CPU_ALLOCATOR_USE_BFC"))
"""


def _choice_after(step, **environment):
    """The variable after `step` in a process whose environment has `environment`: a new
    interpreter for "import" (the import is the step), else a fork of the warm one (which
    imported the library, called nothing, and takes `environment` before the step)."""
    env = {k: v for k, v in os.environ.items() if k != USE_BFC_VARIABLE}
    env.update(environment, TF_CPP_MIN_LOG_LEVEL="2")
    if step == "import":
        result = subprocess.run(
            [sys.executable, "-c", _CHOICE_AFTER, step], env=env, capture_output=True, text=True
        )
    else:
        result = run_script(["-c", _CHOICE_AFTER, step], env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip().splitlines()[-1]


def test_import_changes_no_environment_variable():
    check = (
        "import os; e = dict(os.environ); import official_bert; "
        "import official_bert.kernels; assert dict(os.environ) == e"
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop(USE_BFC_VARIABLE, None)
    result = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


def test_the_fast_kernels_ask_for_bfc_unless_the_environment_chose():
    assert _choice_after("import") == "None"
    assert _choice_after("off") == "None"
    assert _choice_after("on") == "1"
    assert _choice_after("on", **{USE_BFC_VARIABLE: "0"}) == "0"
    assert _choice_after("on", **{USE_BFC_VARIABLE: "false"}) == "false"


def test_an_explicit_choice_is_kept():
    environ = {USE_BFC_VARIABLE: "false"}
    assert prefer_bfc_cpu_allocator(environ) is False
    assert environ == {USE_BFC_VARIABLE: "false"}

    environ = {}
    assert prefer_bfc_cpu_allocator(environ) is True
    assert environ[USE_BFC_VARIABLE] == "1"


@pytest.mark.parametrize("limit", [None, "2048"])
def test_the_memory_cap_is_the_machine_and_a_given_cap_is_kept(limit, monkeypatch):
    import official_bert.kernels.host_allocator as host_allocator

    monkeypatch.setattr(host_allocator, "physical_memory_mb", lambda: 256 * 1024)
    environ = {} if limit is None else {MEMORY_LIMIT_VARIABLE: limit}
    prefer_bfc_cpu_allocator(environ)
    assert environ[MEMORY_LIMIT_VARIABLE] == (limit or str(256 * 1024))

    # Below TensorFlow's own 64 GiB cap nothing is set: TensorFlow's default stands.
    monkeypatch.setattr(host_allocator, "physical_memory_mb", lambda: 24 * 1024)
    environ = {}
    prefer_bfc_cpu_allocator(environ)
    assert MEMORY_LIMIT_VARIABLE not in environ


def test_physical_memory_is_reported():
    assert physical_memory_mb() > 512
