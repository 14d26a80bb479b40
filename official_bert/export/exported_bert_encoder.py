"""ExportedBertEncoder: a Keras 3 layer that loads an exported BERT encoder and fine-tunes it.

`tensorflow_hub.KerasLayer` works only with tf_keras, and `keras.layers.TFSMLayer` cannot train
the variables of a TF Hub module as they are: it names its wrappers after the tf.Variables
("..._embeddings:0"), and the optimizer's slot names built from those ("..._embeddings:0_momentum")
are not valid scope names. This layer wraps the same variables under clean names and calls the
module's own `__call__` with `training`, so dropout switches as in the source model.
"""

from __future__ import annotations

import re

import keras
import tensorflow as tf

from official_bert.checkpoints.tf_hub_encoder import encoder_module_config
from official_bert.export.hub_handle import resolve_hub_handle

_INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


def _keras_variable_name(tf_name: str) -> str:
    """'bert/embeddings/word_embeddings:0' -> 'bert_embeddings_word_embeddings'."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", re.sub(r":\d+$", "", tf_name))


def exported_encoder_settings(module, handle: str) -> dict:
    """{"vocab_file": str, "do_lower_case": bool, "bert_config_file": str or None} of a loaded
    exported encoder (the asset paths are inside `handle`).

    Raises:
      ValueError: `module` lacks what the TF Hub BERT encoder API promises.
    """
    missing = [
        name
        for name in ("variables", "trainable_variables", "vocab_file", "do_lower_case")
        if not hasattr(module, name)
    ]
    if missing or not callable(module):
        raise ValueError(
            f"{handle} is not an exported BERT encoder (TF Hub BERT encoder API): "
            f"missing {missing or ['__call__']}"
        )
    config_asset = getattr(module, "bert_config_file", None)
    return {
        "vocab_file": module.vocab_file.asset_path.numpy().decode("utf-8"),
        "do_lower_case": bool(module.do_lower_case.numpy()),
        "bert_config_file": config_asset.asset_path.numpy().decode("utf-8")
        if config_asset is not None
        else None,
    }


def read_exported_encoder_settings(handle: str) -> dict:
    """`exported_encoder_settings` of the encoder exported at `handle` (a folder or a URL),
    and "bert_config": its BertConfig (tf_hub_encoder.encoder_module_config)."""
    module = tf.saved_model.load(resolve_hub_handle(handle))
    settings = exported_encoder_settings(module, str(handle))
    settings["bert_config"] = encoder_module_config(module, str(handle))
    return settings


@keras.saving.register_keras_serializable(package="official_bert")
class ExportedBertEncoder(keras.layers.Layer):
    """An encoder SavedModel (TF Hub BERT encoder API, e.g. from export_tfhub.py) as a layer.

    Args:
      handle: folder of the exported encoder, or an http(s) URL of one (e.g. on tfhub.dev),
        downloaded and cached by tensorflow_hub.
      trainable: whether fine-tuning updates the encoder's weights.

    Inputs (dict): input_word_ids, input_mask, input_type_ids: int32 [batch, seq_length].

    Outputs (dict):
      sequence_output: float32 [batch, seq_length, hidden_size].
      pooled_output (and default): float32 [batch, hidden_size].
      encoder_outputs: num_layers x float32 [batch, seq_length, hidden_size].

    Attributes:
      hidden_size, num_layers, initializer_range: from the module's bert_config.json asset (so
        task models such as BertClassifier can put heads on this layer), or from its outputs.
      vocab_file: str, the module's vocab.txt; do_lower_case: bool.
    """

    def __init__(self, handle: str, trainable: bool = True, **kwargs):
        super().__init__(trainable=trainable, **kwargs)
        self.handle = str(handle)
        self._module = tf.saved_model.load(resolve_hub_handle(self.handle))
        settings = exported_encoder_settings(self._module, self.handle)
        self.vocab_file = settings["vocab_file"]
        self.do_lower_case = settings["do_lower_case"]
        config = encoder_module_config(self._module, self.handle)
        self.hidden_size = config.hidden_size
        self.num_layers = config.num_hidden_layers
        self.initializer_range = config.initializer_range

        # === Variables: the module's own tf.Variables under Keras names ===
        trainable_ids = {id(variable) for variable in self._module.trainable_variables}
        for variable in self._module.variables:
            wrapper = keras.Variable(
                initializer=variable,  # Keras keeps this very tf.Variable, no copy.
                trainable=id(variable) in trainable_ids,
                dtype=variable.dtype,
                shape=variable.shape,
                name=_keras_variable_name(variable.name),
            )
            self._track_variable(wrapper)
        self.built = True

    def call(self, inputs, training=None):
        if not isinstance(inputs, dict) or set(_INPUT_NAMES) - set(inputs):
            raise ValueError(
                f"ExportedBertEncoder takes a dict with {list(_INPUT_NAMES)}; got "
                f"{sorted(inputs) if isinstance(inputs, dict) else type(inputs).__name__}"
            )
        inputs = {name: tf.cast(inputs[name], tf.int32) for name in _INPUT_NAMES}
        outputs = self._module(inputs, training=bool(training) and self.trainable)
        return {
            "sequence_output": outputs["sequence_output"],
            "pooled_output": outputs["pooled_output"],
            "default": outputs["default"],
            "encoder_outputs": list(outputs["encoder_outputs"]),
        }

    # === Config ===
    def get_config(self):
        config = super().get_config()
        config.update(handle=self.handle)
        return config
