"""atomic_output: the final name holds a whole file or the previous one, never a part."""

import os
import shutil
import stat
import subprocess
import threading

import pytest

from official_bert.atomic_output import atomic_output, output_target, remove_stale_temporaries


def test_complete_block_renames_into_place_and_creates_the_directory(tmp_path):
    path = tmp_path / "new" / "dir" / "out.txt"
    with atomic_output(str(path)) as temporary:
        assert temporary == str(path.parent / f".out.txt.tmp-{os.getpid()}")
        with open(temporary, "w") as writer:
            writer.write("whole")
        assert not path.exists()  # nothing under the final name before the block ends
    assert path.read_text() == "whole"
    assert os.listdir(path.parent) == ["out.txt"]


def test_complete_block_replaces_an_existing_file(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    with atomic_output(str(path)) as temporary, open(temporary, "w") as writer:
        writer.write("new")
    assert path.read_text() == "new"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_failed_block_keeps_the_previous_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("previous")
    with pytest.raises(RuntimeError, match="writer failed"):
        with atomic_output(str(path)) as temporary:
            with open(temporary, "w") as writer:
                writer.write("half")
            raise RuntimeError("writer failed")
    assert path.read_text() == "previous"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_failed_block_without_a_previous_file_leaves_nothing(tmp_path):
    path = tmp_path / "out.txt"
    with pytest.raises(KeyboardInterrupt):
        with atomic_output(str(path)) as temporary:
            open(temporary, "w").close()
            raise KeyboardInterrupt
    assert os.listdir(tmp_path) == []


def test_a_writer_that_wrote_nothing_leaves_an_empty_file(tmp_path):
    """tf.io.gfile.GFile makes its file at its first write: a block that had nothing to write
    (an empty input) still ends with an empty output, not a failed rename."""
    import tensorflow as tf

    target = tmp_path / "out.jsonl"
    with atomic_output(str(target)) as temporary, tf.io.gfile.GFile(temporary, "w"):
        pass
    assert target.read_bytes() == b"" and os.listdir(tmp_path) == ["out.jsonl"]


def test_a_symbolic_link_keeps_pointing_at_its_target_which_takes_the_file(tmp_path):
    target = tmp_path / "data" / "out.txt"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "out.txt"
    link.symlink_to(target)
    with atomic_output(str(link)) as temporary, open(temporary, "w") as writer:
        assert os.path.dirname(temporary) == str(target.parent)  # renamed within its folder
        writer.write("new")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new"
    assert sorted(os.listdir(target.parent)) == ["out.txt"]
    # A link to a file not made yet: the write makes the target.
    dangling = tmp_path / "later.txt"
    dangling.symlink_to(tmp_path / "data" / "later.txt")
    with atomic_output(str(dangling)) as temporary, open(temporary, "w") as writer:
        writer.write("made")
    assert dangling.is_symlink() and dangling.read_text() == "made"


def test_a_fifo_is_written_in_place(tmp_path):
    """A device or FIFO (/dev/null, /dev/stdout into a pipe) cannot be renamed onto: it is
    written as it is, and stays what it was."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    with atomic_output(str(fifo)) as temporary:
        assert temporary == str(fifo)
        with open(temporary, "w") as writer:
            writer.write("streamed")
    reader.join(timeout=30)
    assert received == ["streamed"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert os.listdir(tmp_path) == ["pipe"]
    assert output_target(str(fifo)) == (str(fifo), True)
    assert output_target("gs://bucket/out.txt") == ("gs://bucket/out.txt", False)


def test_the_output_gets_a_new_files_mode_whatever_wrote_it(tmp_path):
    """A writer that makes its file 0600 (safetensors) or a copy of a read-only file: the
    output has the mode `open(path, "w")` gives (0666 less the umask)."""
    source = tmp_path / "vocab.txt"
    source.write_text("[PAD]\n")
    source.chmod(0o444)
    umask = os.umask(0o022)
    try:
        with atomic_output(str(tmp_path / "out" / "vocab.txt")) as temporary:
            shutil.copy(source, temporary)
        with atomic_output(str(tmp_path / "out" / "model.safetensors")) as temporary:
            with open(os.open(temporary, os.O_WRONLY | os.O_CREAT, 0o600), "w") as writer:
                writer.write("weights")
    finally:
        os.umask(umask)
    for name in ("vocab.txt", "model.safetensors"):
        assert stat.S_IMODE(os.stat(tmp_path / "out" / name).st_mode) == 0o644, name


def _pid_of_a_finished_process() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_what_killed_runs_left_is_removed_and_a_running_writers_is_kept(tmp_path):
    """A run killed before its rename leaves `.NAME.tmp-PID` (an export's folder, a
    checkpoint's staging folder): the next write of the output removes it, unless that process
    still runs (another run writing the same output)."""
    dead, alive = _pid_of_a_finished_process(), os.getppid()
    (tmp_path / f".out.txt.tmp-{dead}").write_text("half")
    (tmp_path / f".out.txt.tmp-{alive}").write_text("being written")
    (tmp_path / f".tmp-ckpt-{dead}-0a1b2c3d").mkdir()
    (tmp_path / f".tmp-ckpt-{dead}-0a1b2c3d" / "bert_model.ckpt.index").write_text("x")
    (tmp_path / ".shard-00001-of-00002.tmp-1").write_text("init's")  # pid 1 runs: kept
    with atomic_output(str(tmp_path / "out.txt")) as temporary, open(temporary, "w") as writer:
        writer.write("whole")
    assert remove_stale_temporaries(str(tmp_path / ".tmp-ckpt-*")) == [
        str(tmp_path / f".tmp-ckpt-{dead}-0a1b2c3d")
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f".out.txt.tmp-{alive}", ".shard-00001-of-00002.tmp-1", "out.txt"]
    )
    assert remove_stale_temporaries("gs://bucket/.out.txt.tmp-*") == []
