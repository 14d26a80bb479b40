"""Segments appended whole make the same files as records written one by one, round-robin."""

import errno
import os
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from official_bert.data.pretraining import record_segments
from official_bert.data.pretraining.record_segments import (
    SegmentedOutput,
    append_segments,
    write_segments,
)


def _records(count: int, start: int) -> list[bytes]:
    # Lengths from 0 to ~300 bytes, so that frames of several sizes follow each other.
    return [bytes([k % 251]) * ((k * 37) % 301) for k in range(start, start + count)]


def _units() -> list[list[bytes]]:
    """Work units of 7, 1, 0, 2 and 11 records: unit boundaries at every place in a rotation
    over 3 outputs, a unit with fewer records than outputs, an empty unit."""
    units, start = [], 0
    for count in (7, 1, 0, 2, 11):
        units.append(_records(count, start))
        start += count
    return units


@pytest.mark.parametrize("num_outputs", [1, 3])
def test_appended_segments_equal_records_written_one_by_one(tmp_path, num_outputs):
    stream = [record for unit in _units() for record in unit]
    expected = [str(tmp_path / f"expected-{k}") for k in range(num_outputs)]
    writers = [tf.io.TFRecordWriter(path) for path in expected]
    for index, record in enumerate(stream):
        writers[index % num_outputs].write(record)
    for writer in writers:
        writer.close()

    segment_directory = tmp_path / "segments"
    segment_directory.mkdir()
    paths = [str(tmp_path / f"appended-{k}") for k in range(num_outputs)]
    outputs = [SegmentedOutput(path) for path in paths]
    written = 0
    for unit_index, unit in enumerate(_units()):
        segments = write_segments(unit, str(segment_directory), unit_index, num_outputs)
        assert len(segments) == min(num_outputs, len(unit))
        append_segments(segments, outputs, written)
        written += len(unit)
    for output in outputs:
        output.close()

    assert list(segment_directory.iterdir()) == []  # appended segments are removed
    for path, expected_path in zip(paths, expected, strict=True):
        with open(path, "rb") as got, open(expected_path, "rb") as want:
            assert got.read() == want.read()
    read_back = [r.numpy() for r in tf.data.TFRecordDataset(paths[0])]
    assert read_back == stream[::num_outputs]


def test_a_kernel_that_refuses_the_copy_gets_the_bytes_through_python(tmp_path, monkeypatch):
    # EXDEV: a kernel before 5.3 copying across filesystems; the output still gets every byte,
    # once.
    calls = []

    def refuse(*args, **kwargs):
        calls.append(args)
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(record_segments.os, "copy_file_range", refuse, raising=False)
    records = _records(9, 0)
    segments = write_segments(records, str(tmp_path), 0, 1)
    output = SegmentedOutput(str(tmp_path / "out.tfrecord"))
    output.append(segments[0])
    output.append(write_segments(records, str(tmp_path), 1, 1)[0])
    output.close()
    assert len(calls) == 1  # refused once, then not asked again
    read_back = [r.numpy() for r in tf.data.TFRecordDataset(str(tmp_path / "out.tfrecord"))]
    assert read_back == records + records


def test_an_output_on_another_filesystem_takes_the_bytes_through_gfile(tmp_path):
    # ram:// is TensorFlow's in-memory filesystem: a path with a scheme, as gs:// is.
    records = _records(5, 3)
    segments = write_segments(records, str(tmp_path), 4, 2)
    outputs = [SegmentedOutput(f"ram://segments/out-{k}") for k in range(2)]
    append_segments(segments, outputs, written=1)  # record 0 of the unit goes to output 1
    for output in outputs:
        output.close()
    assert [r.numpy() for r in tf.data.TFRecordDataset("ram://segments/out-1")] == records[::2]
    assert [r.numpy() for r in tf.data.TFRecordDataset("ram://segments/out-0")] == records[1::2]
    assert not any(os.scandir(tmp_path))


def test_a_killed_runs_segment_directory_is_removed_by_the_next_run(tmp_path):
    # A run killed with SIGKILL cannot remove its directory; the next run removes directories
    # of processes that are gone once they have not changed for an hour, and leaves the others.
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    gone_pid = int(ended.stdout)
    hour_ago = time.time() - 3700
    stale = tmp_path / f"pretraining-segments-{gone_pid}-abc"
    recent = tmp_path / f"pretraining-segments-{gone_pid}-def"
    alive = tmp_path / f"pretraining-segments-{os.getpid()}-ghi"
    other = tmp_path / "pretraining-segments-notapid"
    for directory in (stale, recent, alive, other):
        directory.mkdir()
        (directory / "000000003-0.tfrecord").write_bytes(b"x" * 10)
    for directory in (stale, alive, other):
        os.utime(directory, (hour_ago, hour_ago))
    removed = record_segments.remove_directories_of_ended_processes(str(tmp_path))
    assert removed == [str(stale)]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        d.name for d in (recent, alive, other)
    )
