"""SelfAttention: Keras multi-head attention with the cheaper dropout on its probabilities."""

import keras

from official_bert.layers.packed_bits_dropout import PackedBitsDropout


@keras.saving.register_keras_serializable(package="official_bert")
class SelfAttention(keras.layers.MultiHeadAttention):
    """`keras.layers.MultiHeadAttention` whose attention-probability dropout is PackedBitsDropout.

    The probabilities [batch, heads, seq, seq] are the largest tensor dropout touches in a
    BERT layer (at seq 128 and 4 heads of 64, twice the hidden states), so this is where the
    cheaper mask pays most. Everything else (weights, names, masking, config) is Keras's.

    Keras creates the dropout inside `_build_attention`; switching that object's class keeps
    its seed generator and its place in checkpoints (a second Dropout would leave the first's
    seed variable behind as an orphan). PackedBitsDropout adds no state, so the switch is safe.

    Call arguments and returns: as `keras.layers.MultiHeadAttention`.
    """

    def _build_attention(self, rank):
        super()._build_attention(rank)
        if type(self._dropout_layer) is keras.layers.Dropout:
            self._dropout_layer.__class__ = PackedBitsDropout
