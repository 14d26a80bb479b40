"""Knowing when a data file written earlier can be reused: a JSON summary written last, beside it
(named by side_file_names.summary_path, so that no glob of the data file reads it).

A writer removes the summary, writes its outputs under temporary names, renames them, and
writes the summary (settings + input signatures) last. An output counts as complete only when
the summary exists and its settings equal the current ones, so an interrupted run or a changed
input is redone, never mistaken for a whole one.
"""

from __future__ import annotations

import json
import os

import tensorflow as tf

from official_bert.config import write_text_atomically


def file_signature(path: str) -> list[int]:
    """[size, modification time in ns] of a file. tf.io.gfile.stat rounds local mtimes to whole
    seconds, so local files use os.stat."""
    if os.path.exists(path):
        stat = os.stat(path)
        return [stat.st_size, stat.st_mtime_ns]
    stat = tf.io.gfile.stat(path)
    return [stat.length, stat.mtime_nsec]


def read_completed_summary(summary_path: str, outputs: list[str], settings: dict) -> dict | None:
    """The summary at `summary_path` if it records `settings` and every output exists, else None."""
    if not tf.io.gfile.exists(summary_path) or not all(tf.io.gfile.exists(f) for f in outputs):
        return None
    with tf.io.gfile.GFile(summary_path) as reader:
        try:
            summary = json.load(reader)
        except json.JSONDecodeError:
            return None
    if summary.get("settings") != settings or summary.get("output_files") != outputs:
        return None
    return summary


def remove_if_exists(path: str) -> None:
    if tf.io.gfile.exists(path):
        tf.io.gfile.remove(path)


def write_summary(summary_path: str, summary: dict) -> None:
    write_text_atomically(summary_path, json.dumps(summary, indent=2, sort_keys=True) + "\n")
