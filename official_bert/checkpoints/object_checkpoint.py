"""This project's own checkpoints: object-based `tf.train.Checkpoint`s of our Keras models.

A model is saved under the root key `model` (`tf.train.Checkpoint(model=...)`), as the training
runner does next to its optimizer and step. Reading finds the encoder wherever it sits in the
object graph, so an encoder can be read from a pre-training or fine-tuning checkpoint and a
pre-training model from an encoder-only one (its heads then keep their initialization).
"""

from __future__ import annotations

import os

import tensorflow as tf
from absl import logging

from official_bert.checkpoints.original_tf1 import resolve_checkpoint_prefix, write_checkpoint_state
from official_bert.checkpoints.variable_table import CheckpointMismatchError

# The position table is reached only through the encoder (the word table is shared with the
# MLM head, so the checkpoint may list it under either path).
_ENCODER_MARKER = "/embeddings/position_embeddings/"
_HEAD_ATTRIBUTES = ("masked_lm", "next_sentence", "classifier", "span")


def is_object_checkpoint(path: str) -> bool:
    names = [name for name, _ in tf.train.list_variables(resolve_checkpoint_prefix(path))]
    return "_CHECKPOINTABLE_OBJECT_GRAPH" in names


def write_object_checkpoint(model, prefix: str) -> str:
    """Writes `model` as `tf.train.Checkpoint(model=model)` at `prefix`, then the `checkpoint`
    state file of its directory (last, so the directory never names a half-written checkpoint).
    Returns the prefix."""
    path = tf.train.Checkpoint(model=model).write(prefix)
    write_checkpoint_state(os.path.dirname(os.path.abspath(path)), os.path.basename(path))
    return path


def _nest(path: str, **children) -> tf.train.Checkpoint:
    """A chain of Checkpoint objects that puts `children` at the object path `path` (a/b/c)."""
    node = tf.train.Checkpoint(**children)
    for key in reversed([part for part in path.split("/") if part]):
        node = tf.train.Checkpoint(**{key: node})
    return node


def read_object_checkpoint(path: str, model, require_heads: bool = False) -> None:
    """Restores one of our models from an object-based checkpoint written by this project.

    Raises CheckpointMismatchError when the encoder (or, with `require_heads`, a head of the
    model) is not in the checkpoint, or a variable's shape differs.
    """
    from official_bert.models import BertEncoder

    prefix = resolve_checkpoint_prefix(path)
    shapes = dict(tf.train.list_variables(prefix))
    encoder_paths = sorted(
        {name.split(_ENCODER_MARKER)[0] for name in shapes if _ENCODER_MARKER in name}
    )
    if len(encoder_paths) != 1:
        raise CheckpointMismatchError(
            f"checkpoint {prefix}: expected exactly one BERT encoder in the object graph, "
            f"found {len(encoder_paths)} ({encoder_paths})"
        )
    encoder_path = encoder_paths[0]
    # The encoder path ends with the attribute holding it ("model/encoder" or "model").
    parent, _, _ = encoder_path.rpartition("/")
    encoder = model if isinstance(model, BertEncoder) else model.encoder
    children = {encoder_path.rpartition("/")[2]: encoder}
    if not isinstance(model, BertEncoder):
        for attribute in _HEAD_ATTRIBUTES:
            head = getattr(model, attribute, None)
            if head is None:
                continue
            head_path = f"{parent}/{attribute}/" if parent else f"{attribute}/"
            if any(name.startswith(head_path) for name in shapes):
                children[attribute] = head
            elif require_heads:
                raise CheckpointMismatchError(
                    f"checkpoint {prefix} has no '{attribute}' weights for {type(model).__name__}"
                )
            else:
                logging.info("%s: not in %s; keeping its initialization", attribute, prefix)
    checkpoint = _nest(parent, **children)
    try:
        status = checkpoint.read(prefix)
        status.assert_existing_objects_matched()
    except (AssertionError, ValueError, tf.errors.InvalidArgumentError) as error:
        raise CheckpointMismatchError(
            f"checkpoint {prefix} does not fit the model: {error}"
        ) from None
    status.expect_partial()
    logging.info("Restored %s from object-based checkpoint %s", type(model).__name__, prefix)
