"""FeatureBasedClassifier: a classifier of sentences or of tokens over frozen BERT features (the
paper's feature-based approach, section 5.3), with ELMo's learned layer mix as one choice of
features."""

from __future__ import annotations

import keras
from keras import ops

from official_bert.layers.classification_head import ClassificationHead
from official_bert.layers.scalar_mix import ScalarMix
from official_bert.models.encoder_with_heads import EncoderWithHeads

# What the head reads, at the [CLS] position (0) of the encoder's layers, or at every position
# when it tags tokens (then with a seq_length axis after batch):
#   last:         the last layer                          [batch, hidden_size]
#   concat_last4: the last four layers, concatenated      [batch, 4 * hidden_size]
#                 (the paper's best feature-based choice, Table 7, on CoNLL-2003 NER)
#   scalar_mix:   ScalarMix over every layer               [batch, hidden_size]
FEATURES = ("last", "concat_last4", "scalar_mix")


def _freeze(encoder) -> None:
    """Makes every layer and variable of a built encoder non-trainable.

    `encoder.trainable = False` alone is not enough: Keras passes it down only to the sublayers
    and variables that exist at that moment (building creates more: the attention projections,
    every variable), and on TF a repeated `layer.trainable = False` is skipped outright
    (AutoTrackable's `__setattr__` short-circuits when the value `is` the current one).
    """
    for layer in encoder._flatten_layers():
        layer.trainable = False
    for variable in encoder.weights:
        variable.trainable = False


@keras.saving.register_keras_serializable(package="official_bert")
class FeatureBasedClassifier(EncoderWithHeads):
    """Sentence (pair) classification, or token tagging, on features of a frozen encoder.

    The encoder is made non-trainable when the model is built and always runs with dropout off (`training=False`),
    so its variables never change and its features are those of inference, as ELMo uses them;
    only the head (and the scalar mix) train. Unlike BertClassifier, the pooler is not used: the
    features are raw [CLS] vectors of the encoder's layers.

    Args:
      encoder: a BertEncoder or ExportedBertEncoder (anything with `encoder_outputs`,
        `hidden_size`, `num_layers`, `initializer_range`).
      num_classes: logits per example (1 for regression).
      features: one of FEATURES.
      dropout_rate: dropout on the features before the linear layer.
      per_token: False classifies the [CLS] vector; True tags every token (the features of
        each position, as the paper's feature-based NER).

    Inputs (dict): the encoder's `input_word_ids`, `input_mask`, `input_type_ids`
    (int32 [batch, seq_length]).

    Returns:
      float32 logits [batch, num_classes], or [batch, seq_length, num_classes] per token.
    """

    def __init__(
        self,
        encoder,
        num_classes: int,
        features: str = "last",
        dropout_rate: float = 0.1,
        per_token: bool = False,
        **kwargs,
    ):
        super().__init__(encoder, **kwargs)
        if features not in FEATURES:
            raise ValueError(f"features must be one of {FEATURES}, got {features!r}")
        if features == "concat_last4" and encoder.num_layers < 4:
            raise ValueError(
                f"features='concat_last4' needs an encoder with at least 4 layers; this one has "
                f"{encoder.num_layers}"
            )
        self.num_classes = num_classes
        self.features = features
        self.dropout_rate = dropout_rate
        self.per_token = per_token
        self.feature_size = encoder.hidden_size * (4 if features == "concat_last4" else 1)

        # === Layers ===
        self.scalar_mix = None
        if features == "scalar_mix":
            self.scalar_mix = ScalarMix(
                encoder.num_layers, dtype=encoder.dtype_policy, name="scalar_mix"
            )
        self.classifier = ClassificationHead.for_encoder(
            encoder, num_classes=num_classes, dropout_rate=dropout_rate, name="classifier"
        )

    def build(self, input_shape=None):
        self.build_encoder()
        _freeze(self.encoder)
        if self.scalar_mix is not None:
            self.scalar_mix.build()
        positions = (None,) if self.per_token else ()
        self.classifier.build((None, *positions, self.feature_size))
        self.built = True

    def features_of(self, inputs):
        """The head's input in the encoder's compute dtype: [batch, feature_size], or
        [batch, seq_length, feature_size] per token."""
        layers = self.encoder(inputs, training=False)["encoder_outputs"]
        if not self.per_token:
            # Every choice is linear per position: the [CLS] vectors alone give the same result.
            layers = [layer[:, 0] for layer in layers]
        if self.features == "last":
            return layers[-1]
        if self.features == "concat_last4":
            return ops.concatenate(layers[-4:], axis=-1)
        return self.scalar_mix(layers)

    def call(self, inputs, training=None):
        return self.classifier(self.features_of(inputs), training=training)

    # === Config ===
    def get_config(self):
        config = super().get_config()
        config.update(
            num_classes=self.num_classes,
            features=self.features,
            dropout_rate=self.dropout_rate,
            per_token=self.per_token,
        )
        return config
