"""The top-level scripts start without TensorFlow's CUDA/oneDNN start-up lines (_quiet_start.py,
official_bert_cli.py), unless TF_CPP_MIN_LOG_LEVEL is set or --verbosity asks for them."""

import ast
import os
import subprocess
import sys

import pytest

from official_bert_cli import START_UP_LINES, asked_for_start_up_lines, without_start_up_lines
from tests.conftest import ORIGINAL_TINY, REPO_ROOT

SCRIPTS = (
    "create_pretraining_data.py",
    "run_pretraining.py",
    "run_classifier.py",
    "run_classifier_with_tfhub.py",
    "run_squad.py",
    "run_multitask.py",
    "extract_features.py",
    "export_tfhub.py",
    "convert_checkpoint.py",
    "run_demo.py",
)


def _start_up_lines(stderr: str) -> set[str]:
    """Which of START_UP_LINES the output holds."""
    return {line for line in START_UP_LINES if line in stderr}


def _run(*command, returncode=0, **environment):
    # conftest.py sets TF_CPP_MIN_LOG_LEVEL for the test process: a user's shell has none.
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env.update(environment)
    result = subprocess.run(
        [sys.executable, *command], capture_output=True, text=True, env=env, cwd=REPO_ROOT
    )
    assert result.returncode == returncode, result.stderr[-3000:]
    return result


HELP_EXIT = 1  # absl exits with 1 after --helpshort


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_script_imports_quiet_start_before_anything_else(script):
    module = ast.parse((REPO_ROOT / script).read_text(encoding="utf-8"))
    docstring, first = module.body[0], module.body[1]
    assert isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant)
    assert isinstance(first, ast.Import), f"{script}: the first statement is not an import"
    assert [alias.name for alias in first.names] == ["_quiet_start"], script


def test_help_and_a_tiny_run_print_no_start_up_lines(tmp_path):
    result = _run("run_classifier.py", "--helpshort", returncode=HELP_EXIT)
    assert "--task_name" in result.stdout  # the help itself still shows
    assert _start_up_lines(result.stderr) == set(), result.stderr

    # A run that makes tensors (and so initializes the devices): the original tiny checkpoint
    # converted to safetensors.
    result = _run(
        "convert_checkpoint.py",
        f"--input_checkpoint={ORIGINAL_TINY / 'bert_model.ckpt'}",
        f"--output_dir={tmp_path / 'out'}",
        "--output_format=safetensors",
    )
    assert (tmp_path / "out" / "model.safetensors").exists()
    assert _start_up_lines(result.stderr) == set(), result.stderr


def test_the_level_is_left_unset_for_the_scripts_children(tmp_path):
    # TensorFlow read TF_CPP_MIN_LOG_LEVEL=2 while loading (its INFO lines stay hidden after);
    # a script started from here (the demo's stages) sees no level and quiets itself.
    code = (
        "import _quiet_start, os, sys, tensorflow as tf\n"
        "with tf.io.TFRecordWriter(sys.argv[1]) as writer: writer.write(b'x')\n"
        "for _ in tf.data.TFRecordDataset([sys.argv[1]]): pass\n"
        "print(os.environ.get('TF_CPP_MIN_LOG_LEVEL'))"
    )
    result = _run("-c", code, str(tmp_path / "one.tfrecord"))
    assert result.stdout.strip() == "None"
    assert _start_up_lines(result.stderr) == set(), result.stderr
    # TensorFlow 2.21 logs "TFRecordDataset `buffer_size` is unspecified" at INFO level.
    assert "TFRecordDataset" not in result.stderr, result.stderr
    # A user's level of 1-3 asks for fewer lines: quiet too, and kept for the children.
    result = _run("-c", code, str(tmp_path / "two.tfrecord"), TF_CPP_MIN_LOG_LEVEL="3")
    assert result.stdout.strip() == "3"
    assert _start_up_lines(result.stderr) == set(), result.stderr


_CHECKPOINT_AND_LOG = (
    "import sys, _quiet_start, tensorflow as tf\n"
    "from absl import logging\n"
    "logging.set_verbosity(logging.INFO)\n"
    "tf.train.Checkpoint(v=tf.Variable(1.0)).save(sys.argv[1])\n"
    "logging.info('the script says this')\n"
    "logging.warning('and warns this')\n"
)


def test_tensorflow_info_records_are_dropped_and_the_scripts_own_lines_kept(tmp_path):
    # TensorFlow 2.21 logs "Sharding callback duration" (INFO, through absl) at every save.
    result = _run("-c", _CHECKPOINT_AND_LOG, str(tmp_path / "quiet" / "ckpt"))
    assert "the script says this" in result.stderr and "and warns this" in result.stderr
    assert "Sharding callback" not in result.stderr, result.stderr
    # Asked for (--verbosity=1), TensorFlow's records show: the filter is what dropped them.
    verbose = _run("-c", _CHECKPOINT_AND_LOG, str(tmp_path / "verbose" / "ckpt"), "--verbosity=1")
    assert "Sharding callback" in verbose.stderr, verbose.stderr


_EXPORT_AND_WARN = (
    "import sys, _quiet_start, tensorflow as tf\n"
    "from absl import app\n"
    "def main(_):\n"
    "    tf.saved_model.save(tf.Module(), sys.argv[1])\n"
    "    tf.get_logger().warning('tensorflow warns this')\n"
    "app.run(main)\n"
)


def test_tensorflows_own_logger_is_filtered_and_prints_once(tmp_path):
    # TensorFlow's logger ("tensorflow", not absl's) logs "Assets written to" at INFO at every
    # SavedModel export, and has a handler of its own beside absl's on the root logger.
    result = _run("-c", _EXPORT_AND_WARN, str(tmp_path / "quiet"))
    assert "Assets written" not in result.stderr, result.stderr
    assert result.stderr.count("tensorflow warns this") == 1, result.stderr
    assert "WARNING:tensorflow:" not in result.stderr, result.stderr
    verbose = _run("-c", _EXPORT_AND_WARN, str(tmp_path / "verbose"), "--verbosity=1")
    assert "Assets written" in verbose.stderr, verbose.stderr


def test_asked_for_the_lines_are_those_of_tensorflow_itself():
    """With --verbosity=1 or TF_CPP_MIN_LOG_LEVEL set, a script prints what a bare
    `import tensorflow` prints on this machine (none where TensorFlow itself prints none)."""
    bare = _run("-c", "import tensorflow as tf; tf.config.list_physical_devices()")
    expected = _start_up_lines(bare.stderr) - {"failed call to cuInit"}  # no devices listed
    verbose = _run("convert_checkpoint.py", "--helpshort", "--verbosity=1", returncode=HELP_EXIT)
    assert _start_up_lines(verbose.stderr) >= expected, verbose.stderr
    chosen = _run(
        "convert_checkpoint.py", "--helpshort", returncode=HELP_EXIT, TF_CPP_MIN_LOG_LEVEL="0"
    )
    assert _start_up_lines(chosen.stderr) >= expected, chosen.stderr


@pytest.mark.parametrize(
    "argv, environ, asked",
    [
        ([], {}, False),
        (["--verbosity=0"], {}, False),
        (["--verbosity=-1", "--task_name=MRPC"], {}, False),
        (["--verbosity=1"], {}, True),
        (["--verbosity", "2"], {}, True),
        (["-v", "1"], {}, True),
        (["--v=3"], {}, True),
        (["-v=abc"], {}, False),  # absl rejects it later, with its own message
        (["--", "--verbosity=1"], {}, False),  # after --: not a flag
        # A level of 1-3 asks TensorFlow for fewer lines: the quiet start gives that.
        ([], {"TF_CPP_MIN_LOG_LEVEL": "3"}, False),
        ([], {"TF_CPP_MIN_LOG_LEVEL": "2"}, False),
        ([], {"TF_CPP_MIN_LOG_LEVEL": "0"}, True),
    ],
)
def test_when_the_lines_are_asked_for(argv, environ, asked):
    assert asked_for_start_up_lines(argv, environ) is asked


def test_only_the_start_up_lines_are_dropped():
    captured = (
        "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
        "I0000 00:00:1.1 1 port.cc:153] oneDNN custom operations are on. You may see ...\n"
        "I0000 00:00:1.2 1 cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU "
        "will not be used.\n"
        "W0000 00:00:1.3 1 some_op.cc:1] a warning of another kind\n"
        "E0000 00:00:1.4 1 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error\n"
        "Traceback (most recent call last):\n"
        "no newline at the end"
    )
    assert without_start_up_lines(captured) == (
        "W0000 00:00:1.3 1 some_op.cc:1] a warning of another kind\n"
        "Traceback (most recent call last):\n"
        "no newline at the end"
    )


@pytest.mark.parametrize("environment", [{}, {"TF_CPP_MIN_LOG_LEVEL": "0"}], ids=["quiet", "asked"])
def test_tensorflows_objects_are_frozen_and_the_scripts_own_are_collected(environment):
    """After `import _quiet_start` TensorFlow's modules are out of Python's collections
    (gc.freeze), with its lines shown or not; a cycle the script makes later is collected."""
    code = (
        "import _quiet_start, gc, sys, tensorflow as tf, weakref\n"
        "class Node: pass\n"
        "node = Node(); node.self = node; alive = weakref.ref(node); del node\n"
        "gc.collect()\n"
        "print(gc.get_freeze_count(), alive() is None, 'tensorflow' in sys.modules)"
    )
    frozen, collected, imported = _run("-c", code, **environment).stdout.split()
    # TensorFlow 2.21's import makes about 300k objects.
    assert int(frozen) > 100_000, frozen
    assert (collected, imported) == ("True", "True")


def test_ctrl_c_while_tensorflow_loads_is_one_line(tmp_path):
    # A stand-in tensorflow whose import is interrupted, as a Ctrl-C in the seconds the real
    # import takes: exit status 130 and one line, not the import's traceback.
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "tensorflow.py").write_text("raise KeyboardInterrupt\n")
    script = tmp_path / "my_script.py"
    script.write_text("import _quiet_start  # noqa: F401\nprint('not reached')\n")
    result = _run(
        str(script),
        returncode=130,
        PYTHONPATH=os.pathsep.join([str(fake), str(REPO_ROOT)]),
    )
    assert result.stderr == "my_script.py: interrupted while starting\n"
    assert result.stdout == ""
