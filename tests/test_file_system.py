"""official_bert.file_system: paths of any file system TensorFlow reads, local copies for the
libraries that open files themselves. `file://` URIs stand for remote paths (gs://): TensorFlow
reads them, Python's os does not."""

import os

import pytest

from official_bert.checkpoints.pytorch_state_dict import load_pytorch_state_dict
from official_bert.data.text_corpus import expand_input_patterns
from official_bert.file_system import (
    absolute_path,
    check_input_is_a_file,
    check_local_output_file,
    is_file,
    is_local,
    local_copy,
    local_output,
    parent_folder,
    same_file,
)
from tests.conftest import FIXTURES


def test_local_and_remote_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert is_local("model/bert_model.ckpt") and not is_local("gs://bucket/bert_model.ckpt")
    assert absolute_path("model") == str(tmp_path / "model")
    assert absolute_path("gs://bucket/model") == "gs://bucket/model"
    assert same_file("vocab.txt", str(tmp_path / "vocab.txt"))
    assert same_file("gs://b/out/", "gs://b/out") and not same_file("gs://b/x", "gs://c/x")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "vocab.txt").write_text("[PAD]\n")
    uri = f"file://{tmp_path}/folder"
    assert is_file(f"{uri}/vocab.txt") and not is_file(uri) and not is_file(f"{uri}/none")
    assert parent_folder(uri) == uri and parent_folder(f"{uri}/vocab.txt") == uri
    assert parent_folder("vocab.txt") == "."


def test_local_copy_of_a_remote_file_goes_when_the_block_ends(tmp_path):
    source = tmp_path / "weights.bin"
    source.write_bytes(b"\x00\x01weights")
    with local_copy(str(source)) as same:
        assert same == str(source)
    with local_copy(f"file://{source}") as local:
        assert local != str(source) and os.path.basename(local) == "weights.bin"
        assert open(local, "rb").read() == b"\x00\x01weights"
    assert not os.path.exists(local) and source.exists()


def test_errors_about_the_copy_name_the_remote_file(tmp_path):
    uri = f"file://{tmp_path}/weights.bin"
    (tmp_path / "weights.bin").write_bytes(b"not weights")
    with pytest.raises(ValueError) as raised, local_copy(uri) as local:
        raise ValueError(f"{local}: damaged", 3)
    assert raised.value.args == (f"{uri}: damaged", 3)


def test_a_damaged_remote_pytorch_file_is_named_as_given(tmp_path):
    whole = (FIXTURES / "hf_weights" / "bert" / "pytorch_model.bin").read_bytes()
    (tmp_path / "pytorch_model.bin").write_bytes(whole[: len(whole) // 2])
    uri = f"file://{tmp_path}/pytorch_model.bin"
    with pytest.raises(ValueError) as raised:
        load_pytorch_state_dict(uri)
    assert str(raised.value).startswith(uri), raised.value
    assert "official_bert-read-" not in str(raised.value)


def test_local_output_is_copied_out_only_when_the_block_succeeds(tmp_path):
    target = tmp_path / "out" / "model.h5"
    target.parent.mkdir()
    with local_output(f"file://{target}") as local:
        assert local != str(target)
        open(local, "wb").write(b"h5 bytes")
    assert target.read_bytes() == b"h5 bytes" and not os.path.exists(local)
    failed = tmp_path / "out" / "failed.h5"
    with pytest.raises(RuntimeError), local_output(f"file://{failed}") as local:
        open(local, "wb").write(b"half")
        raise RuntimeError("writer failed")
    assert not failed.exists() and not os.path.exists(local)
    with local_output(str(target)) as same:
        assert same == str(target)


def test_a_pipe_as_an_input_is_named(tmp_path):
    """tf.io.gfile reads nothing from a FIFO or `<(command)`: a clear error, not 0 examples."""
    fifo = tmp_path / "lines"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=r"--input_file=.*lines is a pipe or a device, not a file"):
        check_input_is_a_file(str(fifo), "input_file")
    with pytest.raises(ValueError, match="is a pipe or a device"):
        expand_input_patterns(f"{tmp_path / 'lines'}")
    regular = tmp_path / "corpus.txt"
    regular.write_text("a line\n")
    check_input_is_a_file(str(regular), "input_file")
    check_input_is_a_file(str(tmp_path / "absent.txt"), "input_file")  # named by the caller
    check_input_is_a_file("gs://bucket/corpus.txt", "input_file")  # no local stat


def test_a_folder_as_an_input_is_named(tmp_path):
    """TensorFlow's reader fails on a folder with a traceback ending in "Is a directory"."""
    with pytest.raises(
        ValueError, match=r"--vocab_file=.* is a folder, not a file; name the file in it$"
    ):
        check_input_is_a_file(str(tmp_path), "vocab_file", usual_name="vocab.txt")
    (tmp_path / "vocab.txt").write_text("[UNK]\n")
    with pytest.raises(ValueError, match=rf"in it \({tmp_path / 'vocab.txt'}\?\)$"):
        check_input_is_a_file(str(tmp_path), "vocab_file", usual_name="vocab.txt")
    with pytest.raises(IsADirectoryError, match="is a folder; give files or a glob such as"):
        expand_input_patterns(str(tmp_path))


def test_an_output_file_that_cannot_be_written_is_named_before_any_work(tmp_path):
    """A folder given as --output_file failed only at the final rename, after all the work; a
    file in the way of its folder, or a folder that cannot be made, in a traceback."""
    folder = tmp_path / "a_folder"
    folder.mkdir()
    with pytest.raises(IsADirectoryError, match=rf"--output_file={folder} is a folder; expected"):
        check_local_output_file(str(folder), "output_file")
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    with pytest.raises(NotADirectoryError, match=rf"out.tfrecord cannot be made: {a_file} is a"):
        check_local_output_file(str(a_file / "out.tfrecord"), "output_file")
    check_local_output_file(str(tmp_path / "new" / "deeper" / "out.jsonl"), "output_file")
    assert not (tmp_path / "new").exists()  # made and removed: the writer makes it
    check_local_output_file(str(a_file), "output_file")  # replaced by the writer
    check_local_output_file("/dev/null", "output_file")  # written in place
    check_local_output_file("gs://bucket/out.jsonl", "output_file")  # left to the writer


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_an_output_folder_the_file_system_refuses_is_named():
    """/proc passes os.access for root, but no folder can be made in it."""
    with pytest.raises(
        OSError, match=r"--output_file=/proc/nothing_here/o.jsonl cannot be made in /proc: "
    ):
        check_local_output_file("/proc/nothing_here/o.jsonl", "output_file")
