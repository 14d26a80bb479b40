"""BERT weights in transformers' TensorFlow 2 file (`tf_model.h5`: Keras 2 `save_weights` of a
TFBertModel, TFBertForPreTraining, ...) read into this project's models.

The file is HDF5: the root's `layer_names` attribute lists the model's top layers (`bert`,
`mlm___cls`, `nsp___cls`, `classifier`, ...); each layer's group lists its `weight_names`, such
as `tf_bert_for_pre_training/bert/encoder/layer_._0/attention/self/query/kernel:0`, under which
its dataset is stored. Kernels are [in, out], as in the original TF1 checkpoints, so after the
model name is dropped and the names are mapped (_NAME_TABLE) the original reader's checks and
assignment apply unchanged. Read with h5py, which Keras installs.
"""

from __future__ import annotations

import os
import re

import numpy as np
import tensorflow as tf

from official_bert.checkpoints.original_tf1 import load_tf1_named_arrays
from official_bert.checkpoints.variable_table import model_entries
from official_bert.file_system import is_file, local_copy

WEIGHTS_NAME = "tf_model.h5"
FILE_SUFFIX = ".h5"

# transformers' TF 2 weight name (the model's name dropped) -> original TF1 name.
_NAME_TABLE = [
    (r"/layer_\._(\d+)/", r"/layer_\1/"),
    (r"^bert/embeddings/word_embeddings/weight$", "bert/embeddings/word_embeddings"),
    (
        r"^bert/embeddings/(position|token_type)_embeddings/embeddings$",
        r"bert/embeddings/\1_embeddings",
    ),
    (r"^mlm___cls/predictions/bias$", "cls/predictions/output_bias"),
    (r"^mlm___cls/predictions/", "cls/predictions/"),
    (r"^nsp___cls/seq_relationship/kernel$", "cls/seq_relationship/output_weights"),
    (r"^nsp___cls/seq_relationship/bias$", "cls/seq_relationship/output_bias"),
    (r"^classifier/kernel$", "output_weights"),
    (r"^classifier/bias$", "output_bias"),
    (r"^qa_outputs/kernel$", "cls/squad/output_weights"),
    (r"^qa_outputs/bias$", "cls/squad/output_bias"),
]
# TFBertForTokenClassification and TFBertForMultipleChoice call their heads "classifier" too: a
# tagger or a multiple-choice model reads it under its own names (cls/<part>/output_weights, ...).
_PARTS_NAMED_AS_CLASSIFIER = ("tagger", "multiple_choice")
# Heads whose original variable is [out, in] where transformers' Dense kernel is [in, out].
_TRANSPOSED = {"cls/seq_relationship/output_weights", "output_weights", "cls/squad/output_weights"}


def tf1_name(h5_weight_name: str) -> str:
    """The original TF1 name of a transformers TF 2 weight name ("<model>/bert/...:0")."""
    name = h5_weight_name.split(":")[0]
    name = name.split("/", 1)[1] if "/" in name else name
    for pattern, replacement in _NAME_TABLE:
        name = re.sub(pattern, replacement, name)
    return name


def h5_weights_path(path: str) -> str:
    """`path` itself, or tf_model.h5 inside the directory `path`."""
    if tf.io.gfile.isdir(path):
        path = os.path.join(path, WEIGHTS_NAME)
    if not is_file(path):
        raise FileNotFoundError(f"TensorFlow 2 HDF5 weights file not found: {path}")
    return path


def load_h5_arrays(path: str) -> dict[str, np.ndarray]:
    """{original TF1 name: array} of a transformers `tf_model.h5` (a file or its directory)."""
    import h5py  # Keras's own dependency; imported here, as only this layout needs it

    path = h5_weights_path(path)
    arrays = {}
    try:
        with local_copy(path) as local, h5py.File(local, "r") as file:
            if "layer_names" not in file.attrs:
                raise ValueError(
                    f"{path}: not Keras 2 save_weights HDF5 (no 'layer_names'), as transformers "
                    "writes tf_model.h5"
                )
            for layer in file.attrs["layer_names"]:
                group = file[_text(layer)]
                for weight in group.attrs.get("weight_names", []):
                    name = tf1_name(_text(weight))
                    value = np.asarray(group[_text(weight)])
                    arrays[name] = value.T if name in _TRANSPOSED else value
    except OSError as error:  # h5py's error for a file that is not HDF5, or is damaged
        raise ValueError(f"{path}: not a readable HDF5 file ({error})") from None
    return arrays


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def read_h5_checkpoint(path: str, model, require_heads: bool = False) -> int:
    """Loads a transformers `tf_model.h5` (file or directory) into `model`, as
    read_original_checkpoint does from the original layout; returns the number of variables
    loaded."""
    path = h5_weights_path(path)
    arrays = load_h5_arrays(path)
    parts = {entry.part for entry in model_entries(model)}
    for part in parts.intersection(_PARTS_NAMED_AS_CLASSIFIER):
        arrays = {
            f"cls/{part}/{name}" if name in ("output_weights", "output_bias") else name: value
            for name, value in arrays.items()
        }
    return load_tf1_named_arrays(arrays, model, f"TensorFlow 2 HDF5 weights {path}", require_heads)
