"""tests/warm_interpreter.py runs a command as a new interpreter would: argv, environment,
working folder, output streams, exit status, timeout."""

import subprocess
import sys

import pytest

from tests.warm_interpreter import run_script


def test_status_output_environment_and_folder_are_the_commands(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(
        "import os, sys\n"
        "print('argv', sys.argv[1:], 'name', __name__)\n"
        "print('env', os.environ.get('WARM_TEST'), 'cwd', os.getcwd(), file=sys.stderr)\n"
        "print('path0', sys.path[0])\n"
        "sys.exit(int(sys.argv[1]))\n"
    )
    result = run_script([str(script), "3", "x y"], env={"WARM_TEST": "on"}, cwd=tmp_path)
    assert result.returncode == 3
    assert "argv ['3', 'x y'] name __main__" in result.stdout
    assert f"path0 {tmp_path}" in result.stdout
    assert result.stderr.strip() == f"env on cwd {tmp_path}"


@pytest.mark.parametrize(
    "code, status, stderr",
    [
        ("pass", 0, ""),
        ("import sys; sys.exit()", 0, ""),
        ("import sys; sys.exit('refused: no such file')", 1, "refused: no such file"),
        ("raise KeyError('missing')", 1, "KeyError: 'missing'"),
    ],
)
def test_exit_status_is_a_new_interpreters(code, status, stderr):
    warm = run_script(["-c", code])
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert warm.returncode == fresh.returncode == status
    assert stderr in warm.stderr and stderr in fresh.stderr


def test_a_module_and_a_timeout():
    shown = run_script(["-m", "json.tool", "--help"])
    assert shown.returncode == 0 and "json.tool" in shown.stdout
    with pytest.raises(subprocess.TimeoutExpired):
        run_script(["-c", "import time; time.sleep(60)"], timeout=1)
    # The server goes on after a killed run.
    assert run_script(["-c", "print(6 * 7)"]).stdout == "42\n"
