"""BertSpanLabeler: encoder + start/end span head (SQuAD)."""

from __future__ import annotations

import keras

from official_bert.layers.span_head import SpanHead
from official_bert.models.bert_encoder import BertEncoder
from official_bert.models.encoder_with_heads import EncoderWithHeads


@keras.saving.register_keras_serializable(package="official_bert")
class BertSpanLabeler(EncoderWithHeads):
    """Answer-span prediction as the original run_squad.py.

    Inputs (dict): the encoder's `input_word_ids`, `input_mask`, `input_type_ids`
    (int32 [batch, seq_length]).

    Returns:
      dict with `start_logits` and `end_logits`, each float32 [batch, seq_length].
    """

    def __init__(self, encoder: BertEncoder, **kwargs):
        super().__init__(encoder, **kwargs)
        self.span = SpanHead(
            initializer_range=encoder.initializer_range, dtype=encoder.dtype_policy, name="span"
        )

    def build(self, input_shape=None):
        self.build_encoder()
        self.span.build((None, None, self.encoder.hidden_size))
        self.built = True

    def call(self, inputs, training=None):
        return self.heads(self.encoder(inputs, training=training), training=training)

    def heads(self, encoder_outputs: dict, training=None):
        """The span head on BertEncoder's outputs dict: {"start_logits", "end_logits"} float32
        [batch, seq_length] from `sequence_output` (a serving export runs it on
        FusedInferenceEncoder's outputs)."""
        start_logits, end_logits = self.span(encoder_outputs["sequence_output"])
        return {"start_logits": start_logits, "end_logits": end_logits}
