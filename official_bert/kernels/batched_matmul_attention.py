"""BatchedMatmulAttention: Keras multi-head attention with cheaper projections, products, mask
and dropout (a speed path: the plain twin is official_bert.layers.SelfAttention)."""

import keras
import tensorflow as tf
from keras import ops

from official_bert.kernels.folded_einsum_dense import FoldedEinsumDense
from official_bert.kernels.packed_bits_dropout import PackedBitsDropout


@keras.saving.register_keras_serializable(package="official_bert")
class BatchedMatmulAttention(keras.layers.MultiHeadAttention):
    """`keras.layers.MultiHeadAttention` whose heads' products are batched MatMuls.

    Weights, their names and checkpoint keys, config and results (to float rounding) are
    Keras's, so are those of the plain SelfAttention; four parts of the computation are cheaper
    on a CPU (figures: bench/RESULTS.md). This class overrides private methods of
    MultiHeadAttention (`_build_attention`, `_compute_attention`, `_masked_softmax`), which is
    why it lives apart from the plain layers; where the Keras it runs on lacks the attributes it
    relies on, or the attention is not BERT's (other attention axes, flash attention, a causal
    mask asked of the layer), it takes Keras's path.

    - The two products of the heads (scores = query . key, context = probabilities . value) are
      batched MatMuls on [batch, heads, seq, head_size] operands, transposed once each, where
      Keras's einsums ("aecd,abcd->acbe", "acbe,aecd->abcd") go through TensorFlow's einsum and
      its broadcast BatchMatMul.
    - The query, key, value and output projections become FoldedEinsumDense after Keras builds
      them (so weights, names and checkpoints are Keras's): one 2-D MatMul each.
    - The dropout Keras creates in `_build_attention` becomes PackedBitsDropout: switching that
      object's class keeps its seed generator and its place in the layer (a second Dropout
      would leave the first's seed behind as an orphan); PackedBitsDropout adds no state. The
      probabilities [batch, heads, seq, seq] are the largest tensor dropout touches in a BERT
      layer, so this is where the cheaper mask pays most.
    - Masked positions get -10000 *added* to their scores before a plain softmax (as the
      original BERT), where Keras selects -1e9 in with `where` and zeros in again after the
      softmax: two passes over [batch, heads, seq, seq] forward and two backward that the
      addition does not need. The probabilities are the same (exp underflows to exactly 0 at
      masked positions) except in a row where every key is masked: Keras gives zeros, the
      addition (as the original) about the softmax of the unmasked scores. BERT's masks never
      do that: the first position is always visible.

    Call arguments and returns: as `keras.layers.MultiHeadAttention`.
    """

    # Keras's equations for [batch, seq, heads, head_size] projections and attention over axis 1.
    _HEADS_EQUATIONS = ("aecd,abcd->acbe", "acbe,aecd->abcd")

    def build(self, query_shape, value_shape, key_shape=None):
        super().build(query_shape, value_shape, key_shape)
        for name in ("_query_dense", "_key_dense", "_value_dense", "_output_dense"):
            dense = getattr(self, name, None)
            if type(dense) is keras.layers.EinsumDense:
                dense.__class__ = FoldedEinsumDense

    def _build_attention(self, rank):
        super()._build_attention(rank)
        if type(getattr(self, "_dropout_layer", None)) is keras.layers.Dropout:
            self._dropout_layer.__class__ = PackedBitsDropout

    def _takes_keras_path(self, use_causal_mask) -> bool:
        equations = (
            getattr(self, "_dot_product_equation", None),
            getattr(self, "_combine_equation", None),
        )
        return (
            use_causal_mask
            or getattr(self, "_flash_attention", False)
            or equations != self._HEADS_EQUATIONS
            or not hasattr(self, "_inverse_sqrt_key_dim")
        )

    def _compute_attention(
        self,
        query,
        key,
        value,
        attention_mask=None,
        training=None,
        return_attention_scores=False,
        **keras_arguments,
    ):
        """query [batch, T, heads, key_dim], key [batch, S, heads, key_dim], value [batch, S,
        heads, value_dim] -> ([batch, T, heads, value_dim], probabilities [batch, heads, T, S]),
        in the compute dtype; attention_mask bool [batch, T, S] or None.

        keras_arguments: what this Keras release passes beyond these, handed back as is
        (`use_causal_mask` in 3.15; in 3.12 the causal mask arrives inside attention_mask).
        """
        if self._takes_keras_path(keras_arguments.get("use_causal_mask", False)):
            return super()._compute_attention(
                query,
                key,
                value,
                attention_mask=attention_mask,
                training=training,
                return_attention_scores=return_attention_scores,
                **keras_arguments,
            )
        query = ops.multiply(query, ops.cast(self._inverse_sqrt_key_dim, query.dtype))
        heads_first = [0, 2, 1, 3]  # [batch, seq, heads, size] <-> [batch, heads, seq, size]
        scores = tf.matmul(
            tf.transpose(query, heads_first), tf.transpose(key, heads_first), transpose_b=True
        )
        probabilities = self._masked_softmax(scores, attention_mask)
        dropped = probabilities
        if self._dropout > 0.0:
            dropped = self._dropout_layer(probabilities, training=training)
        context = tf.matmul(dropped, tf.transpose(value, heads_first))
        return tf.transpose(context, heads_first), probabilities

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
