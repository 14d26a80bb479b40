"""keras-hub BERT presets: read into this project's models (a `BertBackbone`, and a
`BertTextClassifier`'s head when the preset is one), and written from them (the backbone).

A preset directory, as keras-hub's `save_to_preset` writes it (and its Kaggle/Hub models hold):

  config.json                          {"class_name": "BertBackbone", "config": {...}}
  model.weights.h5                     the backbone's weights, Keras 3 HDF5 layout
  tokenizer.json                       the BertTokenizer's config ("lowercase")
  assets/tokenizer/vocabulary.txt      the WordPiece vocab, one token a line
  task.json, task.weights.h5           a task's config and its own weights (optional)

Keras 3 addresses a weight by where it sits in the model, not by its name: `layers/<layer>`
with the layer named after its class in snake case and numbered in the model's order
(`transformer_encoder`, `transformer_encoder_1`, ...), then the layer's attributes, then
`vars/<index>` in the order the layer created them (kernel before bias, gamma before beta).
That address is what Keras itself loads by, so it is what is read here; newer Keras also
records the layer's given name on each `vars` group (`pooled_dense`, `transformer_layer_3`),
which is checked where present. keras-hub's attention kernels are EinsumDense kernels,
[hidden, heads, head_size] and [heads, head_size, hidden]; reshaped to the original's
[hidden, hidden] they take the original TF1 names, so the original reader's checks and
assignment apply unchanged. Written the other way, at the same addresses with the same names,
the file equals the one keras-hub writes for the same weights. Read and written with h5py (a
Keras dependency), without keras-hub.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re

import numpy as np
import tensorflow as tf
from absl import logging

from official_bert.atomic_output import atomic_output
from official_bert.checkpoints.original_tf1 import load_tf1_named_arrays
from official_bert.checkpoints.variable_table import model_entries

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.weights.h5"
FILE_SUFFIX = ".weights.h5"
TASK_CONFIG_NAME = "task.json"
TASK_WEIGHTS_NAME = "task.weights.h5"
TOKENIZER_CONFIG_NAME = "tokenizer.json"
_METADATA_NAME = "metadata.json"
VOCAB_PATH = os.path.join("assets", "tokenizer", "vocabulary.txt")
# keras-hub's index of sharded weights, which it writes for models above 10 GB (far beyond any
# BERT); not read.
_SHARDED_WEIGHTS_INDEX = "model.weights.json"

# BertBackbone's top layers: Keras's address -> (the name keras-hub gives it, TF1 scope).
_EMBEDDING_LAYERS = {
    "reversible_embedding": ("token_embedding", "bert/embeddings/word_embeddings"),
    "position_embedding": ("position_embedding", "bert/embeddings/position_embeddings"),
    "embedding": ("segment_embedding", "bert/embeddings/token_type_embeddings"),
}
_LAYER_NORM_VARIABLES = ("gamma", "beta")
_DENSE_VARIABLES = ("kernel", "bias")
# A TransformerEncoder's sublayers (leading underscores dropped) -> TF1 scope in `layer_N/`.
_BLOCK_SUBLAYERS = {
    "self_attention_layer/query_dense": "attention/self/query",
    "self_attention_layer/key_dense": "attention/self/key",
    "self_attention_layer/value_dense": "attention/self/value",
    "self_attention_layer/output_dense": "attention/output/dense",
    "self_attention_layer_norm": "attention/output/LayerNorm",
    "feedforward_intermediate_dense": "intermediate/dense",
    "feedforward_output_dense": "output/dense",
    "feedforward_layer_norm": "output/LayerNorm",
}
# Where Keras 3.15 writes those sublayers (the attention's projections without an underscore).
_KERAS_SUBLAYER_ADDRESSES = {
    "self_attention_layer/query_dense": "_self_attention_layer/query_dense",
    "self_attention_layer/key_dense": "_self_attention_layer/key_dense",
    "self_attention_layer/value_dense": "_self_attention_layer/value_dense",
    "self_attention_layer/output_dense": "_self_attention_layer/output_dense",
    "self_attention_layer_norm": "_self_attention_layer_norm",
    "feedforward_intermediate_dense": "_feedforward_intermediate_dense",
    "feedforward_output_dense": "_feedforward_output_dense",
    "feedforward_layer_norm": "_feedforward_layer_norm",
}
_BLOCK_ADDRESS = re.compile(r"^transformer_encoder(?:_(\d+))?$")


def is_keras_hub_config(values) -> bool:
    """Whether a parsed config.json is a keras-hub object's (any model, BERT or not)."""
    if not isinstance(values, dict) or not isinstance(values.get("config"), dict):
        return False
    registered = str(values.get("registered_name") or "")
    return registered.startswith("keras_hub>") or str(values.get("module", "")).startswith(
        "keras_hub."
    )


def bert_config_from_keras_hub(values: dict, source: str = CONFIG_NAME):
    """A BertConfig from a keras-hub `BertBackbone` config.json (parsed)."""
    from official_bert.config import BertConfig

    class_name = values.get("class_name")
    if class_name != "BertBackbone":
        raise ValueError(
            f"{source}: a keras-hub {class_name} preset; only BertBackbone presets are BERT "
            "weights this project reads"
        )
    config = values["config"]
    fields = {
        "vocab_size": "vocabulary_size",
        "hidden_size": "hidden_dim",
        "num_hidden_layers": "num_layers",
        "num_attention_heads": "num_heads",
        "intermediate_size": "intermediate_dim",
        "max_position_embeddings": "max_sequence_length",
        "type_vocab_size": "num_segments",
    }
    missing = [theirs for theirs in fields.values() if theirs not in config]
    if missing:
        raise ValueError(f"{source}: BertBackbone config lacks {missing}")
    bert_values = {ours: config[theirs] for ours, theirs in fields.items()}
    dropout = config.get("dropout", 0.1)
    # keras-hub's BertBackbone: the tanh GELU (the original's "gelu"), LayerNorm epsilon 1e-12
    # and one dropout rate everywhere.
    bert_values.update(
        hidden_act="gelu",
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        initializer_range=0.02,
    )
    return BertConfig.from_dict(bert_values, source=source)


def preset_directory(path: str) -> str:
    """The preset directory of `path` (the directory itself, or a weights file's directory)."""
    return path if os.path.isdir(path) else (os.path.dirname(path) or ".")


def holds_keras_hub_preset(path: str) -> bool:
    """Whether `path` is a `.weights.h5` file or a directory with keras-hub's config.json."""
    if not os.path.isdir(path):
        return path.endswith(FILE_SUFFIX)
    return _read_json_if_keras_hub(os.path.join(path, CONFIG_NAME)) is not None


def _read_json_if_keras_hub(path: str) -> dict | None:
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as file:
            values = json.load(file)
    except (ValueError, UnicodeDecodeError):
        return None
    return values if is_keras_hub_config(values) else None


def preset_vocab_file(path: str) -> str | None:
    """The preset's WordPiece vocab (assets/tokenizer/vocabulary.txt), where there is one."""
    candidate = os.path.join(preset_directory(path), VOCAB_PATH)
    return candidate if os.path.isfile(candidate) else None


def preset_lowercase(path: str) -> bool | None:
    """The preset tokenizer's `lowercase` (tokenizer.json), or None without one."""
    values = _read_json_if_keras_hub(os.path.join(preset_directory(path), TOKENIZER_CONFIG_NAME))
    if values is None or "lowercase" not in values["config"]:
        return None
    return bool(values["config"]["lowercase"])


def _weights_path(path: str) -> str:
    """The backbone's weights file of `path` (a preset directory, its model.weights.h5 or
    task.weights.h5, or another `.weights.h5` file)."""
    directory = preset_directory(path)
    weights = path
    if os.path.isdir(path) or os.path.basename(path) == TASK_WEIGHTS_NAME:
        weights = os.path.join(directory, WEIGHTS_NAME)
    if not os.path.isfile(weights):
        if os.path.exists(os.path.join(directory, _SHARDED_WEIGHTS_INDEX)):
            raise ValueError(
                f"{directory}: sharded keras-hub weights ({_SHARDED_WEIGHTS_INDEX}) are not read"
            )
        raise FileNotFoundError(f"keras-hub weights file not found: {weights}")
    return weights


def _array(dataset) -> np.ndarray:
    """A float32 (or the stored float) array of an h5py dataset; Keras stores bfloat16 as
    2-byte opaque values marked by a `dtype` attribute."""
    value = np.asarray(dataset[()])
    if dataset.attrs.get("dtype") == "bfloat16":
        import ml_dtypes  # a TensorFlow and Keras dependency

        value = value.view(ml_dtypes.bfloat16).astype(np.float32)
    return value


class _PresetFile:
    """One Keras 3 `.weights.h5` file: the variables of a layer at a Keras address."""

    def __init__(self, path: str, file):
        self.path = path
        # Keras 2.13's weights files (older presets) call the top group
        # `_layer_checkpoint_dependencies`; Keras 3 reads both.
        for top in ("layers", "_layer_checkpoint_dependencies"):
            if top in file:
                self.layers = file[top]
                break
        else:
            raise ValueError(f"{path}: not a Keras 3 weights file (no 'layers' group)")

    def group(self, address: str):
        """The group at `address` (`a/b/c`), each part matched with or without Keras's leading
        underscore (older Keras addresses attention sublayers as `_query_dense`)."""
        group = self.layers
        for part in address.split("/"):
            for candidate in (part, "_" + part):
                if candidate in group:
                    group = group[candidate]
                    break
            else:
                raise ValueError(
                    f"{self.path}: no 'layers/{address}' in the file (found "
                    f"{sorted(group.keys())} at {group.name}); not a keras-hub BertBackbone?"
                )
        return group

    def check_name(self, address: str, given_name: str) -> None:
        """Raises a ValueError where newer Keras recorded another name for the layer at
        `address` than a keras-hub BertBackbone gives the layer there."""
        group = self.group(address)
        recorded = group["vars"].attrs.get("name") if "vars" in group else None
        if recorded is not None and _text(recorded) != given_name:
            raise ValueError(
                f"{self.path}: layers/{address} is named {_text(recorded)!r}, expected "
                f"{given_name!r} (a keras-hub BertBackbone's layers, in their order)"
            )

    def variables(self, address: str, names: tuple, given_name: str | None = None) -> dict:
        """{name: array} of the layer at `address`, its `vars/0..` called `names`."""
        group = self.group(address)
        variables = group["vars"] if "vars" in group else {}
        if given_name is not None:
            self.check_name(address, given_name)
        if len(variables) != len(names):
            raise ValueError(
                f"{self.path}: layers/{address} holds {len(variables)} variables, expected "
                f"{len(names)} ({', '.join(names)})"
            )
        return {name: _array(variables[str(index)]) for index, name in enumerate(names)}


def _block_indexes(preset: _PresetFile) -> list[int]:
    indexes = []
    for address in preset.layers:
        match = _BLOCK_ADDRESS.match(address)
        if match:
            indexes.append(int(match.group(1) or 0))
    indexes.sort()
    if indexes != list(range(len(indexes))):
        raise ValueError(f"{preset.path}: transformer layers numbered {indexes}")
    return indexes


def _backbone_arrays(preset: _PresetFile) -> dict[str, np.ndarray]:
    """{TF1 name: array} of a BertBackbone's weights."""
    arrays = {}
    for address, (given_name, tf1_name) in _EMBEDDING_LAYERS.items():
        arrays[tf1_name] = preset.variables(address, ("embeddings",), given_name)["embeddings"]
    hidden_size = arrays["bert/embeddings/word_embeddings"].shape[-1]
    norm = preset.variables("layer_normalization", _LAYER_NORM_VARIABLES, "embeddings_layer_norm")
    for name, value in norm.items():
        arrays[f"bert/embeddings/LayerNorm/{name}"] = value
    pooler = preset.variables("dense", _DENSE_VARIABLES, "pooled_dense")
    for name, value in pooler.items():
        arrays[f"bert/pooler/dense/{name}"] = value
    for index in _block_indexes(preset):
        block = "transformer_encoder" + (f"_{index}" if index else "")
        preset.check_name(block, f"transformer_layer_{index}")
        for sublayer, scope in _BLOCK_SUBLAYERS.items():
            names = _LAYER_NORM_VARIABLES if scope.endswith("LayerNorm") else _DENSE_VARIABLES
            values = preset.variables(f"{block}/{sublayer}", names)
            if sublayer.endswith("output_dense") and scope.startswith("attention/"):
                # EinsumDense [heads, size, hidden]: the original's [hidden, hidden] Dense.
                values["kernel"] = values["kernel"].reshape(-1, hidden_size)
            elif scope.startswith("attention/self/"):
                # EinsumDense [hidden, heads, size] and bias [heads, size].
                values["kernel"] = values["kernel"].reshape(hidden_size, -1)
                values["bias"] = values["bias"].reshape(-1)
            for name, value in values.items():
                arrays[f"bert/encoder/layer_{index}/{scope}/{name}"] = value
    return arrays


def _task_arrays(directory: str) -> dict[str, np.ndarray]:
    """{TF1 name: array} of the preset task's head: a BertTextClassifier's logits layer as the
    original classifier's output_weights [classes, hidden] and output_bias. Other tasks' heads
    are not read (keras-hub's BertMaskedLM head runs the exact GELU where this project's runs the
    encoder's)."""
    task = _read_json_if_keras_hub(os.path.join(directory, TASK_CONFIG_NAME))
    if task is None:
        return {}
    if task.get("class_name") != "BertTextClassifier":
        logging.info(
            "%s: the %s head of the preset is not read (only BertTextClassifier's is)",
            directory,
            task.get("class_name"),
        )
        return {}
    path = os.path.join(directory, TASK_WEIGHTS_NAME)
    with _open(path) as file:
        head = _PresetFile(path, file).variables("dense", _DENSE_VARIABLES, "logits")
    return {"output_weights": head["kernel"].T, "output_bias": head["bias"]}


@contextlib.contextmanager
def _open(path: str):
    import h5py  # Keras's own dependency; imported here, as only this layout needs it

    if not os.path.isfile(path):
        raise FileNotFoundError(f"keras-hub weights file not found: {path}")
    try:
        file = h5py.File(path, "r")
    except OSError as error:  # h5py's error for a file that is not HDF5, or is damaged
        raise ValueError(f"{path}: not a readable HDF5 file ({error})") from None
    with file:
        try:
            yield file
        except (OSError, KeyError) as error:  # a damaged dataset inside a readable file
            raise ValueError(f"{path}: damaged Keras weights ({error})") from None


def load_keras_hub_arrays(path: str) -> dict[str, np.ndarray]:
    """{original TF1 name: array} of a keras-hub BERT preset (its directory, or its
    model.weights.h5): the backbone, and a BertTextClassifier task's head beside it."""
    weights = _weights_path(path)
    with _open(weights) as file:
        arrays = _backbone_arrays(_PresetFile(weights, file))
    if os.path.basename(weights) == WEIGHTS_NAME:
        arrays.update(_task_arrays(os.path.dirname(weights) or "."))
    return arrays


def read_keras_hub_checkpoint(path: str, model, require_heads: bool = False) -> int:
    """Loads a keras-hub BERT preset (directory or model.weights.h5) into `model`, as
    read_original_checkpoint does from the original layout; returns the number of variables
    loaded."""
    return load_tf1_named_arrays(
        load_keras_hub_arrays(path),
        model,
        f"keras-hub preset {preset_directory(path)}",
        require_heads=require_heads,
    )


def write_keras_hub_weights(model, path: str) -> str:
    """Writes the encoder of `model` as a keras-hub BertBackbone's `model.weights.h5` at `path`
    (Keras 3 addresses and variable order, float32; local paths only, as h5py writes them);
    heads are not written. Returns `path`. Written atomically."""
    import h5py

    entries = [entry for entry in model_entries(model) if entry.part == "encoder"]
    dropped = sorted({entry.part for entry in model_entries(model)} - {"encoder"})
    arrays = {entry.tf1_name: entry.to_tf1_value() for entry in entries}
    encoder = getattr(model, "encoder", model)
    hidden_size = arrays["bert/embeddings/word_embeddings"].shape[-1]
    heads = encoder.num_attention_heads
    layout = {}  # Keras address -> (the name keras-hub gives the layer, [arrays in order])
    for address, (given_name, tf1_name) in _EMBEDDING_LAYERS.items():
        layout[address] = (given_name, [arrays[tf1_name]])
    layout["layer_normalization"] = (
        "embeddings_layer_norm",
        [arrays[f"bert/embeddings/LayerNorm/{name}"] for name in _LAYER_NORM_VARIABLES],
    )
    layout["dense"] = (
        "pooled_dense",
        [arrays[f"bert/pooler/dense/{name}"] for name in _DENSE_VARIABLES],
    )
    index = 0
    while f"bert/encoder/layer_{index}/output/dense/kernel" in arrays:
        block = "transformer_encoder" + (f"_{index}" if index else "")
        layout[block] = (f"transformer_layer_{index}", [])
        for sublayer, scope in _BLOCK_SUBLAYERS.items():
            names = _LAYER_NORM_VARIABLES if scope.endswith("LayerNorm") else _DENSE_VARIABLES
            values = [arrays[f"bert/encoder/layer_{index}/{scope}/{name}"] for name in names]
            if sublayer.endswith("output_dense") and scope.startswith("attention/"):
                values[0] = values[0].reshape(heads, hidden_size // heads, hidden_size)
            elif scope.startswith("attention/self/"):
                values[0] = values[0].reshape(hidden_size, heads, hidden_size // heads)
                values[1] = values[1].reshape(heads, hidden_size // heads)
            layout[f"{block}/{_KERAS_SUBLAYER_ADDRESSES[sublayer]}"] = (None, values)
        index += 1
    with atomic_output(path) as temporary:
        with h5py.File(temporary, "w") as file:
            file.create_group("vars").attrs["name"] = "bert_backbone"
            for address, (given_name, values) in layout.items():
                group = file.create_group(f"layers/{address}/vars")
                if given_name is not None:
                    group.attrs["name"] = given_name
                for position, value in enumerate(values):
                    group.create_dataset(str(position), data=np.asarray(value, np.float32))
    for part in dropped:
        logging.info(
            "%s: the %s head is not written (a keras-hub preset holds the backbone)", path, part
        )
    logging.info("Wrote a keras-hub BertBackbone's weights (%d layers) to %s", index, path)
    return path


def check_keras_hub_can_run(config, source: str = "this model") -> None:
    """Raises a ValueError where a keras-hub BertBackbone would compute other outputs than
    `config`'s model: it runs the tanh GELU (the original's "gelu") with LayerNorm epsilon
    1e-12, whatever its config says."""
    from official_bert.activations import canonical_activation_name

    activation = canonical_activation_name(config.hidden_act)
    epsilon = config.extra_fields.get("layer_norm_eps", 1e-12)
    if activation != "gelu" or epsilon != 1e-12:
        raise ValueError(
            f"{source}: hidden_act {config.hidden_act!r}, LayerNorm epsilon {epsilon}; a "
            "keras-hub BertBackbone runs the tanh GELU ('gelu') with epsilon 1e-12, so it would "
            "compute other outputs from these weights. Write safetensors or tf1 instead."
        )


def write_keras_hub_preset_files(
    directory: str,
    config,
    vocab_file: str | None,
    do_lower_case: bool,
    parameter_count: int,
) -> None:
    """Writes the files of a keras-hub preset beside its model.weights.h5 in `directory`:
    config.json (last, so that the folder reads as a preset only once it is whole),
    tokenizer.json and assets/tokenizer/vocabulary.txt (where a vocab is given) and
    metadata.json. The tokenizer lower-cases and strips accents together, as the original
    BERT's do_lower_case does.
    """
    from official_bert.config import write_text_atomically

    check_keras_hub_can_run(config)
    if vocab_file is not None:
        with atomic_output(os.path.join(directory, VOCAB_PATH)) as temporary:
            tf.io.gfile.copy(vocab_file, temporary, overwrite=True)
        write_text_atomically(
            os.path.join(directory, TOKENIZER_CONFIG_NAME),
            _keras_hub_json(
                "bert_tokenizer",
                "BertTokenizer",
                "int32",
                {
                    "config_file": TOKENIZER_CONFIG_NAME,
                    "vocabulary": None,
                    "sequence_length": None,
                    "lowercase": bool(do_lower_case),
                    "strip_accents": bool(do_lower_case),
                    "split": True,
                    "suffix_indicator": "##",
                    "oov_token": "[UNK]",
                    "special_tokens": None,
                    "special_tokens_in_strings": False,
                },
            ),
        )
    import keras

    metadata = {
        "keras_version": keras.__version__,
        "parameter_count": int(parameter_count),
        "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S"),
        "written_by": "official_bert",
    }
    write_text_atomically(
        os.path.join(directory, _METADATA_NAME), json.dumps(metadata, indent=4) + "\n"
    )
    write_text_atomically(
        os.path.join(directory, CONFIG_NAME),
        _keras_hub_json(
            "bert_backbone",
            "BertBackbone",
            "float32",
            {
                "vocabulary_size": config.vocab_size,
                "num_layers": config.num_hidden_layers,
                "num_heads": config.num_attention_heads,
                "hidden_dim": config.hidden_size,
                "intermediate_dim": config.intermediate_size,
                "dropout": config.hidden_dropout_prob,
                "max_sequence_length": config.max_position_embeddings,
                "num_segments": config.type_vocab_size,
            },
        ),
    )


def _keras_hub_json(name: str, class_name: str, dtype: str, fields: dict) -> str:
    """A keras-hub object's serialized config, as keras.saving writes it."""
    module = {"BertBackbone": "bert_backbone", "BertTokenizer": "bert_tokenizer"}[class_name]
    values = {
        "module": f"keras_hub.src.models.bert.{module}",
        "class_name": class_name,
        "config": {
            "name": name,
            "trainable": True,
            "dtype": {
                "module": "keras",
                "class_name": "DTypePolicy",
                "config": {"name": dtype},
                "registered_name": None,
            },
            **fields,
        },
        "registered_name": f"keras_hub>{class_name}",
    }
    return json.dumps(values, indent=4) + "\n"


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
