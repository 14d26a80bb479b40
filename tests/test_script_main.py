"""The scripts report a mistake in their input as one line, and keep the traceback of anything
else (official_bert/script_main.py)."""

import keras
import pytest
import tensorflow as tf

from official_bert.config import BertConfig, BertConfigError
from official_bert.script_main import is_input_error, remote_path_message
from official_bert.tasks.feature_extraction import parse_layer_indexes
from tests.conftest import REPO_ROOT
from tests.warm_interpreter import run_script

SCRIPT = str(REPO_ROOT / "run_pretraining.py")


def _raised(function, *args):
    try:
        function(*args)
    except Exception as error:  # the test looks at what was raised
        return error
    raise AssertionError(f"{function.__name__} raised nothing")


def test_the_librarys_own_errors_are_input_errors(tmp_path):
    """The library's ValueErrors and error classes and its failed opens carry their own
    messages; an error raised inside Keras or a KeyError does not count."""
    assert is_input_error(_raised(parse_layer_indexes, "-9", 2), SCRIPT)
    config = tmp_path / "bert_config.json"
    config.write_text('{"hidden_size": 64}')
    error = _raised(BertConfig.from_json_file, str(config))
    assert isinstance(error, BertConfigError) and is_input_error(error, SCRIPT)
    assert is_input_error(_raised(BertConfig.from_json_file, str(tmp_path / "absent.json")), SCRIPT)

    assert not is_input_error(_raised(keras.layers.Dense, -1), SCRIPT)
    assert not is_input_error(_raised(dict().__getitem__, "key"), SCRIPT)
    assert not is_input_error(ValueError("never raised: no traceback"), SCRIPT)


@pytest.mark.parametrize("verbosity", [[], ["-v", "1"]], ids=["default", "verbose"])
def test_a_script_prints_the_message_alone_unless_asked_for_more(tmp_path, verbosity):
    result = run_script(
        [SCRIPT, "--input_file=x.tfrecord", f"--output_dir={tmp_path}", "--do_train", *verbosity],
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 1
    message = "--bert_config_file is required (none found beside --init_checkpoint)"
    if verbosity:
        assert "Traceback (most recent call last)" in result.stderr
        assert f"ValueError: {message}" in result.stderr
    else:
        assert result.stderr.strip().splitlines() == [f"run_pretraining.py: error: {message}"]


def _run_main_raising(raise_statement: str, tmp_path, imports: str = ""):
    """A script whose main runs `raise_statement` under run_main, run in a fresh process."""
    code = (
        f"{imports}"
        "from official_bert.script_main import run_main\n"
        "def main(argv):\n"
        f"    {raise_statement}\n"
        "run_main(main)\n"
    )
    return run_script(["-c", code], timeout=120, cwd=tmp_path)


def test_training_stopped_by_a_signal_exits_as_the_signal_would(tmp_path):
    result = _run_main_raising(
        "raise TrainingStopped(15, 590, 1000, 'out/ckpt-590')",
        tmp_path,
        "from official_bert.training.runner import TrainingStopped\n",
    )
    assert result.returncode == 128 + 15
    assert result.stderr.strip().splitlines()[-1] == (
        "-c: error: stopped by SIGTERM at step 590 of 1000, checkpoint out/ckpt-590 saved; run "
        "the same command again to resume"
    )


def test_a_folder_the_user_may_not_write_is_one_line(tmp_path):
    result = _run_main_raising(
        "raise tf.errors.PermissionDeniedError(None, None, 'out/.x.tmp-1; Permission denied')",
        tmp_path,
        "import tensorflow as tf\n",
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == ["-c: error: out/.x.tmp-1; Permission denied"]


# TensorFlow's message for gs:// without a network (libcurl could not resolve the host).
_GCS_UNREACHABLE = (
    "Error executing an HTTP request: libcurl code 6 meaning 'Could not resolve hostname', "
    "error details: Could not resolve host: www.googleapis.com\n"
    "\t when reading metadata of gs://bucket/m/bert_model.ckpt/tfhub_module.pb"
)


def test_a_remote_path_that_cannot_be_reached_is_an_input_error_of_one_line():
    """A scheme this TensorFlow lacks and Cloud Storage without a network: the path and the
    cause, not thirty lines of traceback; TensorFlow's other errors keep theirs."""
    error = _raised(tf.io.gfile.stat, "s3://bucket/MRPC")
    assert isinstance(error, tf.errors.UnimplementedError) and is_input_error(error, SCRIPT)
    assert remote_path_message(error) == (
        "s3://bucket/MRPC cannot be reached: File system scheme 's3' not implemented "
        "(file: 's3://bucket/MRPC')"
    )
    gcs = tf.errors.FailedPreconditionError(None, None, _GCS_UNREACHABLE)
    assert is_input_error(gcs, SCRIPT)
    assert remote_path_message(gcs).startswith(
        "gs://bucket/m/bert_model.ckpt/tfhub_module.pb cannot be reached: Error executing an "
        "HTTP request: libcurl code 6"
    )
    local = tf.errors.FailedPreconditionError(None, None, "/tmp/x; Is a directory")
    assert remote_path_message(local) is None and not is_input_error(local, SCRIPT)


def test_an_unreachable_remote_path_is_named_by_the_flag_that_gave_it(tmp_path):
    """The library probes files inside the given path (a TF Hub module's tfhub_module.pb
    inside --init_checkpoint): the message names the flag and the path the user gave."""
    result = _run_main_raising(
        f"raise tf.errors.FailedPreconditionError(None, None, {_GCS_UNREACHABLE!r})",
        tmp_path,
        "import tensorflow as tf\nfrom absl import flags\n"
        "flags.DEFINE_string('init_checkpoint', 'gs://bucket/m/bert_model.ckpt', '')\n",
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "-c: error: --init_checkpoint=gs://bucket/m/bert_model.ckpt cannot be reached: Error "
        "executing an HTTP request: libcurl code 6 meaning 'Could not resolve hostname', error "
        "details: Could not resolve host: www.googleapis.com"
    )


def test_ctrl_c_outside_training_is_one_line_and_exit_130(tmp_path):
    # While evaluating or exporting (training itself stops with a checkpoint).
    result = _run_main_raising("raise KeyboardInterrupt", tmp_path)
    assert result.returncode == 130
    assert result.stderr.strip().splitlines() == ["-c: interrupted; nothing half-written was kept"]


def test_an_output_dir_that_cannot_be_made_is_named(tmp_path, monkeypatch):
    """A folder to make inside a read-only file system (or another user's folder), or below a
    file: one line naming both, not makedirs' traceback."""
    import os

    from official_bert.tasks.driver import check_local_output_dir

    read_only = tmp_path / "mounted_read_only"
    read_only.mkdir()
    real_access = os.access
    # As on a read-only mount (root passes permission bits, so they cannot stand in for it).
    monkeypatch.setattr(
        os, "access", lambda path, mode: str(path) != str(read_only) and real_access(path, mode)
    )
    with pytest.raises(PermissionError, match=f"cannot be made: .* may not write in {read_only}$"):
        check_local_output_dir(str(read_only / "run" / "out"))
    check_local_output_dir(str(tmp_path / "elsewhere" / "out"))  # fine: tmp_path is writable
    assert not (tmp_path / "elsewhere").exists()  # a probe: the run makes it when it writes
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    with pytest.raises(NotADirectoryError, match=f"cannot be made: {a_file} is a file"):
        check_local_output_dir(str(a_file / "out"))


def test_sigterm_outside_training_removes_what_was_half_written(tmp_path):
    # Python's default for SIGTERM ends the process with no cleanup: a writer's temporary file
    # (here atomic_output's) stayed beside the output, and nothing was said.
    result = _run_main_raising(
        "with atomic_output('out.txt') as temporary:\n"
        "        open(temporary, 'w').write('half')\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        time.sleep(5)",
        tmp_path,
        "import os, signal, time\nfrom official_bert.atomic_output import atomic_output\n",
    )
    assert result.returncode == 128 + 15
    assert result.stderr.strip().splitlines() == [
        "-c: terminated (SIGTERM); nothing half-written was kept"
    ]
    assert list(tmp_path.iterdir()) == []


def test_an_output_pipe_closed_by_its_reader_ends_quietly(tmp_path):
    # `extract_features.py --output_file=/dev/stdout | head`: TensorFlow's writer raises
    # FailedPreconditionError "...; Broken pipe" once head has gone.
    result = _run_main_raising(
        "raise tf.errors.FailedPreconditionError(None, None, '/dev/stdout; Broken pipe')",
        tmp_path,
        "import tensorflow as tf\n",
    )
    assert result.returncode == 128 + 13
    assert "Traceback" not in result.stderr and "error" not in result.stderr
