"""One run at a time in an output_dir: a second run into it stops at the start instead of
writing its checkpoints, records and results among the first one's."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from absl import logging

# In output_dir, starting with a dot: no glob of the run's outputs (ckpt-*, *.tf_record) reads it.
LOCK_NAME = ".run.lock"


class OutputDirInUseError(RuntimeError):
    """Another running process holds output_dir's lock."""


@contextlib.contextmanager
def hold_output_dir(output_dir: str) -> Iterator[None]:
    """Holds, for the block, an advisory lock (flock) on `output_dir/.run.lock`, which holds the
    process id of its holder; OutputDirInUseError at once where another process holds it. The
    system releases the lock when its holder ends, killed or not, so a killed run's rerun is
    not refused. Nothing is locked on `scheme://` paths (Cloud Storage has no locks), where
    fcntl is missing (Windows), or on a file system that takes no locks (with a warning)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    if "://" in output_dir:
        yield
        return
    # realpath: a symbolic link to a folder not made yet makes that folder (makedirs of the
    # link itself raises FileExistsError).
    os.makedirs(os.path.realpath(output_dir), exist_ok=True)
    with open(os.path.join(output_dir, LOCK_NAME), "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "unknown"
            raise OutputDirInUseError(
                f"--output_dir={output_dir} is in use by another run (process {holder}); wait "
                "for it to end, or use another --output_dir"
            ) from None
        except OSError as error:  # e.g. ENOLCK: a network or FUSE file system without locks
            logging.warning("%s: no lock on this file system (%s); going on", output_dir, error)
            yield
            return
        lock.seek(0)
        lock.truncate()
        lock.write(f"{os.getpid()}\n")
        lock.flush()
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
