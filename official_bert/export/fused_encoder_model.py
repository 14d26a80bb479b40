"""FusedEncoderModel: a fine-tuned model's eval forward with its encoder as FusedInferenceEncoder,
what the serving exports run."""

from __future__ import annotations

import tensorflow as tf

from official_bert.kernels.inference_encoder import FusedInferenceEncoder
from official_bert.models import BertEncoder


class FusedEncoderModel(tf.Module):
    """`model(inputs)` of a fine-tuned BertClassifier, BertTokenTagger or BertSpanLabeler (a model with an
    `encoder` BertEncoder and a `heads(encoder_outputs, training)` method), eval mode, with the
    encoder run as FusedInferenceEncoder: the same outputs to float rounding (float32), fused
    products, and with dtype "bfloat16" weights stored in bfloat16.

    A model whose heads read [CLS] alone (`heads_read_cls_only`, BertClassifier) gets the
    encoder's last layer at [CLS] only (FusedInferenceEncoder's `output_positions`).

    Holds the fused encoder's weights and the model's head layers, not the Keras encoder (a
    SavedModel of it stores one copy of the encoder). The weights are copied when it is made.

    Call: inputs, the encoder's dict (int32 [batch, seq_length] each) -> what `model.heads`
    returns, e.g. logits [batch, num_classes] or [batch, seq_length, num_tags].
    """

    @staticmethod
    def can_run(model) -> bool:
        """Whether `model` has what this needs: an `encoder` BertEncoder (not a TF Hub encoder)
        and a `heads` method (not a frozen-feature head)."""
        return hasattr(model, "heads") and isinstance(getattr(model, "encoder", None), BertEncoder)

    def __init__(self, model, dtype: str, name: str | None = None):
        super().__init__(name=name)
        if not self.can_run(model):
            raise ValueError(
                "a fused serving encoder needs a model of a BertEncoder with a `heads` method "
                f"(BertClassifier, BertTokenTagger, BertSpanLabeler); got {type(model).__name__}"
            )
        self.encoder = FusedInferenceEncoder(model.encoder, dtype=dtype)
        # Tracked so that a SavedModel holds the heads' variables; the encoder's stay out.
        self.head_layers = [layer for layer in model.layers if layer is not model.encoder]
        self._heads = model.heads
        # A head on [CLS] alone (BertClassifier): the last layer runs there only.
        self._cls_only = bool(getattr(model, "heads_read_cls_only", False))

    def __call__(self, inputs, training=None):
        positions = None
        if self._cls_only:
            positions = tf.zeros([tf.shape(inputs["input_word_ids"])[0], 0], tf.int32)
        encoder_outputs = self.encoder(inputs, training=training, output_positions=positions)
        return self._heads(encoder_outputs, training=False)
