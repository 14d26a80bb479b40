"""EncoderWithHeads: the base of every model that puts task heads on a BertEncoder."""

import keras
from keras import ops

from official_bert.kernels.switch import fast_kernels_enabled
from official_bert.models.bert_encoder import BertEncoder
from official_bert.models.token_id_model import TokenIdModel


class EncoderWithHeads(TokenIdModel):
    """Holds `self.encoder` and (de)serializes it inside the model's config.

    Subclasses add their heads and extend `get_config` with their own arguments; `from_config`
    rebuilds the encoder first, so heads tied to it (the MLM output projection) tie again.
    """

    def __init__(self, encoder, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        # Read when built, as the layers read it; a speed path, not part of the config.
        self._built_with_fast_kernels = fast_kernels_enabled()

    def encode_for_cls_heads(self, inputs, training=None) -> dict:
        """The encoder's outputs dict for heads that read `pooled_output` alone. Built with the
        fast kernels on, a BertEncoder runs its last layer at [CLS] only (`output_positions`
        [batch, 0]): the same `pooled_output` to float rounding for a fraction of that layer's
        work; `sequence_output` is then empty. Other encoders (a TF Hub one) run whole."""
        if not (self._built_with_fast_kernels and isinstance(self.encoder, BertEncoder)):
            return self.encoder(inputs, training=training)
        no_positions = ops.zeros_like(ops.cast(inputs["input_word_ids"], "int32")[:, :0])
        return self.encoder(inputs, training=training, output_positions=no_positions)

    def build_encoder(self):
        if not self.encoder.built:
            self.encoder.build()

    # === Config ===
    def get_config(self):
        config = super().get_config()
        config.update(encoder=keras.saving.serialize_keras_object(self.encoder))
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)
