"""BertEncoder: the BERT transformer encoder, dict in and dict out."""

from __future__ import annotations

import keras
from keras import ops

from official_bert.activations import canonical_activation_name
from official_bert.config import BertConfig
from official_bert.layers.bert_embeddings import BertEmbeddings
from official_bert.layers.initializers import bert_initializer
from official_bert.layers.transformer_block import TransformerBlock
from official_bert.models.token_id_model import TokenIdModel


@keras.saving.register_keras_serializable(package="official_bert")
class BertEncoder(TokenIdModel):
    """The BERT encoder of the original `modeling.BertModel`, pooler included.

    Inputs (dict):
      input_word_ids: int32 [batch, seq_length] wordpiece ids.
      input_mask: int32 [batch, seq_length], 1 for real tokens, 0 for padding.
      input_type_ids: int32 [batch, seq_length] segment ids (0 for A, 1 for B).

    Outputs (dict):
      sequence_output: float [batch, seq_length, hidden_size], the last layer.
      pooled_output: float [batch, hidden_size], tanh(dense([CLS] of the last layer)).
      encoder_outputs: list of num_layers float [batch, seq_length, hidden_size], one per layer.
      embedding_output: float [batch, seq_length, hidden_size], after embedding LayerNorm.

    `training=True` switches dropout on. Floats are in the model's compute dtype.

    `output_positions` (call argument, int [batch, num_positions]): the last layer is computed
    only at [CLS] and these positions; `sequence_output` (and the last of `encoder_outputs`)
    is then float [batch, num_positions, hidden_size], the full output gathered at them (to
    float rounding), and `pooled_output` is unchanged. A head that reads a few positions (the
    masked LM) saves the last layer's work everywhere else: all but its key and value
    projections, 5-15% of a pre-training step's products. Positions may repeat (padding slots).

    Built on the plain layers (public Keras API) unless the fast kernels are on when it is
    constructed (official_bert.kernels.use_fast_kernels(), which the scripts call): then its
    attention, dropouts and GELU are their faster twins, with the same weights, checkpoint keys
    and results (to float rounding).

    causal=True makes it a left-to-right encoder (the BERT paper's "LTR & No NSP" ablation,
    section 5.1): position i attends only to real positions j <= i, so no output depends on a
    later token (pooled_output, from [CLS] at position 0, then sees [CLS] alone). The default
    (False) is the original bidirectional encoder.
    """

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int = 768,
        num_layers: int = 12,
        num_attention_heads: int = 12,
        intermediate_size: int = 3072,
        activation: str = "gelu",
        hidden_dropout_rate: float = 0.1,
        attention_dropout_rate: float = 0.1,
        max_position_embeddings: int = 512,
        type_vocab_size: int = 16,
        initializer_range: float = 0.02,
        layer_norm_epsilon: float = 1e-12,
        causal: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.activation = canonical_activation_name(activation)
        self.hidden_dropout_rate = hidden_dropout_rate
        self.attention_dropout_rate = attention_dropout_rate
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon
        self.causal = causal

        # === Layers ===
        policy = self.dtype_policy
        self.embeddings = BertEmbeddings(
            vocab_size=vocab_size,
            hidden_size=hidden_size,
            max_position_embeddings=max_position_embeddings,
            type_vocab_size=type_vocab_size,
            dropout_rate=hidden_dropout_rate,
            initializer_range=initializer_range,
            layer_norm_epsilon=layer_norm_epsilon,
            dtype=policy,
            name="embeddings",
        )
        # Each block is its own attribute, not only a list item: a Keras 3 layer kept in a plain
        # Python list is invisible to tf.train.Checkpoint (its weights would silently be left out).
        for index in range(num_layers):
            block = TransformerBlock(
                hidden_size=hidden_size,
                num_attention_heads=num_attention_heads,
                intermediate_size=intermediate_size,
                activation=self.activation,
                hidden_dropout_rate=hidden_dropout_rate,
                attention_dropout_rate=attention_dropout_rate,
                initializer_range=initializer_range,
                layer_norm_epsilon=layer_norm_epsilon,
                dtype=policy,
                name=f"transformer_layer_{index}",
            )
            setattr(self, f"transformer_layer_{index}", block)
        self.pooler = keras.layers.Dense(
            hidden_size,
            activation="tanh",
            kernel_initializer=bert_initializer(initializer_range),
            dtype=policy,
            name="pooler",
        )

    @classmethod
    def from_bert_config(cls, config: BertConfig, **kwargs) -> BertEncoder:
        """An encoder with the sizes of a `BertConfig` (bert_config.json)."""
        return cls(
            vocab_size=config.vocab_size,
            hidden_size=config.hidden_size,
            num_layers=config.num_hidden_layers,
            num_attention_heads=config.num_attention_heads,
            intermediate_size=config.intermediate_size,
            activation=config.hidden_act,
            hidden_dropout_rate=config.hidden_dropout_prob,
            attention_dropout_rate=config.attention_probs_dropout_prob,
            max_position_embeddings=config.max_position_embeddings,
            type_vocab_size=config.type_vocab_size,
            initializer_range=config.initializer_range,
            # Not an original field; converters of other layouts keep it as an extra key.
            layer_norm_epsilon=config.extra_fields.get("layer_norm_eps", 1e-12),
            **kwargs,
        )

    @property
    def transformer_layers(self) -> list[TransformerBlock]:
        return [getattr(self, f"transformer_layer_{i}") for i in range(self.num_layers)]

    @property
    def token_embedding(self) -> keras.layers.Embedding:
        """The word-embedding layer ([vocab_size, hidden_size]); MLM heads tie to it."""
        return self.embeddings.word_embeddings

    def build(self, input_shape=None):
        self.embeddings.build((None, None), (None, None))
        for block in self.transformer_layers:
            block.build((None, None, self.hidden_size))
        self.pooler.build((None, self.hidden_size))
        self.built = True

    def call(self, inputs, training=None, output_positions=None):
        if not isinstance(inputs, dict):
            raise TypeError(
                "BertEncoder takes a dict with input_word_ids, input_mask and input_type_ids; "
                f"got {type(inputs).__name__}"
            )
        missing = {"input_word_ids", "input_mask", "input_type_ids"} - set(inputs)
        if missing:
            raise KeyError(f"BertEncoder inputs lack {sorted(missing)}; got {sorted(inputs)}")
        word_ids = inputs["input_word_ids"]
        input_mask = inputs["input_mask"]
        embedding_output = self.embeddings(word_ids, inputs["input_type_ids"], training=training)
        attention_mask = self._attention_mask(input_mask)
        hidden = embedding_output
        encoder_outputs = []
        *lower_blocks, last_block = self.transformer_layers
        for block in lower_blocks:
            hidden = block(hidden, attention_mask=attention_mask, training=training)
            encoder_outputs.append(hidden)
        if output_positions is None:
            hidden = last_block(hidden, attention_mask=attention_mask, training=training)
            pooled_output = self.pooler(hidden[:, 0, :])
        else:
            # [CLS] first, for the pooler: [batch, 1 + num_positions].
            output_positions = ops.cast(output_positions, "int32")
            cls = ops.zeros((ops.shape(output_positions)[0], 1), "int32")
            query_positions = ops.concatenate([cls, output_positions], axis=1)
            last_hidden = last_block(
                hidden,
                attention_mask=self._attention_mask(input_mask, query_positions),
                training=training,
                query_positions=query_positions,
            )
            pooled_output = self.pooler(last_hidden[:, 0, :])
            hidden = last_hidden[:, 1:, :]
        encoder_outputs.append(hidden)
        return {
            "sequence_output": hidden,
            "pooled_output": pooled_output,
            "encoder_outputs": encoder_outputs,
            "embedding_output": embedding_output,
        }

    def _attention_mask(self, input_mask, query_positions=None):
        """Which keys each query may attend to, as the original's
        create_attention_mask_from_input_mask: every real (unpadded) key position, and with
        `causal` only those not after the query. bool [batch, queries, seq_length].

        input_mask: int [batch, seq_length]. query_positions: int32 [batch, queries], the
        positions of the queries (default: every position). Made for the queries rather than
        gathered from the whole mask: a gather of a bool tensor runs through a Transpose, which
        TensorFlow's oneDNN build logs as a false "DT_BOOL only on platforms with AVX-512"
        error.
        """
        key_mask = ops.cast(input_mask, "bool")[:, None, :]
        seq_length = ops.shape(input_mask)[1]
        if query_positions is None:
            query_positions = ops.arange(seq_length)[None, :]
        queries = ops.shape(query_positions)[1]
        attention_mask = ops.broadcast_to(key_mask, (ops.shape(input_mask)[0], queries, seq_length))
        if self.causal:
            # Left-to-right: the query at position i sees key positions j <= i only.
            attention_mask = ops.logical_and(
                attention_mask,
                ops.cast(query_positions, "int32")[:, :, None]
                >= ops.arange(seq_length, dtype="int32")[None, None, :],
            )
        return attention_mask

    def dummy_inputs(self, batch_size: int = 1, seq_length: int = 8) -> dict:
        """All-[0] int32 inputs of the given size, e.g. to build the model."""
        zeros = ops.zeros((batch_size, seq_length), "int32")
        return {
            "input_word_ids": zeros,
            "input_mask": ops.ones_like(zeros),
            "input_type_ids": zeros,
        }

    # === Config ===
    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            num_layers=self.num_layers,
            num_attention_heads=self.num_attention_heads,
            intermediate_size=self.intermediate_size,
            activation=self.activation,
            hidden_dropout_rate=self.hidden_dropout_rate,
            attention_dropout_rate=self.attention_dropout_rate,
            max_position_embeddings=self.max_position_embeddings,
            type_vocab_size=self.type_vocab_size,
            initializer_range=self.initializer_range,
            layer_norm_epsilon=self.layer_norm_epsilon,
            causal=self.causal,
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)
