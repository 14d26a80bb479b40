"""What an output_dir's checkpoints were trained on, so that a run resuming them on other data
says so.

A run resumes from the latest checkpoint in its output_dir, as the original Estimator did: a
rerun continues an interrupted training, and an evaluation-only run evaluates the trained model.
A rerun with another task of the same shape (MRPC's folder with --task_name=CoLA) would resume
the MRPC model too, silently; one of another shape is refused by the checkpoint's shapes. The
task and data of the run that trained are kept in `output_dir/.trained_on.json`, and a run that
resumes on other ones logs a warning (not an error: continuing from one task's model on
another, or evaluating it on other data, is a choice a user may make on purpose).
"""

from __future__ import annotations

import json
import os

import tensorflow as tf
from absl import logging

from official_bert.config import write_text_atomically
from official_bert.file_system import absolute_path

RECORD_NAME = ".trained_on.json"
# The options that say what a run trains on, in the scripts' flag names.
_FIELDS = ("task_name", "task_names", "data_dir", "data_dirs", "train_file", "input_file")


def trained_on(options) -> dict:
    """{flag: value} of the options that say what the run trains on (those it has): task names
    in lower case, local paths absolute, so that the same data named otherwise is the same."""
    recorded = {}
    for name in _FIELDS:
        value = getattr(options, name, None)
        if value in (None, ""):
            continue
        values = value.split(",") if isinstance(value, str) else list(value)
        if name.startswith("task_name"):
            values = [str(v).strip().lower() for v in values]
        else:
            values = [absolute_path(str(v).strip()).rstrip("/") for v in values]
        recorded[name] = ",".join(values)
    return recorded


def record_training(output_dir: str, options) -> None:
    """Writes what this run trains on beside its checkpoints."""
    text = json.dumps(trained_on(options), indent=2, sort_keys=True) + "\n"
    write_text_atomically(os.path.join(output_dir, RECORD_NAME), text)


def warn_if_resumed_on_other_data(output_dir: str, checkpoint: str | None, options) -> bool:
    """Logs a warning (and returns True) where output_dir's record says its checkpoints were
    trained on another task or data than `options` name."""
    path = os.path.join(output_dir, RECORD_NAME)
    if not tf.io.gfile.exists(path):
        return False
    try:
        with tf.io.gfile.GFile(path) as reader:
            recorded = json.load(reader)
    except (json.JSONDecodeError, tf.errors.OpError):
        return False
    now = trained_on(options)
    differing = sorted(
        name for name in set(recorded) | set(now) if recorded.get(name) != now.get(name)
    )
    if not differing:
        return False
    logging.warning(
        "Resuming %s, trained on %s; this run names %s (as meant when training goes on with "
        "new data, e.g. pre-training's longer sequences; else use another --output_dir, and the "
        "run starts from --init_checkpoint)",
        checkpoint,
        ", ".join(f"--{name}={recorded.get(name)}" for name in differing),
        ", ".join(f"--{name}={now.get(name)}" for name in differing),
    )
    return True
