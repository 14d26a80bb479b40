"""What an output_dir's checkpoints were trained on, so that a run resuming them on other data
says so.

A run resumes from the latest checkpoint in its output_dir, as the original Estimator did: a
rerun continues an interrupted training, and an evaluation-only run evaluates the trained model.
A rerun with another task of the same shape (MRPC's folder with --task_name=CoLA) would resume
the MRPC model too, silently; one of another shape is refused by the checkpoint's shapes. The
task and data of the run that trained are kept in `output_dir/.trained_on.json`, and a run that
goes on training them on other ones logs a warning (not an error: continuing from one task's
model on another, e.g. pre-training's phase of longer sequences, is a choice a user may make on
purpose). A run that does not train is not warned: evaluating or predicting with the trained
model on other data is the original's workflow (run_classifier --task_name=MNLI-MM --do_eval on
MNLI's output_dir).

The starting weights (--init_checkpoint) are recorded too: a rerun naming another one resumes
the fine-tuned model, as the original's Estimator does, and is warned that the new weights are
not read.

So are the labels in the order of the head's outputs: a run resuming the checkpoints with the
labels in another order (--labels, needed where data_dir has no train file) would read each
output as another label, so every run, training or not, is refused then (check_resumed_labels);
and so, alike, are run_multitask.py's tasks named in another order (check_resumed_task_order).
"""

from __future__ import annotations

import json
import os

import tensorflow as tf
from absl import logging

from official_bert.config import write_text_atomically
from official_bert.data.text_corpus import expand_input_patterns
from official_bert.file_system import absolute_path

RECORD_NAME = ".trained_on.json"
# The options that say what a run trains on, and from which weights, in the scripts' flag names.
_FIELDS = (
    "task_name",
    "task_names",
    "data_dir",
    "data_dirs",
    "train_file",
    "input_file",
    "init_checkpoint",
)
# Those that name files (comma-separated globs): compared by the files they match, recorded
# under "<name> matches".
_FILE_FIELDS = ("train_file", "input_file")
# Recorded even when unset (null: random initialization), so that a record without it is one
# written before it was recorded, and is not compared.
_ALWAYS_RECORDED = ("init_checkpoint",)
_MATCHES = " matches"
_LABELS = "labels"


def _matched_files(patterns: list[str]) -> list[str] | None:
    """The files the (absolute) `patterns` match, sorted, so that `r*.tfr` and `r2.tfr,r1.tfr`
    are the same data; None where one matches nothing or a folder (the reader has named it by
    then, and the patterns' words are compared instead)."""
    try:
        return sorted(expand_input_patterns(",".join(patterns)))
    except (FileNotFoundError, IsADirectoryError, ValueError):
        return None


def trained_on(options) -> dict:
    """{flag: value} of the options that say what the run trains on (those it has): task names
    in lower case, local paths absolute, so that the same data named otherwise is the same; for
    the file options also {"<flag> matches": [the matched files, sorted]}."""
    recorded = {}
    for name in _FIELDS:
        value = getattr(options, name, None)
        if value in (None, ""):
            if name in _ALWAYS_RECORDED and hasattr(options, name):
                recorded[name] = None
            continue
        values = value.split(",") if isinstance(value, str) else list(value)
        if name.startswith("task_name"):
            values = [str(v).strip().lower() for v in values]
        else:
            values = [absolute_path(str(v).strip()).rstrip("/") for v in values]
        recorded[name] = ",".join(values)
        matches = _matched_files(values) if name in _FILE_FIELDS else None
        if matches is not None:
            recorded[name + _MATCHES] = matches
    return recorded


def _differs(name: str, recorded: dict, now: dict) -> bool:
    if name in _ALWAYS_RECORDED and name not in recorded:
        return False
    # Records written before the matches were kept have the flag's words only.
    if name + _MATCHES in recorded and name + _MATCHES in now:
        return recorded[name + _MATCHES] != now[name + _MATCHES]
    return recorded.get(name) != now.get(name)


def _described(name: str, record: dict) -> str:
    text = f"--{name}={record.get(name)}"
    matches = record.get(name + _MATCHES)
    if matches is None:
        return text
    return f"{text} ({len(matches)} file{'' if len(matches) == 1 else 's'})"


def _read_record(output_dir: str) -> dict | None:
    """output_dir's record, None where there is none (or it cannot be read)."""
    path = os.path.join(output_dir, RECORD_NAME)
    if not tf.io.gfile.exists(path):
        return None
    try:
        with tf.io.gfile.GFile(path) as reader:
            return json.load(reader)
    except (json.JSONDecodeError, tf.errors.OpError):
        return None


def record_training(
    output_dir: str, options, resumed: bool = False, labels: list[str] | None = None
) -> None:
    """Writes what this run trains on beside its checkpoints, and its `labels` (the order of
    its head's outputs; None for a task without label names). A `resumed` run keeps the
    recorded --init_checkpoint: its weights descend from that one, not from the one it names."""
    record = trained_on(options)
    if labels is not None:
        record[_LABELS] = list(labels)
    earlier = _read_record(output_dir) if resumed else None
    for name in _ALWAYS_RECORDED:
        if earlier and name in earlier:
            record[name] = earlier[name]
    text = json.dumps(record, indent=2, sort_keys=True) + "\n"
    write_text_atomically(os.path.join(output_dir, RECORD_NAME), text)


def warn_if_resumed_on_other_data(output_dir: str, checkpoint: str | None, options) -> bool:
    """Logs a warning (and returns True) where output_dir's record says its checkpoints were
    trained on another task or data, or started from another --init_checkpoint, than `options`
    name: for a run that trains on from them (the driver does not call it for others)."""
    recorded = _read_record(output_dir)
    if recorded is None:
        return False
    now = trained_on(options)
    names = {name for name in (*recorded, *now) if not name.endswith(_MATCHES) and name != _LABELS}
    differing = sorted(name for name in names if _differs(name, recorded, now))
    if not differing:
        return False
    logging.warning(
        "Resuming %s, trained on %s; this run names %s (as meant when training goes on with "
        "new data, e.g. pre-training's longer sequences; else use another --output_dir, and the "
        "run starts from --init_checkpoint)",
        checkpoint,
        ", ".join(_described(name, recorded) for name in differing),
        ", ".join(_described(name, now) for name in differing),
    )
    return True


def check_resumed_labels(output_dir: str, checkpoint: str | None, labels: list[str] | None) -> None:
    """Raises ValueError where output_dir's record says its checkpoints' head was trained with
    other `labels`, or the same in another order: each output would be read as another label
    (the predictions and metrics silently wrong). Passes where either side has no labels."""
    recorded = _read_record(output_dir)
    if recorded is None or labels is None or recorded.get(_LABELS) is None:
        return
    trained = recorded[_LABELS]
    if list(labels) == trained:
        return
    if sorted(labels) == sorted(trained):
        advice = f"pass --labels={','.join(trained)} (that order)"
    else:
        advice = "use another --output_dir for another label set"
    raise ValueError(
        f"{checkpoint} in --output_dir={output_dir} was trained with the labels {trained}, in "
        f"the order of its outputs; this run's are {list(labels)}, so each output would be read "
        f"as another label: {advice}"
    )


def check_resumed_task_order(output_dir: str, checkpoint: str | None, options) -> None:
    """Raises ValueError where output_dir's record says its checkpoints were trained with the
    same --task_names (run_multitask.py) in another order: a training checkpoint's variables are
    read by position, so each task's head would be read as another task's (same shapes) and the
    predictions and metrics be silently wrong. Other task sets are left to the checkpoint's
    own checks (its heads' names and shapes)."""
    recorded = _read_record(output_dir)
    if (
        recorded is None
        or not recorded.get("task_names")
        or not getattr(options, "task_names", None)
    ):
        return
    trained = recorded["task_names"].split(",")
    now = trained_on(options)["task_names"].split(",")
    if now == trained or sorted(now) != sorted(trained):
        return
    raise ValueError(
        f"{checkpoint} in --output_dir={output_dir} was trained with "
        f"--task_names={','.join(trained)}, whose heads it holds in that order; this run names "
        f"{','.join(now)}, so each task would be read with another's head: pass --task_names "
        "(and --data_dirs) in the trained order"
    )
