"""EncoderWithHeads: the base of every model that puts task heads on a BertEncoder."""

import keras


class EncoderWithHeads(keras.Model):
    """Holds `self.encoder` and (de)serializes it inside the model's config.

    Subclasses add their heads and extend `get_config` with their own arguments; `from_config`
    rebuilds the encoder first, so heads tied to it (the MLM output projection) tie again.
    """

    def __init__(self, encoder, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder

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
