"""Paths on any file system TensorFlow reads: local ones, Cloud Storage (`gs://`, where a Cloud
TPU's host reads and writes) and the others `tf.io.gfile` knows (`hdfs://`, `file://`, ...).

The original release read and wrote every path through `tf.gfile`, so its commands took `gs://`
anywhere. Python's `os.path` and `open` see only local files (`os.path.exists("gs://b/x")` is
False, `os.makedirs("gs://b/x")` makes a local folder named `gs:`), so this project asks
`tf.io.gfile` instead. Some libraries open files themselves by name (safetensors, h5py); they get
a local copy of a remote file to read, or a local file to write that is then copied out.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator

import tensorflow as tf


def is_local(path: str) -> bool:
    """Whether `path` names a local file as Python's own functions see it (no `scheme://`)."""
    return "://" not in path


def is_file(path: str) -> bool:
    """Whether `path` exists and is not a folder (os.path.isfile for any file system)."""
    return tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path)


def check_input_is_a_file(path: str, flag: str, usual_name: str | None = None) -> None:
    """ValueError when the local `path` (given as --`flag`) exists but is a folder (a user who
    passes $BERT_BASE_DIR as --vocab_file: TensorFlow's reader fails with a traceback that ends
    in "Is a directory") or a pipe, a FIFO or a device (`<(command)`, /dev/stdin): TensorFlow's
    file reader gets no bytes from one (the original read nothing from it either, silently), and
    the scripts read their inputs more than once (a size first, or a pass per --dupe_factor).
    A folder that holds a file named `usual_name` ("vocab.txt") is answered with its path."""
    if not is_local(path):
        return
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # absent: the caller names it
    if stat.S_ISDIR(mode):
        inside = os.path.join(path, usual_name) if usual_name else None
        hint = f" ({inside}?)" if inside and os.path.isfile(inside) else ""
        raise ValueError(f"--{flag}={path} is a folder, not a file; name the file in it{hint}")
    if not stat.S_ISREG(mode):
        raise ValueError(
            f"--{flag}={path} is a pipe or a device, not a file: TensorFlow's file reader "
            "gets no lines from it; write them to a file first"
        )


def check_folder_can_be_made(folder: str, name: str) -> None:
    """Raises NotADirectoryError / PermissionError / OSError, each a line that starts with `name`
    (the flag and its value), where the local `folder` does not exist and cannot be made: a
    file where a folder of its path should be, a folder this user may not write, or a file
    system that refuses it (/proc, a read-only mount). Checked before the work that would
    write there, not when its first output is written; the folders are made once and removed
    again (the run makes them when it writes)."""
    folder = os.path.abspath(folder)
    existing = folder
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise NotADirectoryError(f"{name} cannot be made: {existing} is a file")
    if existing == folder:
        return
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PermissionError(f"{name} cannot be made: this user may not write in {existing}")
    try:
        os.makedirs(folder)
    except FileExistsError:
        return  # made meanwhile (another run)
    except OSError as error:
        raise OSError(
            f"{name} cannot be made in {existing}: the file system refuses it ({error.strerror})"
        ) from None
    made = folder
    while made != existing:
        try:
            os.rmdir(made)
        except OSError:  # another run wrote there meanwhile: its folder now
            return
        made = os.path.dirname(made)


def check_local_output_file(path: str, flag: str) -> None:
    """Raises IsADirectoryError where the local `path` (given as --`flag`) is a folder, and
    check_folder_can_be_made's errors where its folder cannot be made: before any work, not at
    the rename that ends the writing of the output. A `scheme://` path is left to its writer."""
    if not is_local(path):
        return
    if os.path.isdir(path):
        raise IsADirectoryError(
            f"--{flag}={path} is a folder; expected the name of a file to write "
            f"(e.g. {os.path.join(path, 'output')})"
        )
    check_folder_can_be_made(os.path.dirname(os.path.abspath(path)), f"--{flag}={path}")


def parent_folder(path: str) -> str:
    """The folder `path` names, or the folder of the file it names ("." for a bare file name)."""
    return path if tf.io.gfile.isdir(path) else (os.path.dirname(path) or ".")


def absolute_path(path: str) -> str:
    """`path` made absolute where it is local; a `scheme://` path is absolute already."""
    return os.path.abspath(path) if is_local(path) else path


def same_file(first: str, second: str) -> bool:
    """Whether two paths name the same file."""
    return absolute_path(first).rstrip("/") == absolute_path(second).rstrip("/")


@contextlib.contextmanager
def local_copy(path: str) -> Iterator[str]:
    """Yields a local name of the file `path`: `path` itself where it is local, else a copy in a
    temporary folder (same base name), removed when the block ends. A ValueError raised in the
    block that names the copy is changed to name `path`, which is what the user gave."""
    if is_local(path):
        yield path
        return
    directory = tempfile.mkdtemp(prefix="official_bert-read-")
    local = os.path.join(directory, os.path.basename(path.rstrip("/")) or "file")
    try:
        tf.io.gfile.copy(path, local, overwrite=True)
        yield local
    except ValueError as error:
        error.args = tuple(
            arg.replace(local, path) if isinstance(arg, str) else arg for arg in error.args
        )
        raise
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def local_output(path: str) -> Iterator[str]:
    """Yields a local name for a writer that opens its file itself: `path` where it is local,
    else a temporary file that is copied to `path` when the block ends without an error (and
    removed either way). Inside atomic_output, pass it the temporary name that yields."""
    if is_local(path):
        yield path
        return
    directory = tempfile.mkdtemp(prefix="official_bert-write-")
    try:
        local = os.path.join(directory, os.path.basename(path.rstrip("/")) or "file")
        yield local
        tf.io.gfile.copy(local, path, overwrite=True)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
