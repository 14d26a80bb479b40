"""SelfAttention: BERT's multi-head attention, Keras's MultiHeadAttention as it is."""

import keras


@keras.saving.register_keras_serializable(package="official_bert")
class SelfAttention(keras.layers.MultiHeadAttention):
    """`keras.layers.MultiHeadAttention`, unchanged: BERT's attention in public Keras API.

    Its own name so that the plain path and the speed path
    (official_bert.kernels.BatchedMatmulAttention, taken when the fast kernels are on) are two
    named twins with the same weights, variable names (query, key, value, attention_output)
    and checkpoint keys (`_query_dense`, ..., the attributes Keras tracks them by).

    Masked positions get zero probability (Keras selects -1e9 in before the softmax); BERT's
    masks always leave a position visible, so this equals the original's additive -10000.

    Call arguments and returns: as `keras.layers.MultiHeadAttention`, e.g. query and value
    float [batch, seq_length, hidden_size], attention_mask bool [batch, seq_length,
    seq_length] -> float [batch, seq_length, hidden_size] in the compute dtype.
    """
