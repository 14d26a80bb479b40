"""ClassificationHead: dropout and a linear layer over the pooled output."""

import keras
from keras import ops

from official_bert.kernels.folded_dense import dense_layer
from official_bert.kernels.replica_dropout import ReplicaDropout
from official_bert.layers.initializers import bert_initializer


@keras.saving.register_keras_serializable(package="official_bert")
class ClassificationHead(keras.layers.Layer):
    """Logits for `num_classes` classes from the pooled [CLS] vector.

    Serves the next-sentence head of pre-training (2 classes, no dropout, as the original
    `cls/seq_relationship`) and the fine-tuning classifier of run_classifier.py (dropout 0.1 on the
    pooled output, then `output_weights`/`output_bias`). With num_classes=1 it is a regressor.

    It also tags tokens (BertTokenTagger): the linear layer applies to the last axis, so a
    [batch, seq_length, hidden_size] input gives logits per token.

    Call arguments:
      pooled_output: float [batch, hidden_size] (or [batch, seq_length, hidden_size]).
      training: bool, switches dropout.

    Returns:
      float32 logits [batch, num_classes] (or [batch, seq_length, num_classes]), computed in
      float32 under a mixed-precision policy too.
    """

    def __init__(
        self,
        num_classes: int,
        dropout_rate: float = 0.0,
        initializer_range: float = 0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range

        # === Layers ===
        # Keras's Dropout with a mask per replica of a strategy (one device: Keras's masks).
        self.dropout = ReplicaDropout(dropout_rate, dtype=self.dtype_policy, name="dropout")
        # float32 whatever the policy (the last layer of a mixed-precision model, as Keras's
        # guide has it): bfloat16 logits would round a regression score to 8 bits of mantissa
        # (steps of 1/64 between 2 and 4) and tie close classes' logits.
        self.dense = dense_layer(
            num_classes,
            kernel_initializer=bert_initializer(initializer_range),
            dtype="float32",
            name="logits",
        )

    @classmethod
    def for_encoder(cls, encoder, num_classes: int, dropout_rate: float, name: str):
        """A head over `encoder`'s outputs (a BertEncoder or ExportedBertEncoder): initialized
        with its initializer_range, computing in its dtype policy."""
        return cls(
            num_classes=num_classes,
            dropout_rate=dropout_rate,
            initializer_range=encoder.initializer_range,
            dtype=encoder.dtype_policy,
            name=name,
        )

    def build(self, pooled_output_shape):
        self.dense.build(pooled_output_shape)
        self.built = True

    def call(self, pooled_output, training=None):
        hidden = self.dropout(pooled_output, training=training)
        return self.dense(ops.cast(hidden, "float32"))

    def compute_output_shape(self, pooled_output_shape):
        return (*pooled_output_shape[:-1], self.num_classes)

    # === Config ===
    def get_config(self):
        config = super().get_config()
        config.update(
            num_classes=self.num_classes,
            dropout_rate=self.dropout_rate,
            initializer_range=self.initializer_range,
        )
        return config
