"""Writing a file so that its final name only ever holds a complete one."""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import stat
from collections.abc import Iterator
from typing import NamedTuple

import tensorflow as tf
from absl import logging

from official_bert.side_file_names import temporary_glob, temporary_path


class OutputTarget(NamedTuple):
    """Where a writer of an output path puts its bytes: `path`, the file that ends up holding
    them, and `in_place`, whether they are written there directly (no temporary name, no
    rename)."""

    path: str
    in_place: bool


def output_target(path: str) -> OutputTarget:
    """Where the output named `path` is written, as a write through `path` itself (the
    original's tf.gfile.GFile(path, "w")) would leave it:

    - a local path that exists and is not a regular file or a folder (a character device such
      as /dev/null, /dev/stdout's terminal or pipe, a FIFO): in place. No name can be renamed
      onto it (a rename would replace /dev/null with a regular file), and a device keeps no
      half-written file to mistake for a whole one;
    - a local symbolic link: its target, through a temporary name beside the target, so that
      the link stays a link to the new file;
    - anything else (a new file, a regular file, gs://...): `path`, through a temporary name.
    """
    if "://" in path:
        return OutputTarget(path, False)
    written = os.path.realpath(path) if os.path.islink(path) else path
    try:
        mode = os.stat(path).st_mode  # follows links: /dev/stdout -> /proc/self/fd/1 -> a pipe
    except OSError:  # absent, or a link to an absent file (which the write makes)
        return OutputTarget(written, False)
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return OutputTarget(path, True)
    return OutputTarget(written, False)


# The writing process's id in a temporary name: `.NAME.tmp-PID`, `.tmp-ckpt-PID-<hex>`.
_TEMPORARY_PID = re.compile(r"\.tmp-(?:ckpt-)?(\d+)(?:-[0-9a-f]+)?$")


def remove_stale_temporaries(pattern: str) -> list[str]:
    """Removes the local files and folders matching `pattern` whose name holds the id of a
    process that is no longer running (_TEMPORARY_PID): what a killed run left under
    a temporary name (atomic_output's `.NAME.tmp-PID`, a SavedModel export's, a checkpoint's
    staging folder), at up to a model's size each. A running process's are left alone (it may be
    another run writing the same output). Returns the paths removed; nothing on `scheme://`
    paths, where no process can be asked after."""
    if "://" in pattern:
        return []
    removed = []
    for leftover in glob.glob(pattern):
        match = _TEMPORARY_PID.search(os.path.basename(leftover))
        if match is None or _is_running(int(match.group(1))):
            continue
        if os.path.isdir(leftover) and not os.path.islink(leftover):
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(leftover)
        removed.append(leftover)
    if removed:
        logging.info("Removed what killed runs left: %s", ", ".join(removed))
    return removed


def _is_running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: another user's process, running
        return True
    return True


def _new_file_mode() -> int:
    """0666 less the process's umask: the mode `open(path, "w")` gives a new file."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_output(path: str) -> Iterator[str]:
    """Yields a temporary name beside `path` (`<dir>/.<name>.tmp-<pid>`, which no glob of `path`
    matches: see side_file_names) for the block to write.

    When the block ends without an error the temporary file is renamed to `path` (replacing
    one that exists; an empty file where the block wrote nothing); when it raises, the
    temporary file is removed and the error propagates.
    A process killed inside the block leaves only the temporary name, never a half-written
    `path`. Close any writer on the temporary name inside the block. The parent directory is
    created first. Paths go through tf.io.gfile, so gs:// works as local ones do.

    A symbolic link `path` keeps pointing at its target, which the rename replaces; a device or
    FIFO (/dev/null, /dev/stdout) is yielded itself, to be written in place (output_target).
    A local file gets the mode of a new file (0666 less the umask), whatever wrote it.
    """
    target = output_target(path)
    if target.in_place:
        yield target.path
        return
    path = target.path
    directory = os.path.dirname(path)
    if directory:
        tf.io.gfile.makedirs(directory)
    remove_stale_temporaries(temporary_glob(path))
    temporary = temporary_path(path)
    try:
        yield temporary
        if not tf.io.gfile.exists(temporary):
            # tf.io.gfile.GFile makes its file at the first write: a writer that had nothing to
            # write (an empty input) leaves none, and its output is an empty file.
            with tf.io.gfile.GFile(temporary, "w") as writer:
                writer.write("")
        if "://" not in temporary:
            # The mode a new file gets here: safetensors writes 0600 whatever the umask, and a
            # copy keeps its source's mode (a read-only vocab.txt stays read-only).
            os.chmod(temporary, _new_file_mode())
        tf.io.gfile.rename(temporary, path, overwrite=True)
    finally:
        if tf.io.gfile.exists(temporary):
            tf.io.gfile.remove(temporary)
