"""BertMultipleChoice: encoder + one score per (context, choice) pair, softmax over the choices."""

from __future__ import annotations

import keras
from keras import ops

from official_bert.layers.classification_head import ClassificationHead
from official_bert.models.bert_encoder import BertEncoder
from official_bert.models.encoder_with_heads import EncoderWithHeads

# The logit of a choice slot that holds no choice (choice_mask 0): its softmax probability is 0
# in float32, and unlike -inf it keeps the loss and its gradient finite.
ABSENT_CHOICE_LOGIT = -1e9


def flatten_choices(inputs: dict) -> dict:
    """The encoder's inputs of every (example, choice) row: each of input_word_ids, input_mask
    and input_type_ids int [batch, num_choices, seq_length] -> [batch * num_choices,
    seq_length]; other entries (labels, choice_mask) are left out."""
    flat = {}
    for name in ("input_word_ids", "input_mask", "input_type_ids"):
        value = inputs[name]
        flat[name] = ops.reshape(value, (-1, ops.shape(value)[-1]))
    return flat


def mask_absent_choices(logits, choice_mask):
    """`logits` float32 [batch, num_choices] with the slots where `choice_mask` (int or float,
    the same shape) is 0 set to ABSENT_CHOICE_LOGIT."""
    present = ops.cast(choice_mask, "float32") > 0
    return ops.where(present, logits, ops.full_like(logits, ABSENT_CHOICE_LOGIT))


@keras.saving.register_keras_serializable(package="official_bert")
class BertMultipleChoice(EncoderWithHeads):
    """Multiple-choice questions as in the BERT paper's SWAG experiments (section 4.4): each
    choice is packed with its context as one sequence ([CLS] context [SEP] choice [SEP]), a
    linear layer scores the pooled [CLS] vector of each, and the scores of an example's choices
    are its logits (trained with cross-entropy over the choices). The layer's only weights are
    a [hidden_size] vector and a bias, so any number of choices works with the same weights;
    examples with fewer choices than the batch's slots leave the rest masked (choice_mask).

    Inputs (dict): `input_word_ids`, `input_mask`, `input_type_ids` (int32 [batch, num_choices,
    seq_length]); optional `choice_mask` (int or float [batch, num_choices], 1 where the slot
    holds a choice; without it every slot does).

    Returns:
      float32 logits [batch, num_choices]; absent choices ABSENT_CHOICE_LOGIT.

    As BertClassifier, built with the fast kernels on, the encoder's last layer runs at [CLS]
    only.
    """

    # What FusedEncoderModel (the serving export) reads: the head needs [CLS] only.
    heads_read_cls_only = True

    def __init__(self, encoder: BertEncoder, dropout_rate: float = 0.1, **kwargs):
        super().__init__(encoder, **kwargs)
        self.dropout_rate = dropout_rate
        self.multiple_choice = ClassificationHead.for_encoder(
            encoder, num_classes=1, dropout_rate=dropout_rate, name="multiple_choice"
        )

    # A question's choices: [batch, choices, seq_length].
    input_ranks = {"input_word_ids": 3, "input_mask": 3, "input_type_ids": 3}

    def build(self, input_shape=None):
        self.build_encoder()
        self.multiple_choice.build((None, self.encoder.hidden_size))
        self.built = True

    def call(self, inputs, training=None):
        word_ids = inputs["input_word_ids"]
        scores = self.row_scores(flatten_choices(inputs), training=training)
        logits = ops.reshape(scores, ops.shape(word_ids)[:2])
        if "choice_mask" in inputs:
            logits = mask_absent_choices(logits, inputs["choice_mask"])
        return logits

    def row_scores(self, flat_inputs: dict, training=None):
        """The score of each packed (context, choice) row: float32 [rows] from the encoder's
        inputs int32 [rows, seq_length]."""
        logits = self.heads(self.encode_for_cls_heads(flat_inputs, training), training=training)
        return ops.reshape(logits, (-1,))

    def heads(self, encoder_outputs: dict, training=None):
        """The head on BertEncoder's outputs dict of the flattened rows: float32 [rows, 1] from
        `pooled_output` (a serving export runs it on FusedInferenceEncoder's outputs)."""
        return self.multiple_choice(encoder_outputs["pooled_output"], training=training)

    # === Config ===
    def get_config(self):
        config = super().get_config()
        config.update(dropout_rate=self.dropout_rate)
        return config
