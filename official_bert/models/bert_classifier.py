"""BertClassifier: encoder + classification head on the pooled output."""

from __future__ import annotations

import keras

from official_bert.layers.classification_head import ClassificationHead
from official_bert.models.bert_encoder import BertEncoder
from official_bert.models.encoder_with_heads import EncoderWithHeads


@keras.saving.register_keras_serializable(package="official_bert")
class BertClassifier(EncoderWithHeads):
    """Sentence (pair) classification as the original run_classifier.py.

    Inputs (dict): the encoder's `input_word_ids`, `input_mask`, `input_type_ids`
    (int32 [batch, seq_length]).

    Returns:
      float32 logits [batch, num_classes] (num_classes=1 for regression such as STS-B).

    The head reads `pooled_output` alone, which comes from [CLS]; built with the fast kernels
    on (official_bert.kernels.use_fast_kernels), the encoder's last layer runs at [CLS] only
    (EncoderWithHeads.encode_for_cls_heads): the same logits to float rounding for a fraction of
    that layer's work. A TF Hub encoder runs whole.
    """

    # What FusedEncoderModel (the serving exports) reads: the heads need [CLS] only.
    heads_read_cls_only = True

    def __init__(self, encoder: BertEncoder, num_classes: int, dropout_rate: float = 0.1, **kwargs):
        super().__init__(encoder, **kwargs)
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.classifier = ClassificationHead.for_encoder(
            encoder, num_classes=num_classes, dropout_rate=dropout_rate, name="classifier"
        )

    def build(self, input_shape=None):
        self.build_encoder()
        self.classifier.build((None, self.encoder.hidden_size))
        self.built = True

    def call(self, inputs, training=None):
        return self.heads(self.encode_for_cls_heads(inputs, training), training=training)

    def heads(self, encoder_outputs: dict, training=None):
        """The head on BertEncoder's outputs dict: logits [batch, num_classes] from
        `pooled_output` (a serving export runs it on FusedInferenceEncoder's outputs)."""
        return self.classifier(encoder_outputs["pooled_output"], training=training)

    # === Config ===
    def get_config(self):
        config = super().get_config()
        config.update(
            num_classes=self.num_classes,
            dropout_rate=self.dropout_rate,
        )
        return config
