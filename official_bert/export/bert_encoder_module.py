"""A BERT encoder (optionally with its masked-LM head) as a reusable TF Hub SavedModel.

The object follows the TF Hub common API for BERT encoders (the one of the TF Model Garden's
`bert_en_uncased_L-12_H-768_A-12` modules), so `hub.KerasLayer(path, trainable=True)` in tf_keras,
`keras.layers.TFSMLayer` in Keras 3, our `ExportedBertEncoder`, TF Serving and `saved_model_cli`
all read it:

  encoder = tf.saved_model.load(path)
  outputs = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": type_ids},
                    training=False)                 # int32 [batch, seq_length] each
  outputs["pooled_output"]    # float32 [batch, hidden_size]; also as outputs["default"]
  outputs["sequence_output"]  # float32 [batch, seq_length, hidden_size]
  outputs["encoder_outputs"]  # num_layers x float32 [batch, seq_length, hidden_size]
  encoder.variables, encoder.trainable_variables, encoder.regularization_losses
  encoder.vocab_file          # asset: vocab.txt;  encoder.do_lower_case: bool tf.Variable
  encoder.bert_config_file    # asset: bert_config.json (sizes, for fine-tuning code)
  encoder.mlm(dict(..., masked_lm_positions=positions), training=False)["mlm_logits"]
      # with the masked-LM head only: float32 [batch, num_predictions, vocab_size]

A Keras 3 model saved by `model.export` is not such an object (its root is not callable and
signatures refuse list outputs), hence this hand-built AutoTrackable with explicit variable lists.
"""

from __future__ import annotations

import os
import tempfile

import keras
import tensorflow as tf

from official_bert.config import BertConfig
from official_bert.export.saved_model_writing import save_atomically, traced_for_saving

_INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


def encoder_input_spec(extra_names: tuple[str, ...] = ()) -> dict[str, tf.TensorSpec]:
    """{name: int32 TensorSpec [batch, seq_length]} for the encoder's inputs and `extra_names`."""
    return {
        name: tf.TensorSpec([None, None], tf.int32, name=name)
        for name in _INPUT_NAMES + extra_names
    }


def _tf_variables(variables) -> list[tf.Variable]:
    """The tf.Variables under Keras 3 variables (those are what the traced functions capture)."""
    return [
        variable.value if isinstance(variable, keras.Variable) else variable
        for variable in variables
    ]


def _with_variable_lists(root, model) -> None:
    """The TF Hub reusable-SavedModel attributes; no regularizers are used by BERT."""
    root.variables = _tf_variables(model.variables)
    root.trainable_variables = _tf_variables(model.trainable_variables)
    root.regularization_losses = []


def _encoder_outputs(outputs: dict) -> dict:
    return {
        "sequence_output": outputs["sequence_output"],
        "pooled_output": outputs["pooled_output"],
        "default": outputs["pooled_output"],
        "encoder_outputs": list(outputs["encoder_outputs"]),
    }


def build_encoder_module(
    encoder,
    vocab_file: str,
    do_lower_case: bool,
    bert_config_file: str,
    pretrainer=None,
) -> tf.Module:
    """The exportable object around a built BertEncoder (and a BertPretrainer sharing it).

    Args:
      encoder: a built BertEncoder with its final weights.
      vocab_file: vocab.txt, packaged as an asset (only its file name is recorded).
      do_lower_case: stored as a bool tf.Variable.
      bert_config_file: bert_config.json of `encoder`, packaged as an asset.
      pretrainer: a BertPretrainer whose `encoder` is `encoder`, for the `.mlm` sub-object.

    Returns:
      an AutoTrackable with `__call__`, the variable lists, assets, and `serving_default`
      available through `serving_signature(root)`.
    """
    root = tf.__internal__.tracking.AutoTrackable()
    # The Keras model itself is not tracked: its Keras variables would be saved as objects of
    # their own, loaded as copies beside the tf.Variables the functions use, and a checkpoint of
    # the loaded module would then hold the untrained copies.
    _with_variable_lists(root, encoder)
    root.vocab_file = tf.saved_model.Asset(vocab_file)
    root.bert_config_file = tf.saved_model.Asset(bert_config_file)
    root.do_lower_case = tf.Variable(do_lower_case, trainable=False, name="do_lower_case")

    @tf.function
    def call(inputs, training=False):
        return _encoder_outputs(encoder(inputs, training=training))

    with traced_for_saving():
        for training in (False, True):
            call.get_concrete_function(encoder_input_spec(), training=training)
    root.__call__ = call

    if pretrainer is not None:
        if pretrainer.encoder is not encoder:
            raise ValueError("the pretrainer's encoder must be the exported encoder")
        root.mlm = tf.__internal__.tracking.AutoTrackable()
        _with_variable_lists(root.mlm, pretrainer)

        @tf.function
        def call_mlm(inputs, training=False):
            outputs = pretrainer(inputs, training=training)
            return {**_encoder_outputs(outputs), "mlm_logits": outputs["mlm_logits"]}

        with traced_for_saving():
            for training in (False, True):
                call_mlm.get_concrete_function(
                    encoder_input_spec(("masked_lm_positions",)), training=training
                )
        root.mlm.__call__ = call_mlm
    return root


def serving_signature(root, num_layers: int):
    """`serving_default`: the three int32 inputs as named tensors -> sequence_output,
    pooled_output, default and encoder_outputs_0 ... encoder_outputs_{num_layers-1} (signatures
    cannot return lists)."""

    @tf.function(input_signature=[encoder_input_spec()])
    def serve(inputs):
        outputs = root.__call__(inputs, training=False)
        flat = {name: outputs[name] for name in ("sequence_output", "pooled_output", "default")}
        for index in range(num_layers):
            flat[f"encoder_outputs_{index}"] = outputs["encoder_outputs"][index]
        return flat

    return serve


def export_bert_encoder(
    encoder,
    export_path: str,
    vocab_file: str,
    do_lower_case: bool,
    bert_config: BertConfig,
    pretrainer=None,
    overwrite: bool = False,
) -> str:
    """Saves the encoder (with `.mlm` when `pretrainer` is given) at `export_path`.

    Written under a temporary name and renamed when complete; an existing `export_path` is an
    error unless `overwrite`. Returns export_path.
    """
    with tempfile.TemporaryDirectory() as directory:
        # Asset files are copied into the SavedModel when it is saved.
        config_file = os.path.join(directory, "bert_config.json")
        bert_config.to_json_file(config_file)
        root = build_encoder_module(encoder, vocab_file, do_lower_case, config_file, pretrainer)
        serve = serving_signature(root, encoder.num_layers)
        return save_atomically(
            root, export_path, signatures={"serving_default": serve}, overwrite=overwrite
        )
