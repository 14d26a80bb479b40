"""Original Google BERT checkpoints (TF1, name-based: `bert/...`, `cls/...`): read and write."""

from __future__ import annotations

import os
import re
import uuid

import numpy as np
import tensorflow as tf
from absl import logging

from official_bert.atomic_output import remove_stale_temporaries
from official_bert.checkpoints.damaged_checkpoint import damaged_checkpoint_named
from official_bert.checkpoints.tf1_hub_module import is_tf1_hub_module, module_checkpoint_prefix
from official_bert.checkpoints.variable_table import (
    WeightEntry,
    config_from_shapes,
    layer_count,
    log_kept_initializations,
    model_entries,
    raise_if_mismatched,
    sized_head_mismatches,
    skippable_parts,
)
from official_bert.config import write_text_atomically
from official_bert.file_system import absolute_path

# Variables a training run leaves in a checkpoint that are not model weights: the step counter,
# optimizer slots (the original AdamWeightDecayOptimizer's adam_m/adam_v, tf.train optimizers'
# Adam/Momentum/..., LAMB), loss-scale state and moving averages.
_NON_MODEL_VARIABLE = re.compile(
    r"(^|/)(global_step|beta1_power|beta2_power|good_steps|loss_scale|current_loss_scale)$"
    r"|/(adam_m|adam_v|lamb_m|lamb_v|Adam|Adam_1|Momentum|RMSProp|RMSProp_1|Adagrad|"
    r"ExponentialMovingAverage|LAMB|LAMB_1)$"
)
# Head variables of the original scripts; unused ones are fine (e.g. an encoder read from a
# pre-training checkpoint leaves cls/* aside).
_KNOWN_HEAD_VARIABLE = re.compile(r"^(cls/.*|output_weights|output_bias)$")


def folder_checkpoint_prefix(directory: str) -> str | None:
    """The checkpoint a folder holds: the one its `checkpoint` state file names, else its only
    prefix (the original release's zips hold bert_model.ckpt without a state file); None
    where it holds none, or several and no state file naming one of them.

    The state file may name the checkpoint by an absolute path of the place it was written
    (the original's Estimator did: gs://bucket/run/model.ckpt-5); in a folder copied or moved
    since, the checkpoint of that name in this folder is the one meant.
    """
    named = state_file_checkpoint(directory)
    if named is not None:
        here = os.path.join(directory, os.path.basename(named))
        for candidate in (named, here):
            if tf.io.gfile.exists(candidate + ".index"):
                return candidate
    prefixes = _folder_prefixes(directory)
    return prefixes[0] if len(prefixes) == 1 else None


def state_file_checkpoint(directory: str) -> str | None:
    """The checkpoint `directory`'s `checkpoint` state file names (as written: relative paths
    joined to the folder), or None where it has no readable state file. Read without
    tf.train.latest_checkpoint, which logs an ERROR for a name whose files are elsewhere."""
    if not tf.io.gfile.exists(os.path.join(directory, "checkpoint")):
        return None
    try:
        state = tf.train.get_checkpoint_state(directory)
    except (tf.errors.OpError, ValueError):
        return None
    if state is None or not state.model_checkpoint_path:
        return None
    named = state.model_checkpoint_path
    absolute = os.path.isabs(named) or "://" in named
    return named if absolute else os.path.join(directory, named)


def _folder_prefixes(directory: str) -> list[str]:
    """The prefixes of the checkpoints in `directory` (their .index files), in name order."""
    return sorted(
        index[: -len(".index")]
        for index in tf.io.gfile.glob(os.path.join(directory, "*.index"))
        # A writer's temporary names begin with a dot (side_file_names).
        if not os.path.basename(index).startswith(".")
    )


def resolve_checkpoint_prefix(path: str) -> str:
    """The checkpoint prefix for `path`: a prefix itself, a directory with a `checkpoint` file
    or with one checkpoint, or the folder of a TF1 Hub module (its variables/variables)."""
    if is_tf1_hub_module(path):
        return module_checkpoint_prefix(path)
    if tf.io.gfile.isdir(path):
        prefix = folder_checkpoint_prefix(path)
        if prefix is not None:
            return prefix
        prefixes = _folder_prefixes(path)  # again, only to say what is wrong
        if prefixes:
            indexes = [os.path.basename(p) + ".index" for p in prefixes]
            named = state_file_checkpoint(path)
            state = (
                f"a `checkpoint` file naming {named}, which is neither there nor here"
                if named
                else "no `checkpoint` file naming one"
            )
            raise FileNotFoundError(
                f"{path} holds several checkpoints ({', '.join(indexes[:4])}"
                f"{' ...' if len(indexes) > 4 else ''}) and {state}; "
                f"pass the prefix of the one to read, e.g. {prefixes[0]}"
            )
        raise FileNotFoundError(f"no checkpoint found in directory {path}")
    if not tf.io.gfile.exists(path + ".index"):
        raise FileNotFoundError(
            f"checkpoint not found: {path} (expected {path}.index and its data files; pass the "
            "prefix, e.g. .../bert_model.ckpt, not one of its files)"
        )
    return path


def read_original_checkpoint(
    path: str, model, require_heads: bool = False, scope_prefix: str = ""
) -> list[WeightEntry]:
    """Loads an original BERT checkpoint into `model` (a built BertEncoder, BertPretrainer,
    BertClassifier or BertSpanLabeler).

    Args:
      path: checkpoint prefix (e.g. `uncased_L-12_H-768_A-12/bert_model.ckpt`) or directory.
      model: the target model; it must be built.
      require_heads: when False (the default), a head that is wholly absent from the checkpoint
        keeps its fresh initialization, as when fine-tuning from a pre-training checkpoint. When
        True, every weight of the model must be in the checkpoint.
      scope_prefix: a prefix in front of every name in the checkpoint (for checkpoints written
        under an outer scope).

    Returns:
      The entries that were loaded.

    Raises:
      CheckpointMismatchError: listing every missing, unexpected or mis-shaped variable.
    """
    prefix = resolve_checkpoint_prefix(path)
    reader = tf.train.load_checkpoint(prefix)
    return load_tf1_named_weights(
        reader.get_variable_to_shape_map(),
        reader.get_tensor,
        model,
        f"original checkpoint {prefix}",
        require_heads=require_heads,
        scope_prefix=scope_prefix,
    )


def load_tf1_named_weights(
    shapes: dict,
    get_tensor,
    model,
    source: str,
    require_heads: bool = False,
    scope_prefix: str = "",
) -> list[WeightEntry]:
    """Loads weights under the original TF1 names (layout included) into `model`.

    shapes: {name: shape} of what the source holds; get_tensor(name): its value as numpy.
    source: what they were read from, for messages ("original checkpoint PREFIX", ...).
    The other arguments and the result are those of read_original_checkpoint.
    """
    entries = model_entries(model)

    names = {scope_prefix + entry.tf1_name for entry in entries}
    missing = [e for e in entries if scope_prefix + e.tf1_name not in shapes]
    skipped_parts = skippable_parts(entries, missing, require_heads, model)
    missing = [e for e in missing if e.part not in skipped_parts]

    unexpected = []
    for name in sorted(shapes):
        if name in names or _NON_MODEL_VARIABLE.search(name):
            continue
        bare = name[len(scope_prefix) :] if name.startswith(scope_prefix) else name
        if _KNOWN_HEAD_VARIABLE.match(bare):
            continue
        unexpected.append(f"{name} {list(shapes[name])}")

    own_shapes = {  # the names without scope_prefix
        name[len(scope_prefix) :]: shape
        for name, shape in shapes.items()
        if name.startswith(scope_prefix)
    }
    mis_shaped = [
        (e, tuple(shapes[scope_prefix + e.tf1_name]))
        for e in entries
        if e not in missing
        and e.part not in skipped_parts
        and tuple(shapes[scope_prefix + e.tf1_name]) != tuple(e.tf1_shape)
    ]
    raise_if_mismatched(
        source,
        model,
        [f"{e.tf1_name} {list(e.tf1_shape)}" for e in missing],
        [
            f"{e.tf1_name}: checkpoint {list(shape)}, model expects {list(e.tf1_shape)}"
            for e, shape in mis_shaped
        ],
        unexpected,
        head_sizes=sized_head_mismatches(mis_shaped),
        checkpoint_sizes=config_from_shapes(own_shapes, layer_count(own_shapes)),
    )

    loaded = [e for e in entries if e.part not in skipped_parts]
    for entry in loaded:
        value = get_tensor(scope_prefix + entry.tf1_name)
        entry.variable.assign(entry.to_model_value(value).astype(entry.variable.dtype))
    log_kept_initializations(skipped_parts, model, source)
    logging.info("Loaded %d variables from %s", len(loaded), source)
    return loaded


def load_tf1_named_arrays(arrays: dict, model, source: str, require_heads: bool = False) -> int:
    """load_tf1_named_weights from arrays in memory ({original TF1 name: numpy array}, as the
    readers of other layouts map them); returns the number of variables loaded."""
    loaded = load_tf1_named_weights(
        {name: value.shape for name, value in arrays.items()},
        arrays.__getitem__,
        model,
        source,
        require_heads=require_heads,
    )
    return len(loaded)


def write_original_checkpoint(model, prefix: str, write_state: bool = True) -> str:
    """Writes `model`'s weights as an original BERT checkpoint at `prefix` (e.g.
    `out/bert_model.ckpt`), readable by the original code's `init_from_checkpoint` and by ours.

    Files appear atomically: they are written in a temporary directory and moved into place,
    `checkpoint` (the state file naming the latest checkpoint) last. `write_state=False` leaves
    the state file alone, for a directory whose state file belongs to a training run.

    Returns:
      The prefix written.
    """
    return write_original_entries(model_entries(model), prefix, write_state)


def write_original_entries(
    entries: list[WeightEntry], prefix: str, write_state: bool = True
) -> str:
    """Writes the weights of `entries` (model_entries of a model, or a part of them such as one
    head's) under their original names at `prefix`, as write_original_checkpoint."""
    # tf.io.gfile, not os: the prefix may be on Cloud Storage (gs://), as for a Cloud TPU.
    directory = os.path.dirname(absolute_path(prefix))
    basename = os.path.basename(prefix)
    remove_stale_temporaries(f"{directory}/.tmp-ckpt-*")
    staging = f"{directory}/.tmp-ckpt-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tf.io.gfile.makedirs(staging)
    try:
        # SaveV2 writes a V2 name-based checkpoint (.index + .data) from eager tensors, exactly
        # what tf.compat.v1.train.Saver would write, without building a TF1 graph.
        tf.raw_ops.SaveV2(
            prefix=os.path.join(staging, basename),
            tensor_names=[entry.tf1_name for entry in entries],
            shape_and_slices=[""] * len(entries),
            tensors=[tf.constant(entry.to_tf1_value()) for entry in entries],
        )
        for name in sorted(tf.io.gfile.listdir(staging)):
            tf.io.gfile.rename(f"{staging}/{name}", f"{directory}/{name}", overwrite=True)
        if write_state:
            write_checkpoint_state(directory, basename)
    finally:
        if tf.io.gfile.exists(staging):
            tf.io.gfile.rmtree(staging)
    logging.info("Wrote %d variables in the original BERT layout to %s", len(entries), prefix)
    return prefix


def write_checkpoint_state(directory: str, basename: str) -> None:
    """Writes the `checkpoint` state file that makes `directory` resolve to `basename`.

    The path is relative, so the folder can be moved or copied elsewhere.
    """
    write_text_atomically(
        os.path.join(directory, "checkpoint"),
        f'model_checkpoint_path: "{basename}"\nall_model_checkpoint_paths: "{basename}"\n',
    )


def read_original_entries(path: str, entries: list[WeightEntry], owner) -> None:
    """Assigns each of `entries` (e.g. one head's) from the name-based checkpoint at `path`;
    `owner` is the model or layer they belong to (named in errors).

    Raises:
      CheckpointMismatchError: naming every entry the checkpoint lacks or holds in another shape.
    """
    prefix = resolve_checkpoint_prefix(path)
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    missing = [f"{e.tf1_name} {list(e.tf1_shape)}" for e in entries if e.tf1_name not in shapes]
    mis_shaped = [
        f"{e.tf1_name}: checkpoint {shapes[e.tf1_name]}, model expects {list(e.tf1_shape)}"
        for e in entries
        if e.tf1_name in shapes and tuple(shapes[e.tf1_name]) != tuple(e.tf1_shape)
    ]
    raise_if_mismatched(f"checkpoint {prefix}", owner, missing, mis_shaped, [])
    for entry in entries:
        value = entry.to_model_value(reader.get_tensor(entry.tf1_name))
        entry.variable.assign(value.astype(entry.variable.dtype))


def read_checkpoint_arrays(path: str) -> dict[str, np.ndarray]:
    """Every variable of a name-based checkpoint as numpy arrays (for inspection and tests)."""
    prefix = resolve_checkpoint_prefix(path)
    with damaged_checkpoint_named(prefix):
        reader = tf.train.load_checkpoint(prefix)
        return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}
