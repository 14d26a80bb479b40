"""What a fine-tuned checkpoint's files say about its head: the class and labels of a Hugging
Face config.json, or those a fine-tuning run of this project keeps beside its checkpoints.

A head's outputs are numbered; the names say what each number means. They travel with a
conversion (transformers' id2label, a run's serving labels.txt) and decide whether a head can
start a task whose labels are numbered otherwise.
"""

from __future__ import annotations

import os

import tensorflow as tf

from official_bert.checkpoints import safetensors_bert
from official_bert.file_system import is_file, parent_folder

# Where a fine-tuning run's output folder keeps its label names (the serving export's).
RUN_LABELS_FILE = os.path.join("serving_model", "assets.extra", "labels.txt")
# What a multi-label run (run_classifier.py --multi_label) keeps in its serving export: its
# labels' tuned thresholds (and beside its checkpoints, side_file_names.label_thresholds_path).
RUN_THRESHOLDS_FILE = os.path.join("serving_model", "assets.extra", "label_thresholds.json")


def checkpoint_directory(path: str) -> str:
    """The folder of a checkpoint: `path` itself, or the folder of a file or prefix in it."""
    return parent_folder(path)


def hf_config_file(checkpoint: str, bert_config_file: str | None = None) -> str | None:
    """The config that names a checkpoint's Hugging Face class and labels: bert_config_file
    where it names a class, else a Hugging Face config.json beside the checkpoint (as a
    safetensors output of convert_checkpoint holds beside its bert_config.json, which
    find_bert_config prefers); bert_config_file where neither names one."""
    if bert_config_file and safetensors_bert.read_hf_architectures(bert_config_file):
        return bert_config_file
    candidate = os.path.join(checkpoint_directory(checkpoint), "config.json")
    return candidate if safetensors_bert.read_hf_architectures(candidate) else bert_config_file


def head_label_names(
    checkpoint: str, count: int, config_file: str | None = None
) -> list[str] | None:
    """The names of a fine-tuned head's `count` labels: a Hugging Face config's `id2label`
    (config_file, default the one hf_config_file finds), else the labels.txt of the serving
    model a run_classifier.py or tagging run exported beside the checkpoint; None when neither
    names `count` distinct labels."""
    config_file = config_file or hf_config_file(checkpoint)
    names = safetensors_bert.read_hf_label_names(config_file, count) if config_file else None
    if names is not None:
        return names
    labels_file = os.path.join(checkpoint_directory(checkpoint), RUN_LABELS_FILE)
    if not is_file(labels_file):
        return None
    with tf.io.gfile.GFile(labels_file, "r") as reader:
        names = reader.read().splitlines()
    return names if len(names) == count and len(set(names)) == count else None


def are_generic(names: list[str]) -> bool:
    """Whether label names are transformers' placeholders (LABEL_0, LABEL_1, ...), which say
    nothing of what the labels are."""
    return names == [f"LABEL_{index}" for index in range(len(names))]


def multi_label_run(checkpoint: str) -> bool:
    """Whether a checkpoint is a multi-label run's (its tuned thresholds beside it)."""
    from official_bert.side_file_names import label_thresholds_path

    directory = checkpoint_directory(checkpoint)
    thresholds = (label_thresholds_path(directory), os.path.join(directory, RUN_THRESHOLDS_FILE))
    return any(map(is_file, thresholds))


# The Hugging Face classes whose heads transformers names alike (`classifier.weight` and
# `classifier.bias`), by the attribute of our model that holds such a head: a file's head can
# fill any of these models' heads of its size, and only config.json's class says which it is.
CLASSIFIER_NAMED_HEADS = {
    "classifier": "BertForSequenceClassification",
    "tagger": "BertForTokenClassification",
    "multiple_choice": "BertForMultipleChoice",
}


def classifier_named_head(model):
    """(attribute, head) of `model`'s head among CLASSIFIER_NAMED_HEADS (a ClassificationHead),
    or None."""
    for attribute in CLASSIFIER_NAMED_HEADS:
        head = getattr(model, attribute, None)
        if head is not None and hasattr(head, "dense"):
            return attribute, head
    return None


def other_head_class(checkpoint: str, attribute: str) -> str | None:
    """The Hugging Face class a checkpoint's config.json names when it is another of
    CLASSIFIER_NAMED_HEADS than the one whose head `attribute` holds (a sentence classifier's
    file read into a tagger); None when it names none of them, or that one."""
    config_file = hf_config_file(checkpoint)
    classes = safetensors_bert.read_hf_architectures(config_file) if config_file else []
    named = [name for name in classes if name in CLASSIFIER_NAMED_HEADS.values()]
    if not named or CLASSIFIER_NAMED_HEADS[attribute] in named:
        return None
    return named[0]


def sized_head(model):
    """The head of `model` whose outputs are labels (a classifier's or tagger's
    ClassificationHead), or None."""
    from official_bert.checkpoints.variable_table import SIZED_HEAD_PARTS

    for part in SIZED_HEAD_PARTS:
        head = getattr(model, part, None)
        if head is not None and hasattr(head, "dense"):
            return head
    return None


def reorder_head_outputs(head, checkpoint_names: list[str], labels: list[str]) -> None:
    """Moves the outputs of a head read from a checkpoint whose labels are `checkpoint_names`
    so that output i is `labels[i]` (the same names, numbered as the task numbers them)."""
    order = [checkpoint_names.index(name) for name in labels]
    head.dense.kernel.assign(head.dense.kernel.numpy()[:, order])
    head.dense.bias.assign(head.dense.bias.numpy()[order])
