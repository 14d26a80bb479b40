"""MaskedLMHead: predicts the original tokens at masked positions."""

import keras
import tensorflow as tf
from keras import ops

from official_bert.activations import canonical_activation_name, get_activation
from official_bert.kernels.folded_dense import dense_layer
from official_bert.layers.initializers import bert_initializer
from official_bert.layers.position_gather import gather_positions


@keras.saving.register_keras_serializable(package="official_bert")
class MaskedLMHead(keras.layers.Layer):
    """The original BERT masked-LM head: dense + activation + LayerNorm, then a projection onto
    the word-embedding table (weights tied with the input embeddings) plus a bias per token.

    The output projection has no weight of its own: it reads `token_embedding.embeddings`, so the
    owning model passes its encoder's word-embedding layer in. That tie is not part of
    `get_config`; models that own a head rebuild it, tied, from their own config.

    Call arguments:
      sequence_output: float [batch, seq_length, hidden_size].
      masked_positions: int32 [batch, num_predictions] indices into seq_length; None predicts
        at every position (a left-to-right LM's next-token logits).

    Returns:
      float32 logits [batch, num_predictions, vocab_size] ([batch, seq_length, vocab_size]
      when masked_positions is None).
    """

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        activation: str = "gelu",
        initializer_range: float = 0.02,
        layer_norm_epsilon: float = 1e-12,
        token_embedding: keras.layers.Embedding | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.activation = canonical_activation_name(activation)
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon
        self.token_embedding = token_embedding

        # === Layers ===
        self.transform_dense = dense_layer(
            hidden_size,
            activation=get_activation(self.activation),
            kernel_initializer=bert_initializer(initializer_range),
            dtype=self.dtype_policy,
            name="transform_dense",
        )
        self.transform_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="transform_layer_norm"
        )

    def build(self, sequence_output_shape=None, masked_positions_shape=None):
        if self.token_embedding is None:
            raise ValueError(
                "MaskedLMHead needs `token_embedding` (the encoder's word-embedding layer) "
                "to tie its output projection"
            )
        self.transform_dense.build((None, None, self.hidden_size))
        self.transform_layer_norm.build((None, None, self.hidden_size))
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.vocab_size,), initializer="zeros"
        )
        self.built = True

    def call(self, sequence_output, masked_positions=None):
        gathered = sequence_output
        if masked_positions is not None:
            gathered = gather_positions(sequence_output, masked_positions)
        hidden = self.transform_layer_norm(self.transform_dense(gathered))
        table = ops.cast(self.token_embedding.embeddings, hidden.dtype)
        # hidden @ table^T as one 2-D MatMul with transpose_b: the gradient for the [vocab,
        # hidden] table then comes out in its own layout (no transpose of a vocab-sized tensor
        # each step, which matmul(hidden, transpose(table)) costs). In float32 the bias goes
        # straight onto the MatMul (one fused kernel forward, BiasAddGrad backward); a 16-bit
        # MatMul's logits are cast to float32 first so the bias is added at full precision.
        flat_logits = tf.matmul(tf.reshape(hidden, [-1, self.hidden_size]), table, transpose_b=True)
        flat_logits = tf.nn.bias_add(
            tf.cast(flat_logits, tf.float32), tf.cast(self.output_bias, tf.float32)
        )
        # Logits in float32 so the softmax cross-entropy is stable under mixed precision.
        return tf.reshape(
            flat_logits, tf.concat([tf.shape(hidden)[:-1], [self.vocab_size]], axis=0)
        )

    def compute_output_shape(self, sequence_output_shape, masked_positions_shape=None):
        if masked_positions_shape is None:
            return (*sequence_output_shape[:-1], self.vocab_size)
        return (*masked_positions_shape, self.vocab_size)

    # === Config ===
    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            activation=self.activation,
            initializer_range=self.initializer_range,
            layer_norm_epsilon=self.layer_norm_epsilon,
        )
        return config
