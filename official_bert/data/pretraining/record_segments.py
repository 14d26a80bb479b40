"""Record segments: a work unit's serialized records, framed as TFRecord files by the process
that made them, for the process that writes the outputs to append whole.

create_pretraining_data's helper processes make most of the records (~10 MB a chunk). Sent back
through the pool's pipe as Python bytes objects, they cost the writing process a pickle round
trip, the pipe's reads (on the pool's result thread, which competes for the GIL with the main
thread's own chunks) and one `TFRecordWriter.write` call per record; framed where they are made,
they cost it one copy of each segment file onto an output (SegmentedOutput). TensorFlow offers
no bulk or bytes-level TFRecord framing to Python (its CRC32C is not exposed), so the frames
come from a `TFRecordWriter` writing a local file, and the writer copies the files' bytes.

The outputs take the records round-robin in stream order: record `written + k` of the stream
goes to output `(written + k) % n`. A work unit does not know `written` (the records of the
units before it), but its records `k` of one residue `k % n` all go to one output, in order: so
a unit is framed as up to `n` segments, segment `r` holding its records `r, r + n, ...`, and
the writer appends segment `r` to output `(written + r) % n`. An uncompressed TFRecord file is
the concatenation of its records' frames, so the outputs come out byte for byte as if each
record had been written on its own.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

import tensorflow as tf

_DIRECTORY_PREFIX = "pretraining-segments-"


def new_segment_directory() -> str:
    """A fresh local directory for segments, in the system's temporary directory (the outputs
    may be on a remote filesystem; the segments never leave this machine), named after this
    process; the caller removes it with remove_segment_directory.

    A killed run cannot remove its directory: the directories of processes that no longer run
    are removed here first, so that kills do not pile up segments in the temporary directory.
    """
    remove_directories_of_ended_processes()
    return tempfile.mkdtemp(prefix=f"{_DIRECTORY_PREFIX}{os.getpid()}-")


# A segment directory of a live run changes every chunk (segments come and go many times a
# second); one unchanged this long whose process is gone here belongs to a killed run, also
# where another pid namespace (a container) shares the temporary directory.
_STALE_AFTER_SECONDS = 3600.0


def remove_directories_of_ended_processes(parent: str | None = None) -> list[str]:
    """Removes the segment directories in `parent` (default: the temporary directory) whose
    process has ended and that have not changed for an hour; returns them. A directory whose
    process runs (or whose pid another process took since) is left alone."""
    parent = parent or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    now = time.time()
    for name in names:
        if not name.startswith(_DIRECTORY_PREFIX):
            continue
        pid = name[len(_DIRECTORY_PREFIX) :].partition("-")[0]
        if not pid.isdigit():
            continue
        path = os.path.join(parent, name)
        try:
            unchanged_for = now - os.stat(path).st_mtime
        except OSError:  # removed meanwhile
            continue
        if unchanged_for < _STALE_AFTER_SECONDS or _process_runs(int(pid)):
            continue
        remove_segment_directory(path)
        removed.append(path)
    return removed


def _process_runs(pid: int) -> bool:
    if os.name != "posix":  # Windows' os.kill terminates the process: assume it runs
        return True
    try:
        os.kill(pid, 0)  # signal 0: no signal, only the check that the process exists
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError (another user's process), or no such check here
        return True
    return True


def remove_segment_directory(directory: str) -> None:
    shutil.rmtree(directory, ignore_errors=True)


def write_segments(records: list[bytes], directory: str, unit: int, num_outputs: int) -> list[str]:
    """Frames `records` as TFRecord files in `directory`: file r holds records[r::num_outputs]
    (only as many files as there are records, at most num_outputs). Returns their paths, in
    order of r. `unit` (the chunk index) names the files apart from other units'."""
    paths = []
    for residue in range(min(num_outputs, len(records))):
        path = os.path.join(directory, f"{unit:09d}-{residue}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            write = writer.write
            for record in records[residue::num_outputs]:
                write(record)
        paths.append(path)
    return paths


class SegmentedOutput:
    """An uncompressed TFRecord output that takes whole segments.

    A local output takes each segment's bytes by `os.copy_file_range`, within the kernel: read
    into Python and written through `GFile`, the ~10 MB of a chunk would be copied three times
    (into a bytes object, into the C++ string GFile's binding makes, into the page cache) by the
    process that also makes records. Another filesystem (`gs://...`), or a platform or kernel
    without the call, takes the bytes through Python.
    """

    def __init__(self, path: str):
        self._local = "://" not in path and hasattr(os, "copy_file_range")
        self._file = open(path, "wb", buffering=0) if self._local else tf.io.gfile.GFile(path, "wb")

    def append(self, segment_path: str) -> None:
        with open(segment_path, "rb") as segment:
            if self._local and self._copy_in_kernel(segment.fileno()):
                return
            self._file.write(segment.read())

    def _copy_in_kernel(self, source: int) -> bool:
        """Copies the whole of the freshly opened file `source` to the output; False where the
        kernel refuses the first call (nothing copied yet: the caller copies then)."""
        remaining = os.fstat(source).st_size
        while remaining > 0:
            try:
                copied = os.copy_file_range(source, self._file.fileno(), remaining)
            except OSError:  # e.g. EXDEV across filesystems on kernels before 5.3, ENOSYS
                if remaining < os.fstat(source).st_size:
                    raise  # refused midway: part of the segment is in the output already
                self._local = False
                return False
            if copied == 0:
                raise OSError(f"the segment ended {remaining} bytes early while being appended")
            remaining -= copied
        return True

    def close(self) -> None:
        self._file.close()


def append_segments(paths: list[str], outputs: list[SegmentedOutput], written: int) -> None:
    """Appends segment r of `paths` (write_segments' list of one work unit) to
    outputs[(written + r) % len(outputs)] and removes it; `written`: the records of the stream
    before this unit."""
    for residue, path in enumerate(paths):
        outputs[(written + residue) % len(outputs)].append(path)
        os.remove(path)
