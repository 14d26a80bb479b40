"""BertPretrainer: encoder + masked-LM head + next-sentence head."""

from __future__ import annotations

import keras

from official_bert.layers.classification_head import ClassificationHead
from official_bert.layers.masked_lm_head import MaskedLMHead
from official_bert.models.bert_encoder import BertEncoder
from official_bert.models.encoder_with_heads import EncoderWithHeads


@keras.saving.register_keras_serializable(package="official_bert")
class BertPretrainer(EncoderWithHeads):
    """The pre-training model of the original run_pretraining.py.

    Inputs (dict): the encoder's `input_word_ids`, `input_mask`, `input_type_ids` (int32
    [batch, seq_length]) and `masked_lm_positions` (int32 [batch, num_predictions]).

    Outputs (dict): the encoder's outputs, plus `mlm_logits` float32
    [batch, num_predictions, vocab_size] and, with `use_next_sentence_label`,
    `next_sentence_logits` float32 [batch, 2] (class 0 = B is the real next segment).
    """

    def __init__(
        self,
        encoder: BertEncoder,
        use_next_sentence_label: bool = True,
        **kwargs,
    ):
        super().__init__(encoder, **kwargs)
        self.use_next_sentence_label = use_next_sentence_label

        # === Layers ===
        self.masked_lm = MaskedLMHead(
            vocab_size=encoder.vocab_size,
            hidden_size=encoder.hidden_size,
            activation=encoder.activation,
            initializer_range=encoder.initializer_range,
            layer_norm_epsilon=encoder.layer_norm_epsilon,
            token_embedding=encoder.token_embedding,
            dtype=encoder.dtype_policy,
            name="masked_lm",
        )
        self.next_sentence = None
        if use_next_sentence_label:
            # No dropout: the original applies the seq_relationship weights to the pooled output
            # directly.
            self.next_sentence = ClassificationHead(
                num_classes=2,
                dropout_rate=0.0,
                initializer_range=encoder.initializer_range,
                dtype=encoder.dtype_policy,
                name="next_sentence",
            )

    def build(self, input_shape=None):
        self.build_encoder()
        self.masked_lm.build()
        if self.next_sentence is not None:
            self.next_sentence.build((None, self.encoder.hidden_size))
        self.built = True

    def call(self, inputs, training=None):
        outputs = dict(self.encoder(inputs, training=training))
        outputs["mlm_logits"] = self.masked_lm(
            outputs["sequence_output"], inputs["masked_lm_positions"]
        )
        if self.next_sentence is not None:
            outputs["next_sentence_logits"] = self.next_sentence(
                outputs["pooled_output"], training=training
            )
        return outputs

    # === Config ===
    def get_config(self):
        config = super().get_config()
        config.update(
            use_next_sentence_label=self.use_next_sentence_label,
        )
        return config
