"""SelfAttention: BERT's multi-head attention, Keras's MultiHeadAttention as it is (its dropout
drawing another mask on each replica of a strategy)."""

import keras

from official_bert.kernels.replica_dropout import ReplicaDropout


@keras.saving.register_keras_serializable(package="official_bert")
class SelfAttention(keras.layers.MultiHeadAttention):
    """`keras.layers.MultiHeadAttention`, unchanged: BERT's attention in public Keras API.

    Its own name so that the plain path and the speed path
    (official_bert.kernels.BatchedMatmulAttention, taken when the fast kernels are on) are two
    named twins with the same weights, variable names (query, key, value, attention_output)
    and checkpoint keys (`_query_dense`, ..., the attributes Keras tracks them by).

    The dropout of the attention probabilities that Keras creates in `build` becomes
    ReplicaDropout (its class switched, so its seed generator and checkpoint key stay): Keras's
    Dropout would draw the same mask on every replica of a strategy. This is the one private
    attribute (`_dropout_layer`) the plain layer touches; BatchedMatmulAttention makes it
    PackedBitsDropout instead.

    Masked positions get zero probability (Keras selects -1e9 in before the softmax); BERT's
    masks always leave a position visible, so this equals the original's additive -10000.

    Call arguments and returns: as `keras.layers.MultiHeadAttention`, e.g. query and value
    float [batch, seq_length, hidden_size], attention_mask bool [batch, seq_length,
    seq_length] -> float [batch, seq_length, hidden_size] in the compute dtype.
    """

    def build(self, query_shape, value_shape, key_shape=None):
        super().build(query_shape, value_shape, key_shape)
        if type(getattr(self, "_dropout_layer", None)) is keras.layers.Dropout:
            self._dropout_layer.__class__ = ReplicaDropout
