"""TF2 BERT encoder SavedModels of the TF Hub BERT API, read as checkpoints.

The TF2 BERT encoders of tfhub.dev (tensorflow/bert_en_uncased_L-12_H-768_A-12/4, the Chinese
and multilingual ones, the small BERTs; written by TF Model Garden's exporter) and this project's
own `export_tfhub.py --export_type=model` folders hold a BERT's weights as SavedModel
variables. `--hub_module_handle` fine-tunes such a module as it is (its own graph,
export/exported_bert_encoder.py); read here instead, its weights fill this project's
BertEncoder, so that a module serves wherever a checkpoint does: `--init_checkpoint` of any
script (the fast kernels then run it), `extract_features.py`, `export_tfhub.py` and
`convert_checkpoint.py` (a tfhub.dev encoder to safetensors, ...).

Names: each variable is mapped to its original TF1 name (`bert/encoder/layer_N/...`) by the
naming of Model Garden's BertEncoder (`transformer/layer_N/self_attention/query/kernel`, ...) or
of this project's exports (`bert_encoder/transformer_layer_N/attention/query/kernel`, ...); the
per-head kernels [hidden, heads, head_size] and [heads, head_size, hidden] are the original's
[hidden, hidden] matrices reshaped. A model_with_mlm export's masked-LM head (its `mlm` object;
Model Garden's `bert/cls/predictions/...`, ours `masked_lm/...`) is read as the original
`cls/predictions`, so pre-training continues from it. Other variables (the `do_lower_case`
flag, random-state seeds) are left out. The config: the module's bert_config.json asset where it
has one, else what its variables and outputs tell (exported_encoder_config, which
export/exported_bert_encoder.py also reads) with the original's GELU (the tanh form, as Model
Garden's BERT runs it).
"""

from __future__ import annotations

import os
import re

import numpy as np
import tensorflow as tf

# (pattern on the variable's name without ":0", its original TF1 name) for Model Garden's and
# this project's exports (Keras numbers a second BertEncoder of a process bert_encoder_1, ...).
_PRETRAINER = r"(?:bert_pretrainer(?:_\d+)?/)?"  # model_with_mlm: the encoder inside it
_OURS = _PRETRAINER + r"bert_encoder(?:_\d+)?/"
_LAYER = rf"(?:transformer/layer_|{_OURS}transformer_layer_)(\d+)/"
_NAME_TABLE = [
    (
        rf"(?:{_OURS}embeddings/)?word_embeddings/embeddings",
        "bert/embeddings/word_embeddings",
    ),
    (
        rf"(?:position_embedding/embeddings|{_OURS}embeddings/position_embeddings)",
        "bert/embeddings/position_embeddings",
    ),
    (
        rf"(?:type_embeddings/embeddings|{_OURS}embeddings/token_type_embeddings/embeddings)",
        "bert/embeddings/token_type_embeddings",
    ),
    (
        rf"(?:{_OURS})?embeddings/layer_norm/(gamma|beta)",
        r"bert/embeddings/LayerNorm/\1",
    ),
    (
        _LAYER + r"(?:self_attention|attention)/(query|key|value)/(kernel|bias)",
        r"bert/encoder/layer_\1/attention/self/\2/\3",
    ),
    (
        _LAYER + r"(?:self_attention|attention)/attention_output/(kernel|bias)",
        r"bert/encoder/layer_\1/attention/output/dense/\2",
    ),
    (
        _LAYER + r"(?:self_attention_layer_norm|attention_layer_norm)/(gamma|beta)",
        r"bert/encoder/layer_\1/attention/output/LayerNorm/\2",
    ),
    (_LAYER + r"intermediate/(kernel|bias)", r"bert/encoder/layer_\1/intermediate/dense/\2"),
    (_LAYER + r"output/(kernel|bias)", r"bert/encoder/layer_\1/output/dense/\2"),
    (
        _LAYER + r"output_layer_norm/(gamma|beta)",
        r"bert/encoder/layer_\1/output/LayerNorm/\2",
    ),
    (rf"(?:pooler_transform|{_OURS}pooler)/(kernel|bias)", r"bert/pooler/dense/\1"),
    # The masked-LM head of a model_with_mlm export (its `mlm` object): Model Garden's keeps the
    # original names under bert/, ours its layers' names.
    (
        rf"(?:bert/cls/predictions/output_bias/bias|{_PRETRAINER}masked_lm/output_bias)",
        "cls/predictions/output_bias",
    ),
    (
        rf"(?:bert/cls/predictions/transform/dense|{_PRETRAINER}masked_lm/transform_dense)/"
        r"(kernel|bias)",
        r"cls/predictions/transform/dense/\1",
    ),
    (
        rf"(?:bert/cls/predictions/transform/LayerNorm|{_PRETRAINER}masked_lm/"
        r"transform_layer_norm)/(gamma|beta)",
        r"cls/predictions/transform/LayerNorm/\1",
    ),
]


def is_tf_hub_encoder(path: str | None) -> bool:
    """Whether `path` is the folder of a TF2 SavedModel with a vocabulary asset, as the TF Hub
    BERT encoders are (a TF1 Hub module's tfhub_module.pb excluded)."""
    return (
        bool(path)
        and tf.io.gfile.exists(os.path.join(path, "saved_model.pb"))
        and tf.io.gfile.exists(os.path.join(path, "assets", "vocab.txt"))
        and not tf.io.gfile.exists(os.path.join(path, "tfhub_module.pb"))
    )


def _original_name(variable_name: str) -> str | None:
    name = re.sub(r":\d+$", "", variable_name)
    for pattern, original in _NAME_TABLE:
        if re.fullmatch(pattern, name):
            return re.sub(pattern, original, name)
    return None


def read_tf_hub_encoder_arrays(path: str) -> dict[str, np.ndarray]:
    """{original TF1 name: value in the original layout} of the module's encoder and pooler, and
    of its masked-LM head where it has one (a model_with_mlm export).

    Raises:
      ValueError: no variable of either naming (not a BERT encoder), or two of one name.
    """
    module = tf.saved_model.load(path)
    variables = list(module.variables)
    if hasattr(module, "mlm"):  # model_with_mlm: the head's variables are the `mlm` object's
        seen = {id(variable) for variable in variables}
        variables += [v for v in module.mlm.variables if id(v) not in seen]
    arrays = {}
    for variable in variables:
        name = _original_name(variable.name)
        if name is None:
            continue
        if name in arrays:
            raise ValueError(f"{path}: two variables map to {name} (the second {variable.name})")
        value = variable.numpy()
        if re.search(r"/attention/self/\w+/(kernel|bias)$", name):
            value = value.reshape(value.shape[0], -1) if value.ndim == 3 else value.reshape(-1)
        elif name.endswith("/attention/output/dense/kernel") and value.ndim == 3:
            value = value.reshape(-1, value.shape[-1])
        arrays[name] = value
    if "bert/embeddings/word_embeddings" not in arrays:
        names = [variable.name for variable in module.variables][:5]
        raise ValueError(
            f"{path}: a SavedModel without a BERT encoder's variables (by Model Garden's or "
            f"this project's names); first variables: {names}"
        )
    return arrays


def exported_encoder_config(module, handle: str) -> dict:
    """The bert_config.json fields that a loaded exported encoder without a bert_config.json
    asset (TF Model Garden's exports, the TF2 BERT encoders on tfhub.dev) tells: hidden_size
    and num_hidden_layers from a call's outputs (their signature names differ between
    exporters), the other sizes from its variables' shapes (_sizes_from_variables).
    """
    ids = tf.zeros([1, 2], tf.int32)
    outputs = module(
        {"input_word_ids": ids, "input_mask": tf.ones_like(ids), "input_type_ids": ids},
        training=False,
    )
    values = {
        "hidden_size": int(outputs["pooled_output"].shape[-1]),
        "num_hidden_layers": len(outputs["encoder_outputs"]),
    }
    variables = [(variable.name, variable.shape.as_list()) for variable in module.variables]
    return _sizes_from_variables(variables, values, handle)


def _sizes_from_variables(variables: list, values: dict, handle: str) -> dict:
    """`values` with vocab_size, max_position_embeddings, type_vocab_size, num_attention_heads
    and intermediate_size from the shapes of `variables` ((name, shape) pairs; names as Model
    Garden's and this project's exports write them). A size no variable tells is left out, so
    BertConfig's default stands."""
    values = dict(values)
    # (field, a substring of the variable's name, its rank, the axis that holds the size)
    for field, name_part, rank, axis in (
        ("vocab_size", "word_embeddings", 2, 0),
        ("max_position_embeddings", "position_embedding", 2, 0),
        ("type_vocab_size", "type_embeddings", 2, 0),
        ("num_attention_heads", "query/kernel", 3, 1),  # [hidden, heads, head_size]
        ("intermediate_size", "intermediate/kernel", 2, 1),
    ):
        sizes = {
            int(shape[axis])
            for name, shape in variables
            if name_part in name and len(shape) == rank
        }
        if len(sizes) == 1:
            values[field] = sizes.pop()
    if "num_attention_heads" not in values:
        # The module runs its own attention, so this field only needs to divide hidden_size; 64
        # values per head is every Google BERT's.
        hidden = values["hidden_size"]
        values["num_attention_heads"] = hidden // 64 if hidden % 64 == 0 else 1
    if "vocab_size" not in values:
        raise ValueError(
            f"{handle}: no word-embedding variable (a name with 'word_embeddings') to read the "
            "vocabulary size from; pass --bert_config_file"
        )
    return values


def saved_variables(path: str) -> list[tuple[str, list[int]]]:
    """(name without ":0", shape) of each variable of the SavedModel at `path`, from its object
    graph in saved_model.pb: what tf.saved_model.load would make, without reading a weight."""
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with tf.io.gfile.GFile(os.path.join(path, "saved_model.pb"), "rb") as reader:
        proto.ParseFromString(reader.read())
    return [
        (
            re.sub(r":\d+$", "", node.variable.name),
            [int(dim.size) for dim in node.variable.shape.dim],
        )
        for meta_graph in proto.meta_graphs
        for node in meta_graph.object_graph_def.nodes
        if node.WhichOneof("kind") == "variable"
    ]


def _config_from_saved_variables(path: str) -> dict | None:
    """exported_encoder_config's fields without loading the module (which reads every weight;
    from gs://, over the network): hidden_size from the pooler's [hidden, hidden] kernel,
    num_hidden_layers from the number of per-head query kernels ([hidden, heads, head_size],
    one per layer), as Model Garden's exporter names them. None where the variables tell
    neither, or there is no saved_model.pb."""
    if not tf.io.gfile.exists(os.path.join(path, "saved_model.pb")):
        return None
    variables = saved_variables(path)
    pooler = {
        shape[0]
        for name, shape in variables
        if name.endswith("pooler_transform/kernel") and len(shape) == 2 and shape[0] == shape[1]
    }
    layers = sum(name.endswith("query/kernel") and len(shape) == 3 for name, shape in variables)
    if len(pooler) != 1 or not layers:
        return None
    return _sizes_from_variables(
        variables, {"hidden_size": pooler.pop(), "num_hidden_layers": layers}, path
    )


def encoder_module_config(module, source: str):
    """The BertConfig of a loaded TF Hub BERT encoder: its bert_config.json asset, else the
    sizes its variables and outputs tell (exported_encoder_config), with the original's GELU.
    `source` names the module in messages."""
    from official_bert.config import BertConfig

    asset = getattr(module, "bert_config_file", None)
    if asset is not None:
        return BertConfig.from_json_file(asset.asset_path.numpy().decode("utf-8"))
    values = exported_encoder_config(module, source)
    return BertConfig.from_dict({**values, "hidden_act": "gelu"}, source=source)


def tf_hub_encoder_config(path: str):
    """The BertConfig of the module at `path` (encoder_module_config), read without loading
    the module (which reads every weight; from gs://, over the network) where its
    bert_config.json asset (this project's exports) or its variables' names and shapes
    (Model Garden's, _config_from_saved_variables) tell it."""
    from official_bert.config import BertConfig

    asset = os.path.join(path, "assets", "bert_config.json")
    if tf.io.gfile.exists(asset):
        return BertConfig.from_json_file(asset)
    values = _config_from_saved_variables(path)
    if values is not None:
        return BertConfig.from_dict({**values, "hidden_act": "gelu"}, source=path)
    return encoder_module_config(tf.saved_model.load(path), path)


# The module's do_lower_case variable (Model Garden's exports and ours) in its checkpoint.
_LOWER_CASE_KEY = "do_lower_case/.ATTRIBUTES/VARIABLE_VALUE"


def tf_hub_encoder_lower_case(path: str) -> bool | None:
    """The module's do_lower_case, or None where it has none: read from its variables'
    checkpoint, without loading the module."""
    reader = tf.train.load_checkpoint(os.path.join(path, "variables", "variables"))
    return bool(reader.get_tensor(_LOWER_CASE_KEY)) if reader.has_tensor(_LOWER_CASE_KEY) else None
