"""SpanHead: start and end logits of an answer span (SQuAD)."""

import keras
from keras import ops

from official_bert.kernels.folded_dense import dense_layer
from official_bert.layers.initializers import bert_initializer


@keras.saving.register_keras_serializable(package="official_bert")
class SpanHead(keras.layers.Layer):
    """A linear layer with 2 outputs per token, as the original run_squad.py `cls/squad` head.

    Call arguments:
      sequence_output: float [batch, seq_length, hidden_size].

    Returns:
      (start_logits, end_logits), each float32 [batch, seq_length], computed in float32 under a
      mixed-precision policy too.
    """

    def __init__(self, initializer_range: float = 0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range

        # === Layers ===
        # float32 whatever the policy (as ClassificationHead's): bfloat16 logits would tie the
        # scores of close spans.
        self.dense = dense_layer(
            2,
            kernel_initializer=bert_initializer(initializer_range),
            dtype="float32",
            name="logits",
        )

    def build(self, sequence_output_shape):
        self.dense.build(sequence_output_shape)
        self.built = True

    def call(self, sequence_output):
        logits = self.dense(ops.cast(sequence_output, "float32"))
        return logits[..., 0], logits[..., 1]

    def compute_output_shape(self, sequence_output_shape):
        return tuple(sequence_output_shape[:-1]), tuple(sequence_output_shape[:-1])

    # === Config ===
    def get_config(self):
        config = super().get_config()
        config.update(initializer_range=self.initializer_range)
        return config
