"""SelfAttention: Keras multi-head attention with cheaper projections and probability dropout."""

import keras
from keras import ops

from official_bert.layers.folded_einsum_dense import FoldedEinsumDense
from official_bert.layers.packed_bits_dropout import PackedBitsDropout


@keras.saving.register_keras_serializable(package="official_bert")
class SelfAttention(keras.layers.MultiHeadAttention):
    """`keras.layers.MultiHeadAttention` with cheaper projections, masking and dropout.

    Weights, their names (so checkpoints), config and results are Keras's; three parts of the
    computation are cheaper on a CPU, each below.

    The probabilities [batch, heads, seq, seq] are the largest tensor dropout touches in a
    BERT layer (at seq 128 and 4 heads of 64, twice the hidden states), so this is where the
    cheaper mask of PackedBitsDropout pays most.

    Keras creates the dropout inside `_build_attention`; switching that object's class keeps
    its seed generator and its place in checkpoints (a second Dropout would leave the first's
    seed variable behind as an orphan). PackedBitsDropout adds no state, so the switch is safe.

    The query, key, value and output projections become FoldedEinsumDense the same way (after
    Keras builds them, so weights, names and checkpoints are Keras's): one 2-D MatMul each
    instead of a broadcast BatchMatMul whose gradient sums over the batch.

    Masked positions get -10000 *added* to their scores before a plain softmax (as the original
    BERT), where Keras selects -1e9 in with `where` and selects zeros in again after the
    softmax: two passes over [batch, heads, seq, seq] forward and two backward that the
    addition does not need. The probabilities are the same (exp underflows to exactly 0 at
    masked positions) except in a row where every key is masked: Keras gives zeros, the
    addition (as the original) about the softmax of the unmasked scores. BERT's masks never
    do that: the first position is always visible.

    Call arguments and returns: as `keras.layers.MultiHeadAttention`.
    """

    def build(self, query_shape, value_shape, key_shape=None):
        super().build(query_shape, value_shape, key_shape)
        for dense in (self._query_dense, self._key_dense, self._value_dense, self._output_dense):
            if type(dense) is keras.layers.EinsumDense:
                dense.__class__ = FoldedEinsumDense

    def _build_attention(self, rank):
        super()._build_attention(rank)
        if type(self._dropout_layer) is keras.layers.Dropout:
            self._dropout_layer.__class__ = PackedBitsDropout

    def _masked_softmax(self, attention_scores, attention_mask=None):
        axes = self._softmax.axis
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        if attention_mask is None or len(axes) != 1:
            return super()._masked_softmax(attention_scores, attention_mask)
        # Keras's expansion: insert the heads axis (and any other missing ones) before the
        # query/key axes, e.g. [batch, T, S] -> [batch, 1, T, S].
        for _ in range(len(attention_scores.shape) - len(attention_mask.shape)):
            attention_mask = ops.expand_dims(attention_mask, -len(self._attention_axes) * 2 - 1)
        dtype = attention_scores.dtype
        # The original's -10000: exp underflows to 0 in every float dtype, yet a row with
        # every key masked keeps its scores' differences (float32's step at 1e4 is 1e-3).
        adder = ops.where(
            ops.cast(attention_mask, "bool"), ops.zeros([], dtype), ops.full([], -10000.0, dtype)
        )
        return ops.softmax(attention_scores + adder, axis=axes[0])
