"""TransformerBlock: one post-LayerNorm BERT encoder layer."""

import keras

from official_bert.activations import canonical_activation_name, get_activation
from official_bert.kernels.batched_matmul_attention import BatchedMatmulAttention
from official_bert.kernels.folded_dense import dense_layer
from official_bert.kernels.packed_bits_dropout import dropout_layer
from official_bert.kernels.switch import fast_kernels_enabled
from official_bert.layers.initializers import bert_initializer
from official_bert.layers.position_gather import gather_positions
from official_bert.layers.self_attention import SelfAttention


@keras.saving.register_keras_serializable(package="official_bert")
class TransformerBlock(keras.layers.Layer):
    """Self-attention and a feed-forward network, each followed by residual + LayerNorm.

    This is the original BERT layer ("post-LN"): x = LN(x + Dropout(Attention(x))), then
    x = LN(x + Dropout(Dense(act(Dense(x))))). Attention is `keras.layers.MultiHeadAttention`
    (as SelfAttention), whose masked positions get exactly 0 probability, as with the
    original's `-10000 * (1 - mask)`.

    With the fast kernels on (official_bert.kernels.use_fast_kernels) when it is constructed,
    the attention, dropouts and GELU are their faster twins from official_bert.kernels: same
    weights, variable names and checkpoint keys, same results to float rounding.

    Call arguments:
      inputs: float [batch, seq_length, hidden_size].
      attention_mask: bool or int [batch, seq_length, seq_length]; 1 where a query position
        may attend to a key position.
      training: bool, switches dropout (attention probabilities and hidden states).
      query_positions: optional int [batch, num_positions]: compute the output only at these
        positions. Every position is still a key and value; only the queries, the attention
        output and the feed-forward network shrink to num_positions rows, which is all a head
        that reads a few positions needs (pre-training's [CLS] and masked positions). Then
        attention_mask holds those query rows, [batch, num_positions, seq_length].

    Returns:
      float [batch, seq_length, hidden_size], or [batch, num_positions, hidden_size] with
      query_positions (equal to the full output gathered at them, to float rounding).
    """

    def __init__(
        self,
        hidden_size: int,
        num_attention_heads: int,
        intermediate_size: int,
        activation: str = "gelu",
        hidden_dropout_rate: float = 0.1,
        attention_dropout_rate: float = 0.1,
        initializer_range: float = 0.02,
        layer_norm_epsilon: float = 1e-12,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if hidden_size % num_attention_heads:
            raise ValueError(
                f"hidden_size ({hidden_size}) is not a multiple of "
                f"num_attention_heads ({num_attention_heads})"
            )
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.activation = canonical_activation_name(activation)
        self.hidden_dropout_rate = hidden_dropout_rate
        self.attention_dropout_rate = attention_dropout_rate
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon

        # === Layers ===
        initializer = bert_initializer(initializer_range)
        policy = self.dtype_policy
        attention_class = BatchedMatmulAttention if fast_kernels_enabled() else SelfAttention
        self.attention = attention_class(
            num_heads=num_attention_heads,
            key_dim=hidden_size // num_attention_heads,
            dropout=attention_dropout_rate,
            kernel_initializer=initializer,
            dtype=policy,
            name="attention",
        )
        self.attention_dropout = dropout_layer(
            hidden_dropout_rate, dtype=policy, name="attention_output_dropout"
        )
        self.attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=policy, name="attention_layer_norm"
        )
        self.intermediate_dense = dense_layer(
            intermediate_size,
            activation=get_activation(self.activation),
            kernel_initializer=initializer,
            dtype=policy,
            name="intermediate",
        )
        self.output_dense = dense_layer(
            hidden_size, kernel_initializer=initializer, dtype=policy, name="output"
        )
        self.output_dropout = dropout_layer(
            hidden_dropout_rate, dtype=policy, name="output_dropout"
        )
        self.output_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=policy, name="output_layer_norm"
        )

    def build(self, inputs_shape):
        # Named as compute_output_shape's first argument: model.summary() passes the shapes a
        # direct build() recorded, under build()'s names, to compute_output_shape.
        hidden_shape = (None, None, self.hidden_size)
        self.attention.build(hidden_shape, hidden_shape)
        self.attention_layer_norm.build(hidden_shape)
        self.intermediate_dense.build(hidden_shape)
        self.output_dense.build((None, None, self.intermediate_size))
        self.output_layer_norm.build(hidden_shape)
        if not self.trainable:
            # Keras's MultiHeadAttention makes its projections in build(), after a
            # `trainable = False` set on an enclosing layer reached it: they would stay trainable.
            for layer in self._flatten_layers():
                layer.trainable = False
        self.built = True

    def call(self, inputs, attention_mask=None, training=None, query_positions=None):
        queries = inputs
        if query_positions is not None:
            queries = gather_positions(inputs, query_positions)
        attention_output = self.attention(
            queries, inputs, attention_mask=attention_mask, training=training
        )
        attention_output = self.attention_dropout(attention_output, training=training)
        attention_output = self.attention_layer_norm(queries + attention_output)
        layer_output = self.output_dense(self.intermediate_dense(attention_output))
        layer_output = self.output_dropout(layer_output, training=training)
        return self.output_layer_norm(attention_output + layer_output)

    def compute_output_shape(
        self, inputs_shape, attention_mask_shape=None, query_positions_shape=None
    ):
        # Each argument is named after call()'s with "_shape": the functional API matches them.
        if query_positions_shape is not None:
            return (inputs_shape[0], query_positions_shape[1], inputs_shape[2])
        return inputs_shape

    # === Config ===
    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_attention_heads=self.num_attention_heads,
            intermediate_size=self.intermediate_size,
            activation=self.activation,
            hidden_dropout_rate=self.hidden_dropout_rate,
            attention_dropout_rate=self.attention_dropout_rate,
            initializer_range=self.initializer_range,
            layer_norm_epsilon=self.layer_norm_epsilon,
        )
        return config
