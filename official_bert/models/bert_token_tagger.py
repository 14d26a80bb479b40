"""BertTokenTagger: encoder + a classification head on every token (NER, POS tagging)."""

from __future__ import annotations

import keras

from official_bert.layers.classification_head import ClassificationHead
from official_bert.models.bert_encoder import BertEncoder
from official_bert.models.encoder_with_heads import EncoderWithHeads


@keras.saving.register_keras_serializable(package="official_bert")
class BertTokenTagger(EncoderWithHeads):
    """Token tagging fine-tuned end to end, as the BERT paper's CoNLL-2003 NER (section 5.3):
    dropout and a linear layer on the last layer's vector of every token; a word's tag is read
    at its first wordpiece (data/tagging/features.py).

    Inputs (dict): the encoder's `input_word_ids`, `input_mask`, `input_type_ids`
    (int32 [batch, seq_length]).

    Returns:
      float32 logits [batch, seq_length, num_tags].
    """

    def __init__(self, encoder: BertEncoder, num_tags: int, dropout_rate: float = 0.1, **kwargs):
        super().__init__(encoder, **kwargs)
        self.num_tags = num_tags
        self.dropout_rate = dropout_rate
        self.tagger = ClassificationHead.for_encoder(
            encoder, num_classes=num_tags, dropout_rate=dropout_rate, name="tagger"
        )

    def build(self, input_shape=None):
        self.build_encoder()
        self.tagger.build((None, None, self.encoder.hidden_size))
        self.built = True

    def call(self, inputs, training=None):
        return self.heads(self.encoder(inputs, training=training), training=training)

    def heads(self, encoder_outputs: dict, training=None):
        """The head on BertEncoder's outputs dict: logits [batch, seq_length, num_tags] from
        `sequence_output` (a serving export runs it on FusedInferenceEncoder's outputs)."""
        return self.tagger(encoder_outputs["sequence_output"], training=training)

    # === Config ===
    def get_config(self):
        config = super().get_config()
        config.update(num_tags=self.num_tags, dropout_rate=self.dropout_rate)
        return config
