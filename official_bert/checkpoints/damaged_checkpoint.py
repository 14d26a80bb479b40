"""Naming the files of a checkpoint that cannot be read.

TensorFlow's checkpoint readers fail on a cut-short or damaged file with messages that name no
file ("IndexError: Read less bytes than requested", "DataLossError: Checksum does not match");
every loader reads checkpoints inside `damaged_checkpoint_named` so that the error says which
checkpoint, which of its files and their sizes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import tensorflow as tf

# What TensorFlow raises for a checkpoint file that is shorter than its index says or whose bytes
# fail their checksum (IndexError is how the pybind reader surfaces "Read less bytes").
_READ_ERRORS = (IndexError, tf.errors.DataLossError, tf.errors.OutOfRangeError)


class DamagedCheckpointError(ValueError):
    """A checkpoint whose files cannot be read; the message names them."""


def _files_with_sizes(path: str) -> str:
    """`name (N bytes)` for every file of the checkpoint prefix `path` (or the file itself)."""
    names = sorted(tf.io.gfile.glob(path + ".*")) or [path]
    described = []
    for name in names:
        if tf.io.gfile.exists(name) and not tf.io.gfile.isdir(name):
            described.append(f"{name} ({tf.io.gfile.stat(name).length} bytes)")
    return ", ".join(described) or "no files"


@contextlib.contextmanager
def damaged_checkpoint_named(path: str) -> Iterator[None]:
    """Re-raises a read error of the block as DamagedCheckpointError naming the checkpoint
    `path` (a prefix or a file) and its files with their sizes."""
    try:
        yield
    except _READ_ERRORS as error:
        message = error.message if isinstance(error, tf.errors.OpError) else str(error)
        raise DamagedCheckpointError(
            f"cannot read the checkpoint {path}: {message.strip()}; its files: "
            f"{_files_with_sizes(path)}. A file was cut short or damaged (an interrupted copy or "
            "download?): copy it again, or use another checkpoint"
        ) from error
