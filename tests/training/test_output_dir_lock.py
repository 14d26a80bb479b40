"""One run at a time in an output_dir: a second one stops at the start, naming the first."""

import os
import subprocess
import sys

import pytest

from official_bert.training.output_dir_lock import (
    LOCK_NAME,
    OutputDirInUseError,
    hold_output_dir,
)

_HOLD = (
    "import fcntl, os, sys, time\n"
    "lock = open(os.path.join(sys.argv[1], '.run.lock'), 'a+')\n"
    "fcntl.flock(lock, fcntl.LOCK_EX)\n"
    "lock.truncate(0); lock.write(f'{os.getpid()}\\n'); lock.flush()\n"
    "print('held', flush=True)\n"
    "time.sleep(120)\n"
)


def test_a_second_run_is_refused_until_the_first_ends_even_killed(tmp_path):
    output_dir = tmp_path / "run"
    with hold_output_dir(str(output_dir)):
        assert (output_dir / LOCK_NAME).read_text() == f"{os.getpid()}\n"
        with pytest.raises(
            OutputDirInUseError, match=rf"in use by another run \(process {os.getpid()}\)"
        ):
            with hold_output_dir(str(output_dir)):
                pass
    with hold_output_dir(str(output_dir)):  # released at the end of the block
        pass

    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(output_dir)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OutputDirInUseError, match=rf"process {holder.pid}\)"):
            with hold_output_dir(str(output_dir)):
                pass
    finally:
        holder.kill()
        holder.wait()
    with hold_output_dir(str(output_dir)):  # a killed holder's lock is gone with it
        pass


def test_remote_output_dirs_are_not_locked():
    with hold_output_dir("gs://bucket/run"):
        pass


def test_an_output_dir_that_links_to_a_folder_not_made_yet_makes_that_folder(tmp_path):
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "scratch" / "run1")
    with hold_output_dir(str(link)):
        assert (tmp_path / "scratch" / "run1" / LOCK_NAME).exists()
