"""A keras-hub BertBackbone's weights file (Keras 3 `model.weights.h5`), read into this
project's models and written from them; the head of a BertTextClassifier or BertMaskedLM
preset (`task.weights.h5`) too. The preset folder around it is keras_hub_preset.py.

Keras 3 addresses a weight by where it sits in the model, not by its name: `layers/<layer>`
with the layer named after its class in snake case and numbered in the model's order
(`transformer_encoder`, `transformer_encoder_1`, ...), then the layer's attributes, then
`vars/<index>` in the order the layer created them (kernel before bias, gamma before beta).
That address is what Keras itself loads by, so it is what is read here; newer Keras also
records the layer's given name on each `vars` group (`pooled_dense`, `transformer_layer_3`),
which is checked where present, and every weight in the file must be read. keras-hub's
attention kernels are EinsumDense kernels, [hidden, heads, head_size] and
[heads, head_size, hidden]; their shapes are checked (the head count against the model's) and
reshaped to the original's [hidden, hidden], under the original TF1 names, so the original
reader's checks and assignment apply unchanged. Written the other way, at the same addresses
with the same names, the file equals the one keras-hub writes for the same weights. Read and
written with h5py (a Keras dependency), without keras-hub.
"""

from __future__ import annotations

import contextlib
import os
import re

import numpy as np
import tensorflow as tf
from absl import logging

from official_bert.atomic_output import atomic_output
from official_bert.checkpoints import keras_hub_preset as preset_files
from official_bert.checkpoints.original_tf1 import load_tf1_named_arrays
from official_bert.checkpoints.variable_table import (
    ENCODER_PARTS,
    CheckpointMismatchError,
    model_entries,
)
from official_bert.file_system import is_file, local_copy, local_output

_BACKBONE = "a keras-hub BertBackbone's weights"
_CLASSIFIER_HEAD = "a keras-hub BertTextClassifier's head"
_MASKED_LM_HEAD = "a keras-hub BertMaskedLM's head"

# BertBackbone's top layers: Keras's address -> (the name keras-hub gives it, TF1 scope).
_EMBEDDING_LAYERS = {
    "reversible_embedding": ("token_embedding", "bert/embeddings/word_embeddings"),
    "position_embedding": ("position_embedding", "bert/embeddings/position_embeddings"),
    "embedding": ("segment_embedding", "bert/embeddings/token_type_embeddings"),
}
_LAYER_NORM_VARIABLES = ("gamma", "beta")
_DENSE_VARIABLES = ("kernel", "bias")
# A TransformerEncoder's sublayers, as Keras 3.15 addresses them (older Keras writes the
# attention's projections with a leading underscore too: `_query_dense`) -> TF1 scope in
# `layer_N/`.
_BLOCK_SUBLAYERS = {
    "_self_attention_layer/query_dense": "attention/self/query",
    "_self_attention_layer/key_dense": "attention/self/key",
    "_self_attention_layer/value_dense": "attention/self/value",
    "_self_attention_layer/output_dense": "attention/output/dense",
    "_self_attention_layer_norm": "attention/output/LayerNorm",
    "_feedforward_intermediate_dense": "intermediate/dense",
    "_feedforward_output_dense": "output/dense",
    "_feedforward_layer_norm": "output/LayerNorm",
}
_BLOCK_ADDRESS = re.compile(r"^transformer_encoder(?:_(\d+))?$")
# keras-hub's MaskedLMHead (a BertMaskedLM's `mlm_head`): its sublayers' Keras addresses ->
# (the names keras-hub gives them, their variables, the original's scope in cls/predictions/).
_MASKED_LM_ADDRESS = "masked_lm_head"
_MASKED_LM_SUBLAYERS = {
    "_intermediate_dense": ("intermediate_dense", _DENSE_VARIABLES, "transform/dense"),
    "_intermediate_layer_norm": (
        "intermediate_layer_norm",
        _LAYER_NORM_VARIABLES,
        "transform/LayerNorm",
    ),
}


def _block_address(index: int) -> str:
    return "transformer_encoder" + (f"_{index}" if index else "")


class _WeightsFile:
    """One Keras `.weights.h5` file being read: the variables of the layer at a Keras address,
    and which of the file's datasets were read."""

    def __init__(self, path: str, file, what: str):
        self.path = path
        self.what = what
        self.read: set[str] = set()
        # Keras 2.13's weights files (older presets) call the top group
        # `_layer_checkpoint_dependencies`; Keras 3 reads both.
        for top in ("layers", "_layer_checkpoint_dependencies"):
            if top in file:
                self.layers = self._child_group(file, top)
                break
        else:
            raise ValueError(
                f"{path}: no 'layers' group; not {what} (a Keras model's own save_weights file "
                "is read by its load_weights)"
            )

    def _child_group(self, parent, name: str):
        import h5py

        child = parent[name]
        if not isinstance(child, h5py.Group):
            raise ValueError(f"{self.path}: {child.name} is a dataset where a group belongs")
        return child

    def group(self, address: str):
        """The group at `address` (`a/b/c`), each part matched with or without a leading
        underscore (Keras versions differ there)."""
        group = self.layers
        for part in address.split("/"):
            bare = part.lstrip("_")
            for candidate in (part, bare, "_" + bare):
                if candidate in group:
                    group = self._child_group(group, candidate)
                    break
            else:
                raise ValueError(
                    f"{self.path}: no 'layers/{address}' in the file (found "
                    f"{sorted(group.keys())} at {group.name}); not {self.what}?"
                )
        return group

    def check_name(self, address: str, given_name: str) -> None:
        """Raises a ValueError where newer Keras recorded another name for the layer at
        `address` than keras-hub gives the layer there."""
        group = self.group(address)
        recorded = self._child_group(group, "vars").attrs.get("name") if "vars" in group else None
        if recorded is not None and _text(recorded) != given_name:
            raise ValueError(
                f"{self.path}: layers/{address} is named {_text(recorded)!r}, expected "
                f"{given_name!r} (the layers of {self.what}, in their order)"
            )

    def variables(self, address: str, names: tuple, given_name: str | None = None) -> dict:
        """{name: float array} of the layer at `address`, its `vars/0..` called `names`."""
        import h5py

        group = self.group(address)
        variables = self._child_group(group, "vars") if "vars" in group else {}
        if given_name is not None:
            self.check_name(address, given_name)
        if len(variables) != len(names):
            raise ValueError(
                f"{self.path}: layers/{address} holds {len(variables)} variables, expected "
                f"{len(names)} ({', '.join(names)})"
            )
        arrays = {}
        for index, name in enumerate(names):
            dataset = variables.get(str(index))
            if not isinstance(dataset, h5py.Dataset):
                raise ValueError(
                    f"{self.path}: layers/{address}/vars/{index} ({name}) is not a dataset"
                )
            arrays[name] = self._float_array(dataset)
            self.read.add(dataset.name)
        return arrays

    def _float_array(self, dataset) -> np.ndarray:
        """The dataset's values as a float array; Keras stores bfloat16 as 2-byte opaque
        values marked by a `dtype` attribute, widened here to float32."""
        value = np.asarray(dataset[()])
        if _text(dataset.attrs.get("dtype", "")) == "bfloat16" and value.dtype.itemsize == 2:
            import ml_dtypes  # a TensorFlow and Keras dependency

            return value.view(ml_dtypes.bfloat16).astype(np.float32)
        if value.dtype.kind != "f":
            raise ValueError(
                f"{self.path}: {dataset.name} holds {value.dtype} values; expected floats "
                "(float16/32/64, or Keras's bfloat16)"
            )
        return value

    def check_all_read(self) -> None:
        """Raises a ValueError naming the weights in the file that no mapping read (a layer
        this reader does not know would otherwise be dropped without a word)."""
        import h5py

        unread = []

        def visit(name, item):
            if isinstance(item, h5py.Dataset) and item.name not in self.read:
                unread.append(item.name)

        self.layers.visititems(visit)
        if unread:
            listed = ", ".join(sorted(unread)[:10]) + (" ..." if len(unread) > 10 else "")
            raise ValueError(
                f"{self.path}: {len(unread)} weights are not part of {self.what}: {listed}"
            )


def _block_indexes(weights: _WeightsFile) -> list[int]:
    indexes = []
    for address in weights.layers:
        match = _BLOCK_ADDRESS.match(address)
        if match:
            indexes.append(int(match.group(1) or 0))
    indexes.sort()
    if indexes != list(range(len(indexes))):
        raise ValueError(f"{weights.path}: transformer layers numbered {indexes}")
    return indexes


def _attention_arrays(weights, address: str, scope: str, hidden: int, heads: int | None):
    """The kernel and bias of an attention projection in the original's [hidden, hidden] and
    [hidden] shapes, and the number of heads its EinsumDense shape records."""
    values = weights.variables(address, _DENSE_VARIABLES)
    kernel, bias = values["kernel"], values["bias"]
    if scope == "attention/output/dense":
        expected = "[heads, head_size, hidden] and [hidden]"
        fits = kernel.ndim == 3 and kernel.shape[2] == hidden and bias.shape == (hidden,)
        split = kernel.shape[:2]
    else:
        expected = "[hidden, heads, head_size] and [heads, head_size]"
        fits = kernel.ndim == 3 and kernel.shape[0] == hidden and bias.shape == kernel.shape[1:]
        split = kernel.shape[1:]
    if not fits or split[0] * split[1] != hidden:
        raise ValueError(
            f"{weights.path}: layers/{address}: kernel {list(kernel.shape)}, bias "
            f"{list(bias.shape)}; expected {expected} with heads x head_size = hidden = {hidden}"
        )
    if heads is not None and split[0] != heads:
        raise ValueError(
            f"{weights.path}: layers/{address} has {split[0]} attention heads, other "
            f"projections {heads}"
        )
    return {"kernel": kernel.reshape(hidden, hidden), "bias": bias.reshape(hidden)}, split[0]


def _backbone_arrays(weights: _WeightsFile) -> tuple[dict[str, np.ndarray], int | None]:
    """{TF1 name: array} of a BertBackbone's weights, and its number of attention heads."""
    arrays = {}
    for address, (given_name, tf1_name) in _EMBEDDING_LAYERS.items():
        table = weights.variables(address, ("embeddings",), given_name)["embeddings"]
        if table.ndim != 2:
            raise ValueError(
                f"{weights.path}: layers/{address} holds {list(table.shape)}, expected a "
                "[rows, hidden] table"
            )
        arrays[tf1_name] = table
    hidden = arrays["bert/embeddings/word_embeddings"].shape[1]
    norm = weights.variables("layer_normalization", _LAYER_NORM_VARIABLES, "embeddings_layer_norm")
    for name, value in norm.items():
        arrays[f"bert/embeddings/LayerNorm/{name}"] = value
    pooler = weights.variables("dense", _DENSE_VARIABLES, "pooled_dense")
    for name, value in pooler.items():
        arrays[f"bert/pooler/dense/{name}"] = value
    heads = None
    for index in _block_indexes(weights):
        block = _block_address(index)
        weights.check_name(block, f"transformer_layer_{index}")
        for sublayer, scope in _BLOCK_SUBLAYERS.items():
            address = f"{block}/{sublayer}"
            if scope.startswith("attention/") and not scope.endswith("LayerNorm"):
                values, heads = _attention_arrays(weights, address, scope, hidden, heads)
            else:
                names = _LAYER_NORM_VARIABLES if scope.endswith("LayerNorm") else _DENSE_VARIABLES
                values = weights.variables(address, names)
            for name, value in values.items():
                arrays[f"bert/encoder/layer_{index}/{scope}/{name}"] = value
    return arrays, heads


# Our head part -> (the keras-hub task classes whose head it is read from, what their weights
# are, what the model's head is called in messages).
_TASK_HEADS = {
    "classifier": (preset_files.TEXT_CLASSIFIER_CLASSES, _CLASSIFIER_HEAD, "classifier"),
    "masked_lm": (preset_files.MASKED_LM_CLASSES, _MASKED_LM_HEAD, "masked-LM head"),
}


def _task_head_arrays(
    directory: str, part: str, head_required: bool = False
) -> dict[str, np.ndarray]:
    """{TF1 name: array} of the preset's task head that the model's `part` is read from: a
    BertTextClassifier's `logits` Dense for "classifier", a BertMaskedLM's MaskedLMHead for
    "masked_lm" (read_keras_hub_checkpoint reads it only into a head that runs as keras-hub's).
    Empty, with a warning, where the preset's task is another; with head_required (the reader
    then refuses the preset) an info line instead: the model's head keeps nothing."""
    classes, what, called = _TASK_HEADS[part]
    task_config = os.path.join(directory, preset_files.TASK_CONFIG_NAME)
    task = preset_files.read_keras_hub_json(task_config)
    class_name = task.get("class_name") if task else None
    if class_name not in classes:
        (logging.info if head_required else logging.warning)(
            "%s: no %s head (task: %s); the model's %s keeps its initialization",
            directory,
            classes[0],
            class_name or "none readable",
            called,
        )
        return {}
    path = os.path.join(directory, preset_files.TASK_WEIGHTS_NAME)
    with _open(path) as file:
        weights = _WeightsFile(path, file, what)
        if part == "classifier":
            return _classifier_head_arrays(weights, task, task_config)
        return _masked_lm_head_arrays(weights)


def _classifier_head_arrays(weights: _WeightsFile, task: dict, task_config: str) -> dict:
    """A BertTextClassifier's `logits` Dense as the original classifier's output_weights
    [classes, hidden] and output_bias."""
    activation = task["config"].get("activation")
    if activation not in (None, "linear", "softmax"):
        logging.warning(
            "%s: the classifier head's %r activation is not applied; the model outputs logits",
            task_config,
            activation,
        )
    head = weights.variables("dense", _DENSE_VARIABLES, "logits")
    if head["kernel"].ndim != 2 or head["bias"].shape != head["kernel"].shape[1:]:
        raise ValueError(
            f"{weights.path}: the logits layer holds kernel {list(head['kernel'].shape)} and "
            f"bias {list(head['bias'].shape)}; expected [hidden, classes] and [classes]"
        )
    return {"output_weights": head["kernel"].T, "output_bias": head["bias"]}


def _masked_lm_head_arrays(weights: _WeightsFile) -> dict:
    """A BertMaskedLM's MaskedLMHead as the original's cls/predictions/...: its dense and
    LayerNorm, and its output bias (the projection is the token embedding, tied, as the
    original's). Every weight in the file's layers must be one of these (an untied output
    kernel would be left out otherwise)."""
    arrays = {}
    for sublayer, (given_name, names, scope) in _MASKED_LM_SUBLAYERS.items():
        values = weights.variables(f"{_MASKED_LM_ADDRESS}/{sublayer}", names, given_name)
        for name, value in values.items():
            arrays[f"cls/predictions/{scope}/{name}"] = value
    bias = weights.variables(_MASKED_LM_ADDRESS, ("output_bias",), "mlm_head")["output_bias"]
    arrays["cls/predictions/output_bias"] = bias
    weights.check_all_read()
    return arrays


@contextlib.contextmanager
def _open(path: str):
    import h5py  # Keras's own dependency; imported here, as only this layout needs it

    if not is_file(path):
        raise FileNotFoundError(f"keras-hub weights file not found: {path}")
    with local_copy(path) as local:
        try:
            file = h5py.File(local, "r")
        except OSError as error:  # h5py's error for a file that is not HDF5, or is damaged
            raise ValueError(f"{path}: not a readable HDF5 file ({error})") from None
        with file:
            try:
                yield file
            except (OSError, KeyError) as error:  # a damaged dataset inside a readable file
                raise ValueError(f"{path}: damaged Keras weights ({error})") from None


def _weights_path(path: str) -> str:
    """The backbone's weights file of `path`: a preset folder's (or one of its config files'
    or task.weights.h5's) model.weights.h5, or a `.weights.h5` file itself."""
    directory = preset_files.preset_directory(path)
    weights = path
    if not path.endswith(preset_files.WEIGHTS_SUFFIX) or (
        os.path.basename(path) == preset_files.TASK_WEIGHTS_NAME
    ):
        weights = os.path.join(directory, preset_files.WEIGHTS_NAME)
    if not is_file(weights):
        if tf.io.gfile.exists(os.path.join(directory, preset_files.SHARDED_WEIGHTS_INDEX)):
            raise ValueError(
                f"{directory}: sharded keras-hub weights ({preset_files.SHARDED_WEIGHTS_INDEX}) "
                "are not read"
            )
        raise FileNotFoundError(f"keras-hub weights file not found: {weights}")
    return weights


def load_keras_hub_arrays(
    path: str, task_head: str | None = "classifier", head_required: bool = False
) -> tuple[dict[str, np.ndarray], int | None]:
    """{original TF1 name: array} of a keras-hub BERT preset (its folder, or a weights file in
    it) and the backbone's number of attention heads (None without layers): the backbone, and
    the task head beside it that task_head names ("classifier": a BertTextClassifier's,
    "masked_lm": a BertMaskedLM's; None: none; head_required: see _task_head_arrays).

    Raises:
      ValueError: the preset is another model's, quantized, or its files are damaged or hold
        weights a BertBackbone has not (each naming the file).
    """
    weights_path = _weights_path(path)
    directory = os.path.dirname(weights_path) or "."
    config_path = os.path.join(directory, preset_files.CONFIG_NAME)
    config = preset_files.read_keras_hub_json(config_path)
    if config is not None:
        preset_files.check_backbone_config(config, config_path)
    with _open(weights_path) as file:
        weights = _WeightsFile(weights_path, file, _BACKBONE)
        arrays, heads = _backbone_arrays(weights)
        weights.check_all_read()
    if task_head and os.path.basename(weights_path) == preset_files.WEIGHTS_NAME:
        arrays.update(_task_head_arrays(directory, task_head, head_required))
    return arrays, heads


def read_keras_hub_checkpoint(path: str, model, require_heads: bool = False) -> int:
    """Loads a keras-hub BERT preset (folder or weights file) into `model`, as
    read_original_checkpoint does from the original layout; a classifier's head is read from a
    BertTextClassifier preset, a BertPretrainer's masked-LM head from a BertMaskedLM preset
    where it runs as keras-hub's (BertPretrainer.from_bert_config with the preset's config:
    the exact GELU, epsilon 1e-5); a head that runs otherwise would compute other logits from
    those weights, so it keeps its initialization, with a warning. Returns the number of
    variables loaded.

    Raises:
      CheckpointMismatchError: the preset's weights do not fit the model (its head count too).
    """
    directory = preset_files.preset_directory(path)
    source = f"keras-hub preset {directory}"
    parts = {entry.part for entry in model_entries(model)}
    task_head = next((part for part in _TASK_HEADS if part in parts), None)
    if (
        task_head == "masked_lm"
        and not preset_files.runs_keras_hub_masked_lm_head(model.masked_lm)
        and preset_files.preset_task_class(directory) in preset_files.MASKED_LM_CLASSES
    ):
        (logging.info if require_heads else logging.warning)(
            "%s: keras-hub's BertMaskedLM head runs the exact GELU with LayerNorm epsilon "
            "1e-5, this model's masked-LM head %r with %s, so it would compute other logits "
            "from those weights: not read, the head keeps its initialization (a model built "
            "from the preset's own config.json runs it as keras-hub does)",
            directory,
            model.masked_lm.activation,
            model.masked_lm.layer_norm_epsilon,
        )
        task_head = None
    arrays, heads = load_keras_hub_arrays(path, task_head, head_required=require_heads)
    expected = getattr(model, "encoder", model).num_attention_heads
    if heads is not None and heads != expected:
        raise CheckpointMismatchError(
            f"{source}: {heads} attention heads; the model has {expected}"
        )
    return load_tf1_named_arrays(arrays, model, source, require_heads=require_heads)


def write_keras_hub_weights(model, path: str) -> str:
    """Writes the encoder of `model` as a keras-hub BertBackbone's `model.weights.h5` at `path`
    (Keras 3 addresses and variable order, float32; local paths only, as h5py writes them);
    heads are not written (write_keras_hub_task_weights writes a task's). Returns `path`.
    Written atomically."""
    entries = [entry for entry in model_entries(model) if entry.part in ENCODER_PARTS]
    arrays = {entry.tf1_name: entry.to_tf1_value() for entry in entries}
    hidden = arrays["bert/embeddings/word_embeddings"].shape[-1]
    heads = getattr(model, "encoder", model).num_attention_heads
    size = hidden // heads
    layout = {"vars": ("bert_backbone", [])}  # group -> (the name keras-hub gives it, arrays)
    for address, (given_name, tf1_name) in _EMBEDDING_LAYERS.items():
        layout[f"layers/{address}/vars"] = (given_name, [arrays[tf1_name]])
    layout["layers/layer_normalization/vars"] = (
        "embeddings_layer_norm",
        [arrays[f"bert/embeddings/LayerNorm/{name}"] for name in _LAYER_NORM_VARIABLES],
    )
    layout["layers/dense/vars"] = (
        "pooled_dense",
        [arrays[f"bert/pooler/dense/{name}"] for name in _DENSE_VARIABLES],
    )
    index = 0
    while f"bert/encoder/layer_{index}/output/dense/kernel" in arrays:
        block = _block_address(index)
        layout[f"layers/{block}/vars"] = (f"transformer_layer_{index}", [])
        for sublayer, scope in _BLOCK_SUBLAYERS.items():
            names = _LAYER_NORM_VARIABLES if scope.endswith("LayerNorm") else _DENSE_VARIABLES
            values = [arrays[f"bert/encoder/layer_{index}/{scope}/{name}"] for name in names]
            if scope == "attention/output/dense":
                values[0] = values[0].reshape(heads, size, hidden)
            elif scope.startswith("attention/self/"):
                values = [values[0].reshape(hidden, heads, size), values[1].reshape(heads, size)]
            layout[f"layers/{block}/{sublayer}/vars"] = (None, values)
        index += 1
    _write_weights_file(path, layout)
    logging.info("Wrote a keras-hub BertBackbone's weights (%d layers) to %s", index, path)
    return path


def write_keras_hub_task_weights(model, path: str, with_preprocessor: bool) -> str:
    """Writes the head of `model` as a keras-hub task's `task.weights.h5` at `path`: a
    BertClassifier's as a BertTextClassifier's (the `logits` Dense, [hidden, classes] kernel and
    bias, and the group of its dropout), a BertPretrainer's masked-LM head as a BertMaskedLM's
    (the MaskedLMHead's dense, LayerNorm and output bias, and the group of the task's
    `mask_positions` input; a next-sentence head is not written); with the groups keras-hub's
    tasks keep for their preprocessor (`with_preprocessor`) and the optimizer they compile with
    (iteration 0, its default learning rate), as `save_to_preset` writes them. Returns `path`.
    Written atomically."""
    from official_bert.models import BertClassifier

    head = {
        entry.tf1_name: entry.to_tf1_value()
        for entry in model_entries(model)
        if entry.part in ("classifier", "masked_lm")
    }
    if isinstance(model, BertClassifier):
        task = "bert_text_classifier"
        head_layout = {
            "layers/dense/vars": ("logits", [head["output_weights"].T, head["output_bias"]]),
            "layers/dropout/vars": ("classifier_dropout", []),
        }
        what = f"BertTextClassifier's head ({head['output_bias'].shape[0]} classes)"
    else:
        task = "bert_masked_lm"
        head_layout = {
            # The task's own input, numbered after the backbone's three (token_ids,
            # segment_ids, padding_mask).
            "layers/input_layer_3/vars": ("mask_positions", []),
            f"layers/{_MASKED_LM_ADDRESS}/vars": (
                "mlm_head",
                [head["cls/predictions/output_bias"]],
            ),
        }
        for sublayer, (given_name, names, scope) in _MASKED_LM_SUBLAYERS.items():
            head_layout[f"layers/{_MASKED_LM_ADDRESS}/{sublayer}/vars"] = (
                given_name,
                [head[f"cls/predictions/{scope}/{name}"] for name in names],
            )
        what = "BertMaskedLM's head"
    layout = {
        "vars": (task, []),
        **head_layout,
        "optimizer/vars": ("adam", [np.int64(0), np.float32(5e-5)]),
    }
    if with_preprocessor:
        layout["preprocessor/tokenizer/vars"] = ("bert_tokenizer", [])
        layout["preprocessor/vars"] = (f"{task}_preprocessor", [])
    _write_weights_file(path, layout)
    logging.info("Wrote a keras-hub %s to %s", what, path)
    return path


def _write_weights_file(path: str, layout: dict) -> None:
    """Writes {group path: (its `name` attribute or None, [arrays])} as a Keras 3 weights file:
    each array a dataset named by its position, float arrays as float32."""
    import h5py

    with atomic_output(path) as temporary, local_output(temporary) as local:
        with h5py.File(local, "w") as file:
            for group_path, (given_name, values) in layout.items():
                group = file.create_group(group_path)
                if given_name is not None:
                    group.attrs["name"] = given_name
                for position, value in enumerate(values):
                    value = np.asarray(value)
                    if value.dtype.kind == "f":
                        value = value.astype(np.float32)
                    group.create_dataset(str(position), data=value)


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
