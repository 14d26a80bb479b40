"""BertEmbeddings: word + position + token-type embeddings, LayerNorm and dropout."""

import keras
import tensorflow as tf
from keras import ops

from official_bert.kernels.packed_bits_dropout import dropout_layer
from official_bert.layers.initializers import bert_initializer


@keras.saving.register_keras_serializable(package="official_bert")
class BertEmbeddings(keras.layers.Layer):
    """The input embeddings of BERT (the original `embedding_postprocessor` and lookup).

    Call arguments:
      input_word_ids: int32 [batch, seq_length] token ids in [0, vocab_size).
      input_type_ids: int32 [batch, seq_length] segment ids in [0, type_vocab_size).
      training: bool, switches dropout.

    Returns:
      float [batch, seq_length, hidden_size] (the layer's compute dtype).
    """

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        max_position_embeddings: int = 512,
        type_vocab_size: int = 16,
        dropout_rate: float = 0.1,
        initializer_range: float = 0.02,
        layer_norm_epsilon: float = 1e-12,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon

        # === Layers ===
        initializer = bert_initializer(initializer_range)
        self.word_embeddings = keras.layers.Embedding(
            vocab_size,
            hidden_size,
            embeddings_initializer=initializer,
            dtype=self.dtype_policy,
            name="word_embeddings",
        )
        self.token_type_embeddings = keras.layers.Embedding(
            type_vocab_size,
            hidden_size,
            embeddings_initializer=initializer,
            dtype=self.dtype_policy,
            name="token_type_embeddings",
        )
        self.layer_norm = keras.layers.LayerNormalization(
            axis=-1, epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        # keras.layers.Dropout, or its faster twin when the fast kernels are on.
        self.dropout = dropout_layer(dropout_rate, dtype=self.dtype_policy, name="dropout")

    def build(self, input_word_ids_shape=None, input_type_ids_shape=None):
        # Named as compute_output_shape's arguments (model.summary() passes the shapes a direct
        # build() recorded to it); the weights do not depend on them.
        self.word_embeddings.build((None, None))
        self.token_type_embeddings.build((None, None))
        # Absolute learned positions, one row per position, as the original's
        # `position_embeddings` variable [max_position_embeddings, hidden_size].
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(self.max_position_embeddings, self.hidden_size),
            initializer=bert_initializer(self.initializer_range),
        )
        self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def call(self, input_word_ids, input_type_ids, training=None):
        seq_length = input_word_ids.shape[1]
        if seq_length is not None and seq_length > self.max_position_embeddings:
            raise ValueError(
                f"sequence length {seq_length} is longer than max_position_embeddings "
                f"({self.max_position_embeddings}) of this model"
            )
        if seq_length is None:
            seq_length = ops.shape(input_word_ids)[1]
            # Known only when run (a serving signature, a TF Hub module): the same message as
            # above from an assertion the position slice waits for; without it the user saw
            # "Incompatible shapes" from the add below. (XLA compiles the assertion away.)
            too_long = tf.debugging.assert_less_equal(
                seq_length,
                self.max_position_embeddings,
                message=(
                    "sequence length is longer than max_position_embeddings "
                    f"({self.max_position_embeddings}) of this model"
                ),
            )
            with tf.control_dependencies([too_long]):
                seq_length = tf.identity(seq_length)
        embeddings = self.word_embeddings(input_word_ids)
        embeddings = embeddings + self.token_type_embeddings(input_type_ids)
        positions = ops.cast(self.position_embeddings[:seq_length], embeddings.dtype)
        embeddings = embeddings + positions[None, :, :]
        embeddings = self.layer_norm(embeddings)
        return self.dropout(embeddings, training=training)

    def compute_output_shape(self, input_word_ids_shape, input_type_ids_shape=None):
        return (*input_word_ids_shape, self.hidden_size)

    # === Config ===
    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            max_position_embeddings=self.max_position_embeddings,
            type_vocab_size=self.type_vocab_size,
            dropout_rate=self.dropout_rate,
            initializer_range=self.initializer_range,
            layer_norm_epsilon=self.layer_norm_epsilon,
        )
        return config
