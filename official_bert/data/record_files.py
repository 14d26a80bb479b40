"""Checking TFRecord files before they are read, and naming the file behind a record error.

TensorFlow's record reader says only "corrupted record at 12345" or "truncated record at
12345": with hundreds of shards a user cannot act on that. So every reader checks each file it
is given before training starts (check_record_files: a side file such as a killed writer's
temporary or a summary, a directory, an empty file, a file that is not TFRecords, each named;
readers of many shards first drop those that hold no records, skip_files_without_records),
and remembers the files it checked; when a record error comes later (a record cut short or
corrupted past the first one), records_named_on_error finds which of those files holds it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import tensorflow as tf
from absl import logging

from official_bert.side_file_names import side_file_kind

_GZIP_MAGIC = b"\x1f\x8b"
# Files checked by this process's readers, newest last: where records_named_on_error looks.
_checked_files: list[str] = []
# Files without records skip_files_without_records has warned about: a run reads its data for
# each of its checks, training and evaluation, and says so once.
_skipped_files: set[str] = set()


class RecordFileError(ValueError):
    """A TFRecord file that cannot be read: the message names the file and what is wrong."""


def compression_of(path: str) -> str:
    """ "GZIP" for a gzip-compressed TFRecord file (by its magic bytes), else ""."""
    with tf.io.gfile.GFile(path, "rb") as reader:
        return "GZIP" if reader.read(2) == _GZIP_MAGIC else ""


def first_record(path: str) -> bytes:
    """The first serialized record of the TFRecord file `path` (plain or GZIP, detected).

    Raises:
      RecordFileError: `path` is a side file (a temporary or a summary), a directory, empty,
        or not TFRecords (its first record fails the length or checksum test).
    """
    kind = side_file_kind(path)
    if kind is not None:
        raise RecordFileError(
            f"{path} is {kind}, not a record file: narrow --input_file so that it does not match "
            "it (or delete it if no writer is running)"
        )
    if tf.io.gfile.isdir(path):
        raise RecordFileError(f"{path} is a directory, not a TFRecord file")
    if tf.io.gfile.stat(path).length == 0:
        raise RecordFileError(
            f"{path} is empty (0 bytes): an interrupted writer's output, or a shard that got no "
            "records; remove it or write the data again"
        )
    compression = compression_of(path)
    try:
        first = next(iter(tf.data.TFRecordDataset(path, compression_type=compression).take(1)))
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError, StopIteration) as error:
        message = error.message if isinstance(error, tf.errors.OpError) else "no records"
        raise RecordFileError(
            f"{path} is not a TFRecord file ({message}); check that --input_file matches only "
            "record files"
        ) from None
    return first.numpy()


def check_record_files(files: list[str]) -> None:
    """Checks every file as first_record does (not just the first one), so a bad shard fails
    before training, named; remembers the files for records_named_on_error."""
    for path in files:
        first_record(path)
    for path in files:
        if path in _checked_files:
            _checked_files.remove(path)
        _checked_files.append(path)


def _holds_no_records(path: str) -> bool:
    """Whether `path` is a record file that holds no records: 0 bytes, or a GZIP stream of none
    (20 bytes). Side files and directories are not: first_record names them."""
    if side_file_kind(path) is not None or tf.io.gfile.isdir(path):
        return False
    if tf.io.gfile.stat(path).length == 0:
        return True
    compression = compression_of(path)
    if not compression:
        return False
    try:
        return not list(tf.data.TFRecordDataset(path, compression_type=compression).take(1))
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError):
        return False  # not TFRecords: first_record names it


def skip_files_without_records(files: list[str], flag: str = "--input_file") -> list[str]:
    """`files` less those that hold no records, with one warning naming them (once per process).

    A writer leaves such a file for a shard that got no records: create_pretraining_data.py
    (ours and the original's) given more --output_file than it has instances. The original
    trainer reads them as nothing, so a glob of a writer's complete output is accepted here too.

    Raises:
      RecordFileError: every file holds no records (there is nothing to read).
    """
    empty = [path for path in files if _holds_no_records(path)]
    if not empty:
        return files
    if len(empty) == len(files):
        raise RecordFileError(
            f"{flag}: every matched file holds no records ({', '.join(empty)}); write the data "
            "again (with fewer output files than instances)"
        )
    new = [path for path in empty if path not in _skipped_files]
    if new:
        logging.warning(
            "%s: skipping %d file(s) that hold no records (a writer's shard that got none, as "
            "when create_pretraining_data has fewer instances than output files): %s",
            flag,
            len(new),
            ", ".join(new),
        )
        _skipped_files.update(new)
    return [path for path in files if path not in empty]


def _record_error(path: str, compression: str) -> tf.errors.DataLossError | None:
    """The first record error of `path` read whole, or None when it reads cleanly."""
    try:
        for _ in tf.data.TFRecordDataset(path, compression_type=compression).batch(1024):
            pass
    except tf.errors.DataLossError as error:
        return error
    return None


def _error_place(message: str) -> tuple[str, int] | None:
    found = re.search(r"(truncated|corrupted) record at (\d+)", message)
    return (found.group(1), int(found.group(2))) if found else None


def find_bad_record_file(
    files: list[str], message: str = ""
) -> tuple[str, tf.errors.DataLossError] | None:
    """(file, its record error) for the file among `files` behind the record error `message`,
    or None when every file reads cleanly.

    A file whose error is the same (kind and byte offset) as `message` is preferred to one that
    merely fails; with an offset in `message` an uncompressed file no longer than it is not
    read. Reads whole files: meant for after an error, never on the training path.
    """
    place = _error_place(message)
    fallback = None
    for path in files:
        if not tf.io.gfile.exists(path):
            continue
        compression = compression_of(path)
        if place and not compression and tf.io.gfile.stat(path).length <= place[1]:
            continue
        error = _record_error(path, compression)
        if error is None:
            continue
        if place is None or _error_place(error.message) == place:
            return path, error
        fallback = fallback or (path, error)
    return fallback


def _named_data_loss(error: tf.errors.DataLossError, files: list[str]) -> Exception | None:
    culprit = find_bad_record_file(files, error.message)
    if culprit is None:
        return None
    path, file_error = culprit
    place = _error_place(file_error.message)
    where = f"a {place[0]} record at byte {place[1]}" if place else file_error.message
    return RecordFileError(
        f"{path}: {where} (the file was cut short or damaged after it was written); write it "
        "again or leave it out of --input_file"
    )


@contextlib.contextmanager
def records_named_on_error(files: list[str] | None = None) -> Iterator[None]:
    """Turns a DataLossError raised inside the block (iterating a dataset) into a
    RecordFileError naming the file and the record's byte offset. It looks among `files`, by
    default every file this process's readers checked; when none of them reproduces the error,
    the original error propagates unchanged."""
    try:
        yield
    except tf.errors.DataLossError as error:
        # The files checked last first: those of the dataset just read.
        candidates = files if files is not None else _checked_files[::-1]
        named = _named_data_loss(error, candidates)
        if named is None:
            logging.warning("No checked record file reproduces the error: %s", error.message)
            raise
        raise named from error
