"""atomic_output: the final name holds a whole file or the previous one, never a part."""

import os

import pytest

from official_bert.atomic_output import atomic_output


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
