"""This project's own checkpoints: object-based `tf.train.Checkpoint`s of our Keras models.

A model is saved under the root key `model` (`tf.train.Checkpoint(model=...)`), as the training
runner does next to its optimizer and step. Reading finds the encoder wherever it sits in the
object graph, so an encoder can be read from a pre-training or fine-tuning checkpoint and a
pre-training model from an encoder-only one (its heads then keep their initialization).
"""

from __future__ import annotations

import os

import keras
import tensorflow as tf
from absl import logging

from official_bert.checkpoints.original_tf1 import resolve_checkpoint_prefix, write_checkpoint_state
from official_bert.checkpoints.variable_table import SIZED_HEAD_PARTS, CheckpointMismatchError
from official_bert.file_system import absolute_path

_HEAD_ATTRIBUTES = ("masked_lm", "next_sentence", "classifier", "span", "tagger", "multiple_choice")


def write_object_checkpoint(model, prefix: str) -> str:
    """Writes `model` as `tf.train.Checkpoint(model=model)` at `prefix`, then the `checkpoint`
    state file of its directory (last, so the directory never names a half-written checkpoint).
    Returns the prefix."""
    path = tf.train.Checkpoint(model=model).write(prefix)
    write_checkpoint_state(os.path.dirname(absolute_path(path)), os.path.basename(path))
    return path


def _object_paths(prefix: str) -> dict[str, str | None]:
    """Every object path ("model/encoder/embeddings", ...) in a checkpoint's object graph, with
    the key its value is stored under when it is a variable (else None).

    Read from the graph rather than from variable keys: a variable reachable by several paths
    (e.g. through an optimizer's list of trainable variables) is keyed by only one of them.
    """
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(
        tf.train.load_checkpoint(prefix).get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH")
    )

    def value_key(node_id: int) -> str | None:
        keys = [
            a.checkpoint_key for a in graph.nodes[node_id].attributes if a.name == "VARIABLE_VALUE"
        ]
        return keys[0] if keys else None

    paths, queue, seen = {}, [(0, "")], {0}
    while queue:
        node, path = queue.pop(0)
        for child in graph.nodes[node].children:
            child_path = f"{path}/{child.local_name}" if path else child.local_name
            paths[child_path] = value_key(child.node_id)
            if child.node_id not in seen:
                seen.add(child.node_id)
                queue.append((child.node_id, child_path))
    return paths


def is_object_checkpoint(prefix: str) -> bool:
    """Whether the checkpoint at `prefix` is object-based (a `tf.train.Checkpoint`'s, with its
    object graph), not name-based (the original's TF1 layout)."""
    return tf.train.load_checkpoint(prefix).has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH")


def checkpoint_model_parts(prefix: str, root: str = "model") -> set[str]:
    """The names of the parts of the model saved under `root` that hold variables ("encoder",
    "classifier", "span", ...), read from the checkpoint's object graph."""
    return {
        path.split("/")[1]
        for path, key in _object_paths(prefix).items()
        if key is not None and path.startswith(f"{root}/")
    }


def model_parts(model) -> set[str]:
    """The names under which `model` holds variables in its object graph: its layers that
    have variables ("encoder" and its heads), and variables set on it directly.

    A training checkpoint's variables are restored through the optimizer's list of them, by
    position, whatever the model's parts: a classifier's 2-label head fills a span head of the
    same shapes. Comparing these names with checkpoint_model_parts' tells such models apart."""
    children = tf.train.TrackableView(model).children(model)
    return {
        name
        for name, child in children.items()
        if isinstance(child, (tf.Variable, keras.Variable)) or getattr(child, "variables", None)
    }


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
    from official_bert.models.feature_based_classifier import FeatureBasedClassifier

    prefix = resolve_checkpoint_prefix(path)
    paths = _object_paths(prefix)
    encoder_paths = sorted(
        p.rpartition("/embeddings/position_embeddings")[0]
        for p in paths
        if p.endswith("/embeddings/position_embeddings") or p == "embeddings/position_embeddings"
    )
    if len(encoder_paths) != 1:
        raise CheckpointMismatchError(
            f"checkpoint {prefix}: expected exactly one BERT encoder in the object graph, "
            f"found {len(encoder_paths)} ({encoder_paths})"
        )
    encoder_path = encoder_paths[0]
    # The encoder path ends with the attribute holding it ("model/encoder" or "model").
    parent, _, attribute = encoder_path.rpartition("/")
    encoder = model if isinstance(model, BertEncoder) else model.encoder
    children = {attribute: encoder}
    # A feature-based run's head reads raw layer features, not the heads of the fine-tuned
    # models' (only a FeatureBasedClassifier reads it as its own).
    frozen = not isinstance(model, FeatureBasedClassifier) and _trained_with_a_frozen_encoder(
        paths, encoder_path
    )
    if not isinstance(model, BertEncoder):
        for head_name in _HEAD_ATTRIBUTES:
            head = getattr(model, head_name, None)
            if head is None:
                continue
            in_checkpoint = (f"{parent}/{head_name}" if parent else head_name) in paths
            if in_checkpoint and frozen and head_name in SIZED_HEAD_PARTS:
                message = (
                    f"checkpoint {prefix} is a feature-based run's (its encoder frozen, as "
                    f"run_classifier.py --feature_mode=frozen_* trains): its '{head_name}' head "
                    "reads the encoder's raw layer features, which "
                    f"{type(model).__name__}'s does not"
                )
                if require_heads:
                    raise CheckpointMismatchError(message)
                logging.warning("%s; the head keeps its initialization", message)
            elif in_checkpoint:
                children[head_name] = head
            elif require_heads:
                raise CheckpointMismatchError(
                    f"checkpoint {prefix} has no '{head_name}' weights for {type(model).__name__}"
                )
            else:
                logging.info("%s: not in %s; keeping its initialization", head_name, prefix)
    _check_head_sizes(prefix, parent, model, children, paths)
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


def _trained_with_a_frozen_encoder(paths: dict, encoder_path: str) -> bool:
    """Whether a training run's checkpoint (the model beside its optimizer) trained none of the
    encoder's variables: the optimizer's list of trainable variables holds none of them. A
    checkpoint without an optimizer cannot tell."""
    trained = {
        key
        for path, key in paths.items()
        if key and path.startswith("optimizer/_trainable_variables/")
    }
    encoder_keys = {
        key for path, key in paths.items() if key and path.startswith(f"{encoder_path}/")
    }
    return bool(trained) and not trained & encoder_keys


def _check_head_sizes(prefix: str, parent: str, model, children: dict, paths: dict) -> None:
    """Raises CheckpointMismatchError with head_sizes when a classifier's or tagger's head in
    the checkpoint has another number of outputs than the model's (read before restoring, which
    would only say that some tensor has an incompatible shape). paths: _object_paths'."""
    shapes = dict(tf.train.list_variables(prefix))
    sizes, problems = {}, []
    for head_name in SIZED_HEAD_PARTS:
        if head_name not in children:
            continue
        dense_path = "/".join(filter(None, [parent, head_name, "dense"]))
        found = shapes.get(paths.get(f"{dense_path}/bias"))
        expected = children[head_name].dense.bias.shape[0]
        # The kernel's input width: another (a head on another encoder) is no label-count case.
        widths = {
            shapes[key][0]
            for path, key in paths.items()
            if path.startswith(f"{dense_path}/") and len(shapes.get(key, ())) == 2
        }
        if widths - {children[head_name].dense.kernel.shape[0]}:
            continue
        if found is not None and len(found) == 1 and found[0] != expected:
            sizes[head_name] = int(found[0])
            problems.append(f"its {head_name} head has {found[0]} outputs, the model's {expected}")
    if sizes:
        raise CheckpointMismatchError(
            f"checkpoint {prefix} does not fit {type(model).__name__}: " + "; ".join(problems),
            head_sizes=sizes,
        )
