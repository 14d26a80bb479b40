"""The Makefile's project virtual environment (.venv): made with the interpreter PYTHON names,
reused while nothing changed, installed again when pyproject.toml changes, and one line naming
the package to install where the interpreter cannot make one (Debian/Ubuntu without
python3.X-venv). Run on a copy of the Makefile with `make -n` (nothing installed) or on
interpreters that stop before any install."""

import os
import shutil
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO_ROOT

MADE_WITH = "import sys; print(sys.version.split()[0], sys.executable)"


@pytest.fixture
def project(tmp_path):
    """A folder holding the Makefile and pyproject.toml, and nothing else."""
    if shutil.which("make") is None:
        pytest.fail("make is not installed: the README's two commands need it")
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(REPO_ROOT / name, tmp_path / name)
    return tmp_path


def _make(project, *arguments):
    # Not a sub-make of `make test` (which would print "Entering directory" lines).
    environment = {
        k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")
    }
    return subprocess.run(
        ["make", *arguments],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
    )


def _fake_venv(project, made_with):
    """A .venv as the Makefile leaves it after an install (its python never runs under -n)."""
    (project / ".venv" / "bin").mkdir(parents=True)
    python = project / ".venv" / "bin" / "python"
    python.write_text("#!/bin/sh\nexit 1\n")
    python.chmod(0o755)
    (project / ".venv" / "made-with").write_text(made_with + "\n")
    time.sleep(0.01)  # installed after made-with, as the recipes leave them
    (project / ".venv" / "installed").touch()


def test_an_interpreter_without_ensurepip_stops_with_the_package_to_install(project):
    # Debian's python3.X without python3.X-venv: `import ensurepip` fails.
    (project / "no_ensurepip").mkdir()
    (project / "no_ensurepip" / "ensurepip.py").write_text('raise ImportError("not here")\n')
    fake = project / "python3-without-venv"
    fake.write_text(
        f'#!/bin/sh\nPYTHONPATH={project / "no_ensurepip"} exec {sys.executable} "$@"\n'
    )
    fake.chmod(0o755)
    result = _make(project, "demo", f"PYTHON={fake}")
    assert result.returncode != 0
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert f"apt-get install python{version}-venv" in lines[0]
    assert not (project / ".venv").exists()


def test_an_interpreter_that_does_not_run_is_named(project):
    result = _make(project, "test", "PYTHON=python3.99-not-here")
    assert result.returncode != 0
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "PYTHON=python3.99-not-here does not run" in result.stderr


def test_a_fresh_checkout_makes_the_venv_with_python_then_installs(project):
    result = _make(project, "-n", "demo", f"PYTHON={sys.executable}")
    assert result.returncode == 0, result.stderr
    commands = result.stdout.splitlines()
    assert f"{sys.executable} -m venv .venv" in commands
    assert any(c.startswith(".venv/bin/python -m pip install") for c in commands), commands
    assert commands[-1] == ".venv/bin/python run_demo.py --output_dir=output/demo"


def test_the_venv_is_reused_and_installed_again_when_pyproject_changes(project):
    made_with = subprocess.run(
        [sys.executable, "-c", MADE_WITH], capture_output=True, text=True, check=True
    ).stdout.strip()
    _fake_venv(project, made_with)
    result = _make(project, "-n", "install", f"PYTHON={sys.executable}")
    assert result.returncode == 0, result.stderr
    assert "Nothing to be done" in result.stdout, result.stdout

    future = time.time() + 10
    os.utime(project / "pyproject.toml", (future, future))
    commands = _make(project, "-n", "install", f"PYTHON={sys.executable}").stdout.splitlines()
    assert not any("-m venv" in c for c in commands), commands
    assert any(c.startswith(".venv/bin/python -m pip install") for c in commands), commands


def test_another_interpreter_makes_the_venv_anew(project):
    _fake_venv(project, "3.0.0 /somewhere/else/python3")
    result = _make(project, "-n", "install", f"PYTHON={sys.executable}")
    assert result.returncode == 0, result.stderr
    commands = result.stdout.splitlines()
    assert commands[:2] == ["rm -rf .venv", f"{sys.executable} -m venv .venv"], commands


def test_the_test_command_also_installs_the_beam_extra_and_the_demo_does_not(project):
    demo = _make(project, "-n", "demo", f"PYTHON={sys.executable}").stdout
    test = _make(project, "-n", "test", f"PYTHON={sys.executable}").stdout
    assert ".[test,beam,zh]" not in demo
    assert '.venv/bin/python -m pip install --quiet -e ".[test,beam,zh]"' in test.splitlines()
    assert test.splitlines()[-1] == (
        ".venv/bin/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder"
    )


def test_an_unsupported_python_is_named_before_the_venv_is_touched(project):
    """A Python TensorFlow 2.21 has no wheel for: one line, and the .venv that works stays."""
    (project / "old_python").mkdir()
    (project / "old_python" / "sitecustomize.py").write_text(
        "import sys\nsys.version_info = (3, 9, 18, 'final', 0)\nsys.version = '3.9.18 (fake)'\n"
    )
    fake = project / "python3.9"
    fake.write_text(f'#!/bin/sh\nPYTHONPATH={project / "old_python"} exec {sys.executable} "$@"\n')
    fake.chmod(0o755)
    _fake_venv(project, "3.12.1 /usr/bin/python3.12")
    result = _make(project, "demo", f"PYTHON={fake}")
    assert result.returncode != 0
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert f"PYTHON={fake} is Python 3.9.18: name a Python 3.10-3.13" in result.stderr
    assert (project / ".venv" / "made-with").exists()
