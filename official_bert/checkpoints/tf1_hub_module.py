"""BERT modules in the TF1 Hub format (hub.Module), read as original checkpoints.

The 2018 BERT modules of TF Hub (https://tfhub.dev/google/bert_uncased_L-12_H-768_A-12/1 and
its kin, which the original run_classifier_with_tfhub.py fine-tunes) are folders holding
`tfhub_module.pb`, a TF1 SavedModel (`saved_model.pb`, a graph per tag set, with the signatures
"tokens" and "tokenization_info"), `variables/variables` and `assets/vocab.txt`. TensorFlow 2
cannot fine-tune such a module as a module (tensorflow.org/hub/model_compatibility), but its
variables are the original checkpoint's, under the original names (`bert/embeddings/...`), so
the folder is read here as an original checkpoint:

- weights: `variables/variables`, an original-layout TF1 checkpoint;
- config: the sizes from the variables' shapes; the number of attention heads, which no shape
  holds, from the graph (modeling.py scales the attention scores by a constant
  1/sqrt(size_per_head)); hidden_act "gelu" (the original modeling.py's, which made them);
- vocab: `assets/vocab.txt`; casing: the `do_lower_case` constant that "tokenization_info"
  returns.

A module folder thus serves wherever a checkpoint does: `--init_checkpoint`,
`--hub_module_handle` / `--bert_hub_module_handle`, `export_tfhub.py` (a TF2 module from a TF1
one) and `convert_checkpoint.py`.
"""

from __future__ import annotations

import functools
import math
import os
import re

import tensorflow as tf
from absl import logging

MODULE_FILE = "tfhub_module.pb"
_SCORE_SCALE_NODE = re.compile(r"^bert/encoder/layer_0/attention/self/Mul/y$")


def is_tf1_hub_module(path: str | None) -> bool:
    """Whether `path` is the folder of a module in the TF1 Hub format."""
    return bool(path) and tf.io.gfile.exists(os.path.join(path, MODULE_FILE))


def module_checkpoint_prefix(path: str) -> str:
    """The prefix of the module's variables: an original-layout TF1 checkpoint."""
    prefix = os.path.join(path, "variables", "variables")
    if not tf.io.gfile.exists(prefix + ".index"):
        raise FileNotFoundError(f"{path}: a TF1 Hub module without variables/variables.index")
    return prefix


def module_vocab_file(path: str) -> str | None:
    """The module's assets/vocab.txt, or None."""
    candidate = os.path.join(path, "assets", "vocab.txt")
    return candidate if tf.io.gfile.exists(candidate) else None


@functools.lru_cache(maxsize=2)  # read for the casing, then for the heads: parsed once
def _inference_graph(path: str):
    """The MetaGraphDef of the module's graph for the tag set {} (dropout off), else its first
    (not to be changed: it is shared by the calls for `path`)."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved_model = saved_model_pb2.SavedModel()
    with tf.io.gfile.GFile(os.path.join(path, "saved_model.pb"), "rb") as reader:
        saved_model.ParseFromString(reader.read())
    if not saved_model.meta_graphs:
        raise ValueError(f"{path}/saved_model.pb holds no graph")
    for meta_graph in saved_model.meta_graphs:
        if not meta_graph.meta_info_def.tags:
            return meta_graph
    return saved_model.meta_graphs[0]


def _constant(meta_graph, node_name: str):
    """The numpy value of Const node `node_name` in the graph, or None."""
    for node in meta_graph.graph_def.node:
        if node.name == node_name and node.op == "Const":
            return tf.make_ndarray(node.attr["value"].tensor)
    return None


def module_do_lower_case(path: str) -> bool | None:
    """The do_lower_case that the module's "tokenization_info" signature returns (a constant of
    its graph), or None where it has none."""
    meta_graph = _inference_graph(path)
    signature = meta_graph.signature_def.get("tokenization_info")
    if signature is None or "do_lower_case" not in signature.outputs:
        return None
    value = _constant(meta_graph, signature.outputs["do_lower_case"].name.split(":")[0])
    return None if value is None else bool(value)


def module_bert_config(path: str):
    """The BertConfig of the module at `path` (see the module docstring)."""
    from official_bert.config import BertConfig

    shapes = dict(tf.train.list_variables(module_checkpoint_prefix(path)))
    try:
        vocab_size, hidden_size = shapes["bert/embeddings/word_embeddings"]
        max_positions = shapes["bert/embeddings/position_embeddings"][0]
        type_vocab_size = shapes["bert/embeddings/token_type_embeddings"][0]
        intermediate_size = shapes["bert/encoder/layer_0/intermediate/dense/kernel"][1]
    except KeyError as missing:
        raise ValueError(
            f"{path}: a TF1 Hub module without the variable {missing} of the original BERT "
            "layout; not a BERT module"
        ) from None
    layers = {int(m.group(1)) for n in shapes if (m := re.match(r"bert/encoder/layer_(\d+)/", n))}
    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=len(layers),
        num_attention_heads=_attention_heads(path, hidden_size),
        intermediate_size=intermediate_size,
        hidden_act="gelu",
        max_position_embeddings=max_positions,
        type_vocab_size=type_vocab_size,
    )


def _attention_heads(path: str, hidden_size: int) -> int:
    """hidden_size / size_per_head, size_per_head from the constant 1/sqrt(size_per_head) that
    modeling.py scales the attention scores by; 64 per head (every Google BERT's) where the
    graph has no such constant, with a warning."""
    meta_graph = _inference_graph(path)
    for node in meta_graph.graph_def.node:
        if node.op == "Const" and _SCORE_SCALE_NODE.match(node.name):
            scale = float(tf.make_ndarray(node.attr["value"].tensor))
            size_per_head = round(1.0 / (scale * scale))
            if size_per_head > 0 and hidden_size % size_per_head == 0:
                if not math.isclose(scale, 1.0 / math.sqrt(size_per_head), rel_tol=1e-5):
                    break
                return hidden_size // size_per_head
            break
    heads = max(1, hidden_size // 64)
    logging.warning(
        "%s: the number of attention heads is not in the module's graph; taking %d (64 values "
        "per head, as every Google BERT); pass --bert_config_file if that is wrong",
        path,
        heads,
    )
    return heads
