"""The installed package's `official-bert` program (official_bert_cli.py): one command per
top-level script, the same flags and errors, TensorFlow's start-up lines hidden as the scripts
hide them, and a wheel that runs it without the checkout."""

import ast
import importlib.metadata
import json
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

import official_bert.commands
from official_bert_cli import COMMANDS, START_UP_LINES, main
from tests.conftest import ORIGINAL_TINY, REPO_ROOT
from tests.warm_interpreter import run_script

COMMAND_MODULES = sorted(
    path.stem
    for path in pathlib.Path(official_bert.commands.__file__).parent.glob("*.py")
    if path.stem != "__init__"
)


def _environment(**extra):
    # conftest.py sets TF_CPP_MIN_LOG_LEVEL for the test process: a user's shell has none.
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env.update(extra)
    return env


def test_every_command_module_is_a_command_and_a_top_level_script():
    assert sorted(COMMANDS) == COMMAND_MODULES
    for name in COMMAND_MODULES:
        script = ast.parse((REPO_ROOT / f"{name}.py").read_text(encoding="utf-8"))
        calls = [
            node
            for node in ast.walk(script)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "run_command"
        ]
        assert [call.args[0].id for call in calls] == [name], f"{name}.py"


def test_importing_a_command_defines_no_flag():
    # Commands share flag names (--vocab_file): only the one that runs may define them.
    code = (
        "import importlib\n"
        "from absl import flags\n"
        "def ours():\n"
        "    return sorted(m for m in flags.FLAGS.flags_by_module_dict() if 'official_bert' in m)\n"
        f"for name in {COMMAND_MODULES!r}:\n"
        "    command = importlib.import_module('official_bert.commands.' + name)\n"
        "print(ours())\n"
        "command.define_flags()\n"  # the last one: its flags are then there
        "print(ours())"
    )
    # A forked warm interpreter: it has imported the library, but no command module.
    result = run_script(["-c", code], env=_environment())
    assert result.returncode == 0, result.stderr[-2000:]
    before, after = result.stdout.strip().splitlines()
    assert before == "[]" and after != "[]", result.stdout


def test_the_program_lists_its_commands_and_refuses_an_unknown_one(capsys):
    assert main(["official-bert"]) == 2
    assert "run_classifier" in capsys.readouterr().err
    assert main(["official-bert", "--help"]) == 0
    listing = capsys.readouterr().out
    assert all(name in listing for name in COMMANDS)
    assert main(["official-bert", "run_clasifier"]) == 2
    assert "no command 'run_clasifier'; one of: create_pretraining_data" in capsys.readouterr().err


def test_the_package_declares_the_program():
    entry_points = importlib.metadata.entry_points(group="console_scripts")
    assert [e.value for e in entry_points if e.name == "official-bert"] == [
        "official_bert_cli:main"
    ]


def _run_program(*arguments, cwd, env=None):
    """`python -m official_bert_cli ARGUMENTS` in a new interpreter: its start-up as a user's."""
    return subprocess.run(
        [sys.executable, "-m", "official_bert_cli", *arguments],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env or _environment(),
    )


def _run_program_forked(*arguments, cwd):
    """The same in a forked warm interpreter (tests/warm_interpreter.py), for what does not
    depend on the interpreter's start (the start-up lines: _run_program)."""
    return run_script(["-m", "official_bert_cli", *arguments], cwd=cwd, env=_environment())


def test_a_command_runs_quietly_and_reports_input_errors_as_the_scripts_do(tmp_path):
    result = _run_program(
        "convert_checkpoint.py",  # the script's file name names the command too
        f"--input_checkpoint={ORIGINAL_TINY / 'bert_model.ckpt'}",
        f"--output_dir={tmp_path / 'out'}",
        "--output_format=safetensors",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "out" / "model.safetensors").stat().st_size > 0
    assert not [line for line in START_UP_LINES if line in result.stderr], result.stderr

    result = _run_program_forked(
        "run_pretraining", "--input_file=absent.tfrecord", "--output_dir=out", cwd=tmp_path
    )
    assert result.returncode == 1
    assert (
        result.stderr.strip().splitlines()[-1].startswith("official-bert run_pretraining: error:")
    )

    help_text = _run_program_forked("run_squad", "--helpshort", cwd=tmp_path).stdout
    assert help_text.startswith("Fine-tunes BERT on SQuAD"), help_text[:200]  # the command's usage
    assert "--[no]version_2_with_negative: SQuAD v2.0" in help_text


# The files that `import official_bert_cli, official_bert.commands` takes, found as the import
# finds them (each finder of sys.meta_path in turn) but without running official_bert's
# __init__, which imports TensorFlow.
_WHERE_IMPORTS_FIND = """
import sys
def find(name, path=None):
    for finder in sys.meta_path:
        spec = finder.find_spec(name, path) if hasattr(finder, "find_spec") else None
        if spec is not None:
            return spec
package = find("official_bert")
print(find("official_bert_cli").origin)
print(find("official_bert.commands", package.submodule_search_locations).origin)
"""


def test_the_wheel_runs_the_program_without_the_checkout(tmp_path):
    """The wheel holds the program's module, every command and the tokenizer's data, and once
    installed (here with --target, beside this environment's dependencies) runs a command from
    a folder that is not the checkout."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "official_bert_cli.py"):
        shutil.copy(REPO_ROOT / name, source / name)
    shutil.copytree(
        REPO_ROOT / "official_bert",
        source / "official_bert",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(tmp_path / "dist"), str(source)],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("official_bert-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        assert "official-bert = official_bert_cli:main" in archive.read(entry_points).decode()
    assert "official_bert_cli.py" in names
    assert "official_bert/tokenization_classes.json" in names
    assert {f"official_bert/commands/{name}.py" for name in COMMANDS} <= names

    site = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
         str(wheel)],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    texts = ["the man went to the store", "he bought a gallon of milk ||| it was cold"]
    (elsewhere / "input.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    env = _environment(PYTHONPATH=str(site))
    where = subprocess.run(
        [sys.executable, "-c", _WHERE_IMPORTS_FIND], capture_output=True, text=True,
        cwd=elsewhere, env=env,
    )  # fmt: skip
    imported_from = [pathlib.Path(line) for line in where.stdout.split()]
    assert len(imported_from) == 2, where.stdout + where.stderr[-2000:]
    assert all(path.is_relative_to(site) for path in imported_from), imported_from
    result = subprocess.run(
        [sys.executable, str(site / "bin" / "official-bert"), "extract_features",
         "--input_file=input.txt", "--output_file=features.jsonl",
         f"--init_checkpoint={ORIGINAL_TINY / 'bert_model.ckpt'}", "--layers=-1",
         "--max_seq_length=32"],
        capture_output=True, text=True, cwd=elsewhere, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    lines = (elsewhere / "features.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["linex_index"] for line in lines] == [0, 1]
    assert json.loads(lines[1])["features"][-1]["token"] == "[SEP]"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_parses_its_flags(name, tmp_path):
    result = _run_program_forked(name, "--helpshort", cwd=tmp_path)
    assert result.returncode == 1, result.stderr[-2000:]  # absl exits with 1 after --helpshort
    assert "--" in result.stdout and not result.stderr.strip(), result.stderr[-2000:]
