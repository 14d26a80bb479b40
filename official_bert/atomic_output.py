"""Writing a file so that its final name only ever holds a complete one."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import tensorflow as tf

from official_bert.side_file_names import temporary_path


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
    """
    directory = os.path.dirname(path)
    if directory:
        tf.io.gfile.makedirs(directory)
    temporary = temporary_path(path)
    try:
        yield temporary
        if not tf.io.gfile.exists(temporary):
            # tf.io.gfile.GFile makes its file at the first write: a writer that had nothing to
            # write (an empty input) leaves none, and its output is an empty file.
            with tf.io.gfile.GFile(temporary, "w") as writer:
                writer.write("")
        tf.io.gfile.rename(temporary, path, overwrite=True)
    finally:
        if tf.io.gfile.exists(temporary):
            tf.io.gfile.remove(temporary)
