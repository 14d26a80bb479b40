"""Names of the files a writer puts beside its output (temporaries, summaries), chosen so that no
glob of the output's name reads them.

Users read sharded outputs with a prefix glob (`--input_file=out.tfrecord*`), so a side file
named `out.tfrecord.<anything>` would be read as data (a summary as a "corrupted record", a
killed run's half-written temporary as training data). Side files therefore start with a dot:
`<dir>/.<name>.tmp-<pid>` and `<dir>/.<name>.summary.json` (and a multi-label classifier's
tuned thresholds beside its checkpoints, `<output_dir>/.checkpoint.label_thresholds.json`). A
prefix glob never matches them,
and expand_input_patterns leaves dot files out of wildcards as a shell does; readers still refuse
a side file named explicitly (side_file_kind).
"""

from __future__ import annotations

import os
import re

_TEMPORARY_SUFFIX = re.compile(r"\.tmp-\d+$")
_SUMMARY_SUFFIX = ".summary.json"
_LABEL_THRESHOLDS_SUFFIX = ".label_thresholds.json"


def _beside(path: str, suffix: str) -> str:
    directory, name = os.path.split(path.rstrip("/"))
    return os.path.join(directory, f".{name}{suffix}")


def temporary_path(path: str) -> str:
    """`<dir>/.<name>.tmp-<pid>`: where this process writes `path` before renaming it."""
    return _beside(path, f".tmp-{os.getpid()}")


def temporary_glob(path: str) -> str:
    """A glob of the temporaries of `path` that any process (a killed earlier run) left."""
    return _beside(path, ".tmp-*")


def partial_path(path: str) -> str:
    """`<dir>/.<name>.partial`: a download of `path` under way or cut short, kept so that the next
    run resumes it (a temporary_path is removed once its process has ended)."""
    return _beside(path, ".partial")


def lock_path(path: str) -> str:
    """`<dir>/.<name>.lock`: the file whose lock one process holds while it makes `path`."""
    return _beside(path, ".lock")


def summary_path(path: str) -> str:
    """`<dir>/.<name>.summary.json`: the JSON summary written after `path` is complete."""
    return _beside(path, _SUMMARY_SUFFIX)


def label_thresholds_path(checkpoint_dir: str) -> str:
    """`<checkpoint_dir>/.checkpoint.label_thresholds.json`: the per-label decision thresholds
    of the multi-label classifier whose checkpoints (and their `checkpoint` index file) are in
    `checkpoint_dir`, tuned on dev after training."""
    return _beside(os.path.join(checkpoint_dir, "checkpoint"), _LABEL_THRESHOLDS_SUFFIX)


def side_file_kind(path: str) -> str | None:
    """What `path` is if it is a temporary or a summary of another file ("a temporary file", "a
    summary"), else None. Temporaries of earlier versions (`<name>.tmp-<pid>`, no dot) count."""
    name = os.path.basename(path.rstrip("/"))
    if _TEMPORARY_SUFFIX.search(name):
        return "a temporary file of an unfinished or killed writer"
    if name.startswith(".") and name.endswith(_SUMMARY_SUFFIX):
        return "the summary a writer leaves beside its output"
    if name.endswith(_SUMMARY_SUFFIX):
        return "the summary an earlier version wrote beside its output"
    if name.startswith(".") and name.endswith(_LABEL_THRESHOLDS_SUFFIX):
        return "the label thresholds a multi-label classifier keeps beside its checkpoints"
    return None
