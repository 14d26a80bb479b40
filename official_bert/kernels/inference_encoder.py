"""FusedInferenceEncoder: a BertEncoder's eval-mode forward as a few fused TensorFlow kernels.

The Keras encoder is written for training: each projection is its own layer (query, key and
value are three products), Keras adds a Dense bias with a separate AddV2, and the GELU carries a
hand-written gradient (an IdentityN in the graph). None of that matters for a backward pass, but
on a CPU's inference path each of those element-wise passes costs about what a fifth of the
product beside it does, and they keep TensorFlow's graph rewriter (Grappler's remapper, with the
oneDNN kernels TensorFlow uses on x86) from fusing them into the product. This module builds the
same function from plain TensorFlow ops laid out for that rewriter:

- query, key and value as ONE product with a [hidden, 3 * hidden] kernel (the three kernels side
  by side; 1/sqrt(head size) folded into the query's columns, exact when the head size is a
  power of 4, as in every released BERT);
- every bias through `tf.nn.bias_add`, so that MatMul + BiasAdd + GELU (the feed-forward's first
  product) and MatMul + BiasAdd + Add (the attention output and feed-forward output products with
  their residual) each run as one `_MklNativeFusedMatMul`;
- the padding mask as an additive -10000 on the scores (the original's form), one add;
- a LayerNorm of many tokens, where TensorFlow uses oneDNN, as the graph its remapper turns
  into one oneDNN layer normalization (_normalized_rows);
- everything on [batch * seq, hidden] matrices, so the only reshapes are around the heads;
- a small float32 model's feed-forward as two independent halves of its intermediate units
  (oneDNN runs products that small on one thread; the halves keep both cores busy).

Why not the Keras layers with these changes: a Keras Dense cannot hold a fused [H, 3H] kernel
under the checkpoint names of three, and Keras's bias add and activations are its own ops. Why
not XLA: TensorFlow's XLA:CPU runs these products through its own dot emitter, slower than the
oneDNN kernels here (bench/RESULTS.md).

With `dtype="bfloat16"` the product kernels, biases and embedding tables are stored once in
bfloat16 (half the memory to stream at every call), where the mixed_bfloat16 Keras model casts
its float32 variables at every call (at batch 1, casting ~110M weights costs about as much as
the products). LayerNorm statistics run in float32 either way, the softmax in the
compute dtype, as under mixed_bfloat16.

The weights are copied when the object is built: later training of the Keras encoder does not
reach it (build a new one). Inputs and outputs are those of BertEncoder: a dict of int32
[batch, seq] `input_word_ids`, `input_mask`, `input_type_ids` in; `sequence_output` [batch,
seq, hidden], `pooled_output` [batch, hidden] and `encoder_outputs` (one [batch, seq, hidden]
per layer) out, in the compute dtype (float32 or bfloat16). Tested equal to the Keras encoder
(tests/kernels/test_inference_encoder.py).
"""

from __future__ import annotations

import math

import keras
import numpy as np
import tensorflow as tf

_DTYPES = {"float32": tf.float32, "bfloat16": tf.bfloat16}
_INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")
# Our activation names (official_bert.activations) -> the TensorFlow op the remapper fuses into
# the intermediate product (GELU both ways) or a plain function applied after it.
_ACTIVATIONS = {
    "gelu": lambda x: tf.nn.gelu(x, approximate=True),
    "gelu_exact": lambda x: tf.nn.gelu(x, approximate=False),
    "relu": tf.nn.relu,
    "tanh": tf.math.tanh,
    "linear": tf.identity,
    "swish": tf.nn.silu,
}


def _layer_norm(
    x: tf.Tensor, gamma: tf.Tensor, beta: tf.Tensor, epsilon: float, fused_from: int | None
) -> tf.Tensor:
    """LayerNorm over the last axis of x [..., hidden]; statistics in float32, result in x's
    dtype. gamma, beta: float32 [hidden]. fused_from: the fewest elements of x for
    which the normalization is written as one FusedBatchNormV3 (_normalized_rows); None:
    never. Where the graph does not know the rows, the choice is made at run time.

    The written-out form centers first, then takes the mean of squares of the centered
    values: on a CPU this takes half the time of `tf.nn.moments` and the shift-and-scale of
    `tf.nn.batch_normalization`, which reread x in more passes (bench/RESULTS.md)."""
    dtype = x.dtype
    x = tf.cast(x, tf.float32)

    def written_out():
        centered = x - tf.reduce_mean(x, axis=-1, keepdims=True)
        variance = tf.reduce_mean(tf.square(centered), axis=-1, keepdims=True)
        return centered * (tf.math.rsqrt(variance + epsilon) * gamma) + beta

    def fused():
        return _normalized_rows(x, epsilon) * gamma + beta

    elements = x.shape.num_elements()  # None where the graph does not know the rows
    if fused_from is None:
        normalized = written_out()
    elif elements is not None:
        normalized = fused() if elements >= fused_from else written_out()
    else:
        normalized = tf.cond(tf.size(x) >= fused_from, fused, written_out)
    return tf.cast(normalized, dtype)


def _normalized_rows(x: tf.Tensor, epsilon: float) -> tf.Tensor:
    """(x - mean) / sqrt(variance + epsilon) over the last axis of float32 x [..., hidden]
    (hidden static), as FusedBatchNormV3 in training mode on x seen as [1, rows, hidden, 1]
    (NCHW: each row a channel, its statistics over its own hidden values), scale 1 and offset
    0 by Fill.

    Why this form: it is the graph Keras 2's LayerNormalization made, which TensorFlow's
    oneDNN remapper replaces, with the Mul and AddV2 of gamma and beta after it, by one
    _MklLayerNorm: from about 64k elements 2-5x faster than the written-out ops (one pass
    instead of five), below that slower (a fixed cost of about 0.15 ms a call; measured in
    bench/RESULTS.md). The rows pass through PlaceholderWithDefault so that constant folding
    cannot turn the Fills into constants when the shape is static: the remapper's pattern
    needs the Fills. The raw op, not tf.nn.fused_batch_norm: the latter raises epsilon to at
    least 1.001e-5 (for cuDNN), BERT's is 1e-12. Without oneDNN this op is several times
    slower than the written-out form (an NCHW batch norm on Eigen), so only encoders built
    where oneDNN is on use it (FusedInferenceEncoder)."""
    hidden = x.shape[-1]
    rows = tf.raw_ops.PlaceholderWithDefault(input=[tf.size(x) // hidden], shape=[1])
    empty = tf.constant([], tf.float32)
    normalized = tf.raw_ops.FusedBatchNormV3(
        x=tf.reshape(x, tf.concat([[1], rows, [hidden, 1]], axis=0)),
        scale=tf.fill(rows, 1.0),
        offset=tf.fill(rows, 0.0),
        mean=empty,
        variance=empty,
        epsilon=epsilon,
        is_training=True,
        data_format="NCHW",
    ).y
    return tf.reshape(normalized, tf.shape(x))


def _onednn_enabled() -> bool:
    """Whether this TensorFlow rewrites its graphs for oneDNN (its x86 builds unless
    TF_ENABLE_ONEDNN_OPTS=0). TensorFlow answers this only through a private module."""
    try:
        from tensorflow.python.util import _pywrap_util_port
    except ImportError:
        return False
    return bool(_pywrap_util_port.IsMklEnabled())


# The attention's small operations on a few tokens. TensorFlow's x86 build runs float32 and
# bfloat16 transposes, batched products and softmax as oneDNN primitives, each with a fixed
# set-up cost that outweighs the arithmetic on a short text's [heads, seq, seq] tensors (at 16
# tokens a layer's five such operations take longer than its QKV product). These run them on
# TensorFlow's own (Eigen) kernels instead, which the oneDNN graph rewrite leaves alone: a
# transpose of the same bits as complex64 values, BatchMatMulV3 (the rewrite takes only
# BatchMatMulV2), and the softmax written out. From a few dozen tokens on oneDNN's kernels are the
# faster ones (bench/RESULTS.md, serving_throughput.py), so only calls of at most FEW_TOKENS use
# these.
#
# Why complex64: a Transpose of any other type that is not float32, bfloat16 or half runs on the
# same Eigen kernel, but TensorFlow's oneDNN build logs a false "oneDNN supports DT_INT32 only on
# platforms with AVX-512" error for it (once per process and type, on any CPU); complex64 is not
# checked, and one value holds two float32 or four bfloat16 of the last axis, which every
# transpose here leaves in place (the head size, split in groups of values). A head size that
# does not split so (odd) moves as integers of x's width, with the log line.
_COMPLEX_BYTES = 8
_SAME_SIZE_INTEGERS = {tf.float32: tf.int32, tf.bfloat16: tf.int16}


def _transpose(x, shape, perm, few_tokens, out_shape=None) -> tf.Tensor:
    """tf.transpose(tf.reshape(x, shape), perm), reshaped to out_shape when given.

    shape: the dims to transpose (Python ints or int32 scalars), the last of them staying last in
    perm. With few_tokens, the values move on TensorFlow's own kernel as complex64 values of
    the same bits (a last dim that is a multiple of 2 for float32, 4 for bfloat16), else as
    integers of x's width.
    """
    if not few_tokens:
        moved = tf.transpose(tf.reshape(x, shape), perm)
    else:
        last = shape[-1]
        group = _COMPLEX_BYTES // x.dtype.size
        if last % group:
            bits = _SAME_SIZE_INTEGERS[x.dtype]
            moved = tf.transpose(tf.bitcast(tf.reshape(x, shape), bits), perm)
            moved = tf.bitcast(moved, x.dtype)
        else:
            grouped = tf.bitcast(tf.reshape(x, [*shape[:-1], last // group, group]), tf.complex64)
            moved = tf.bitcast(tf.transpose(grouped, perm), x.dtype)
            if out_shape is None:
                out_shape = [shape[axis] for axis in perm]
    return moved if out_shape is None else tf.reshape(moved, out_shape)


def _batch_matmul(a: tf.Tensor, b: tf.Tensor, few_tokens: bool, adj_y: bool = False) -> tf.Tensor:
    """a @ b (b transposed with adj_y) over leading batch axes, in a's dtype."""
    if not few_tokens:
        return tf.matmul(a, b, transpose_b=adj_y)
    return tf.raw_ops.BatchMatMulV3(x=a, y=b, Tout=a.dtype, adj_y=adj_y)


def _softmax(logits: tf.Tensor, few_tokens: bool) -> tf.Tensor:
    """Softmax over the last axis in logits' dtype (written out in float32 with few_tokens)."""
    if not few_tokens:
        return tf.nn.softmax(logits)
    x = tf.cast(logits, tf.float32)
    exponentials = tf.exp(x - tf.reduce_max(x, axis=-1, keepdims=True))
    return tf.cast(exponentials / tf.reduce_sum(exponentials, axis=-1, keepdims=True), logits.dtype)


class FusedInferenceEncoder(tf.Module):
    """The eval-mode forward of a built BertEncoder (module docstring), weights copied.

    encoder: a built official_bert BertEncoder (any sizes, bidirectional or causal).
    dtype: "float32" or "bfloat16", the dtype the weights are stored and multiplied in.
    transposed_kernels: store the product kernels [out, in] and multiply by their transpose
      (default: for bfloat16, where oneDNN's products read that layout 1.3-1.5x faster at
      12-128 rows and no slower at 2048, with the same results; float32 is not faster that
      way, bench/RESULTS.md). Either layout computes the same function.
    split_feed_forward: run each layer's feed-forward as two halves of its intermediate units
      (default: in float32, for models whose hidden x intermediate kernel has at most
      SPLIT_FEED_FORWARD_ELEMENTS entries; never for a single unit). The same function (the
      sum of the halves' second products is the whole product, in another order).
    """

    # The smallest static batch computed as two halves (see __call__): below it the halves'
    # products are too small to keep both cores busy on their own.
    SPLIT_BATCH = 8
    # The most tokens (batch x seq) a call may have for the attention's small operations to run
    # on TensorFlow's own kernels (see _transpose): measured crossover, 32 to 64 tokens.
    FEW_TOKENS = 32
    # The fewest elements (tokens x hidden) of a LayerNorm's input for it to run as one oneDNN
    # kernel where TensorFlow uses oneDNN (see _normalized_rows): measured crossover, 50k-100k.
    FUSED_NORM_ELEMENTS = 65536
    # The largest feed-forward kernel (hidden x intermediate entries) computed as two halves:
    # [x @ W1[:, :I/2], x @ W1[:, I/2:]] and their products with W2's rows [:I/2] and [I/2:],
    # summed. oneDNN runs a float32 product this small on one thread, so the two halves,
    # independent in the graph, run on two cores at once: all-MiniLM-L6-v2's (384 x 1536)
    # whole encoder 1.3x faster at batch 1 (12-32 tokens), 1.1x at 128 tokens, level at batch
    # 32; BERT-Base's (768 x 3072) products are threaded already (its feed-forward 4% slower in
    # halves from 512 tokens on). bfloat16 gains nothing at a few tokens and loses 9% at batch
    # 32, so it keeps whole products (bench/RESULTS.md, "Feed-forward halves").
    SPLIT_FEED_FORWARD_ELEMENTS = 1 << 20

    def __init__(
        self,
        encoder,
        dtype: str = "float32",
        name: str | None = None,
        *,
        transposed_kernels: bool | None = None,
        split_feed_forward: bool | None = None,
    ):
        super().__init__(name=name)
        if dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
        if not all(hasattr(encoder, name) for name in ("transformer_layers", "embeddings")):
            raise ValueError(
                f"FusedInferenceEncoder needs an official_bert BertEncoder, got "
                f"{type(encoder).__name__}"
            )
        if not encoder.built:
            raise ValueError("FusedInferenceEncoder needs a built encoder (call encoder.build())")
        self.compute_dtype = _DTYPES[dtype]
        self.hidden_size = encoder.hidden_size
        self.num_heads = encoder.num_attention_heads
        self.head_size = encoder.hidden_size // encoder.num_attention_heads
        self.epsilon = float(encoder.layer_norm_epsilon)
        self.causal = bool(encoder.causal)
        self.activation_name = encoder.activation
        self._activation = _ACTIVATIONS[encoder.activation]
        self.max_position_embeddings = encoder.max_position_embeddings
        # Decided when built, so that a SavedModel exported where oneDNN is off keeps the
        # written-out LayerNorm (its FusedBatchNormV3 form is slow on TensorFlow's own kernels).
        self.fused_norms = _onednn_enabled()
        # See the class docstring: [out, in] kernels by default for bfloat16 only.
        self.kernels_transposed = (
            self.compute_dtype == tf.bfloat16
            if transposed_kernels is None
            else bool(transposed_kernels)
        )

        intermediate = int(encoder.intermediate_size)
        self.split_feed_forward = intermediate >= 2 and (  # a half of no units is no use
            self.compute_dtype == tf.float32
            and self.hidden_size * intermediate <= self.SPLIT_FEED_FORWARD_ELEMENTS
            if split_feed_forward is None
            else bool(split_feed_forward)
        )
        # The intermediate units of each feed-forward part: [start, stop) pairs.
        half = intermediate // 2
        feed_forward_parts = (
            [(0, half), (half, intermediate)] if self.split_feed_forward else [(0, intermediate)]
        )

        def weight(value, name, dtype=None):
            return tf.Variable(
                np.asarray(value, np.float32),
                dtype=dtype or self.compute_dtype,
                trainable=False,
                name=name,
            )

        def numpy(variable):
            return np.asarray(keras.ops.convert_to_numpy(variable), np.float32)

        def kernel(value, name):
            """A product kernel given [in, out], stored in this encoder's layout."""
            value = np.asarray(value, np.float32)
            return weight(value.T if self.kernels_transposed else value, name)

        embeddings = encoder.embeddings
        self.word_embeddings = weight(numpy(embeddings.word_embeddings.embeddings), "word")
        self.type_embeddings = weight(numpy(embeddings.token_type_embeddings.embeddings), "type")
        self.position_embeddings = weight(numpy(embeddings.position_embeddings), "position")
        self.embedding_norm = (
            weight(numpy(embeddings.layer_norm.gamma), "embedding_gamma", tf.float32),
            weight(numpy(embeddings.layer_norm.beta), "embedding_beta", tf.float32),
        )
        query_scale = 1.0 / math.sqrt(self.head_size)
        hidden = self.hidden_size
        self.layers = []
        for index, block in enumerate(encoder.transformer_layers):
            attention = block.attention
            parts = [
                (attention._query_dense, query_scale),
                (attention._key_dense, 1.0),
                (attention._value_dense, 1.0),
            ]
            qkv_kernel = np.concatenate(
                [numpy(dense.kernel).reshape(hidden, hidden) * scale for dense, scale in parts], 1
            )
            qkv_bias = np.concatenate(
                [numpy(dense.bias).reshape(hidden) * scale for dense, scale in parts]
            )
            output = attention._output_dense
            intermediate_kernel = numpy(block.intermediate_dense.kernel)
            intermediate_bias = numpy(block.intermediate_dense.bias)
            output_kernel = numpy(block.output_dense.kernel)
            prefix = f"layer_{index}"
            self.layers.append(
                dict(
                    qkv_kernel=kernel(qkv_kernel, f"{prefix}/qkv_kernel"),
                    qkv_bias=weight(qkv_bias, f"{prefix}/qkv_bias"),
                    attention_kernel=kernel(
                        numpy(output.kernel).reshape(hidden, hidden), f"{prefix}/attention_kernel"
                    ),
                    attention_bias=weight(numpy(output.bias), f"{prefix}/attention_bias"),
                    attention_gamma=weight(
                        numpy(block.attention_layer_norm.gamma), f"{prefix}/ln1_gamma", tf.float32
                    ),
                    attention_beta=weight(
                        numpy(block.attention_layer_norm.beta), f"{prefix}/ln1_beta", tf.float32
                    ),
                    # One entry per feed-forward part (see split_feed_forward): the first
                    # product's output columns and the second's input rows of those units.
                    intermediate_kernels=[
                        kernel(
                            intermediate_kernel[:, start:stop], f"{prefix}/intermediate_kernel_{i}"
                        )
                        for i, (start, stop) in enumerate(feed_forward_parts)
                    ],
                    intermediate_biases=[
                        weight(intermediate_bias[start:stop], f"{prefix}/intermediate_bias_{i}")
                        for i, (start, stop) in enumerate(feed_forward_parts)
                    ],
                    output_kernels=[
                        kernel(output_kernel[start:stop], f"{prefix}/out_kernel_{i}")
                        for i, (start, stop) in enumerate(feed_forward_parts)
                    ],
                    output_bias=weight(numpy(block.output_dense.bias), f"{prefix}/out_bias"),
                    output_gamma=weight(
                        numpy(block.output_layer_norm.gamma), f"{prefix}/ln2_gamma", tf.float32
                    ),
                    output_beta=weight(
                        numpy(block.output_layer_norm.beta), f"{prefix}/ln2_beta", tf.float32
                    ),
                )
            )
        self.pooler_kernel = kernel(numpy(encoder.pooler.kernel), "pooler_kernel")
        self.pooler_bias = weight(numpy(encoder.pooler.bias), "pooler_bias")

    def _dense(self, x: tf.Tensor, kernel: tf.Tensor, bias: tf.Tensor) -> tf.Tensor:
        """x [rows, in] @ kernel + bias -> [rows, out], kernel in this encoder's layout
        (kernels_transposed: [out, in]); `tf.nn.bias_add` so that the graph rewriter fuses the
        bias (and an activation or residual add after it) into the product."""
        return tf.nn.bias_add(tf.matmul(x, kernel, transpose_b=self.kernels_transposed), bias)

    def _output_columns(self, kernel: tf.Tensor, start: int, stop: int | None = None):
        """The kernel of output columns [start, stop) of `kernel`, in its layout."""
        return kernel[start:stop] if self.kernels_transposed else kernel[:, start:stop]

    def _attention_bias(self, input_mask: tf.Tensor) -> tf.Tensor:
        """[batch, 1, 1 or seq, seq] in the compute dtype: 0 where a query may attend, -10000
        elsewhere (the original's adder: exp underflows to 0, yet a row with every key masked
        keeps its scores' differences, as the Keras encoder)."""
        keep = tf.cast(input_mask, tf.float32)[:, None, None, :]
        if self.causal:
            seq = tf.shape(input_mask)[1]
            lower = tf.linalg.band_part(tf.ones([seq, seq], tf.float32), -1, 0)
            keep = keep * lower[None, None, :, :]
        return tf.cast((1.0 - keep) * -10000.0, self.compute_dtype)

    def _block(self, x, weights, batch, seq, attention_bias, few_tokens, query_positions=None):
        """x [batch * seq, hidden] -> the same, one transformer layer; with query_positions
        (int32 [batch, rows]) only those rows are queries: -> [batch * rows, hidden].
        few_tokens: run the attention's small operations as for a call of few tokens."""
        heads, size, hidden = self.num_heads, self.head_size, self.hidden_size
        kernel, bias = weights["qkv_kernel"], weights["qkv_bias"]
        if query_positions is None:
            rows, residual = seq, x
            qkv = self._dense(x, kernel, bias)
            # [batch, seq, 3, heads, size] -> [3, batch, heads, seq, size]
            qkv = _transpose(qkv, [batch, seq, 3, heads, size], [2, 0, 3, 1, 4], few_tokens)
            query, key, value = qkv[0], qkv[1], qkv[2]
        else:
            rows = query_positions.shape[1]
            if rows is None:
                rows = tf.shape(query_positions)[1]
            residual = tf.reshape(
                tf.gather(tf.reshape(x, [batch, seq, hidden]), query_positions, batch_dims=1),
                [batch * rows, hidden],
            )
            query = self._dense(residual, self._output_columns(kernel, 0, hidden), bias[:hidden])
            query = _transpose(query, [batch, rows, heads, size], [0, 2, 1, 3], few_tokens)
            key_value = self._dense(x, self._output_columns(kernel, hidden), bias[hidden:])
            key_value = _transpose(
                key_value, [batch, seq, 2, heads, size], [2, 0, 3, 1, 4], few_tokens
            )
            key, value = key_value[0], key_value[1]
            if self.causal:  # [batch, 1, seq, seq]: the query rows' own masks
                attention_bias = tf.gather(attention_bias[:, 0], query_positions, batch_dims=1)[
                    :, None
                ]
        # [batch, heads, rows, seq]
        scores = _batch_matmul(query, key, few_tokens, adj_y=True)
        probabilities = _softmax(scores + attention_bias, few_tokens)
        context = _batch_matmul(probabilities, value, few_tokens)  # [batch, heads, rows, size]
        context = _transpose(
            context, [batch, heads, rows, size], [0, 2, 1, 3], few_tokens, [batch * rows, hidden]
        )
        attention = self._dense(context, weights["attention_kernel"], weights["attention_bias"])
        fused_from = self._fused_norm_from(few_tokens)
        x = _layer_norm(
            attention + residual,
            weights["attention_gamma"],
            weights["attention_beta"],
            self.epsilon,
            fused_from,
        )
        # The feed-forward, in one part or two independent halves (split_feed_forward): the
        # first part's second product carries the output bias and the residual (one fused
        # kernel), the other's is added to it.
        output = None
        parts = zip(
            weights["intermediate_kernels"],
            weights["intermediate_biases"],
            weights["output_kernels"],
            strict=True,
        )
        for intermediate_kernel, intermediate_bias, output_kernel in parts:
            intermediate = self._activation(self._dense(x, intermediate_kernel, intermediate_bias))
            if output is None:
                output = self._dense(intermediate, output_kernel, weights["output_bias"]) + x
            else:
                output += tf.matmul(
                    intermediate, output_kernel, transpose_b=self.kernels_transposed
                )
        return _layer_norm(
            output, weights["output_gamma"], weights["output_beta"], self.epsilon, fused_from
        )

    def _fused_norm_from(self, few_tokens: bool) -> int | None:
        """_layer_norm's fused_from: None (written out) where oneDNN is off or for a call of
        few tokens (at most FEW_TOKENS x hidden elements, far below the crossover)."""
        if few_tokens or not self.fused_norms:
            return None
        return self.FUSED_NORM_ELEMENTS

    # Not converted by AutoGraph: Python branches on static things only (the run-time batch
    # choice is an explicit tf.cond), and converting this call tree costs ~1 s per process.
    @tf.autograph.experimental.do_not_convert
    def __call__(self, inputs: dict, training: bool | None = None, output_positions=None) -> dict:
        """inputs: BertEncoder's dict; `training` is accepted as BertEncoder's, and must be
        false: there is no dropout here. output_positions: as BertEncoder's (int [batch,
        num_positions]; the last layer runs at [CLS] and these rows only, `sequence_output` is
        [batch, num_positions, hidden_size]; [batch, 0] for a head on `pooled_output` alone).

        A batch of at least SPLIT_BATCH rows runs as two independent halves, joined at the end:
        with two chains in the graph TensorFlow's inter-op scheduler runs one half's softmax,
        LayerNorm and head transposes beside the other half's products instead of between
        them (measured in bench/RESULTS.md, encoder_latency.py). A batch whose size the graph
        does not know (a serving signature's) chooses at run time, with both chains in the
        graph. Same values: every row is computed alone. A call of at most FEW_TOKENS tokens
        runs its attention's small operations on TensorFlow's own kernels (see _transpose);
        where the graph does not know the batch or the length, that too is chosen at run
        time."""
        if training:
            raise ValueError("FusedInferenceEncoder is eval-only (no dropout): training=True")
        inputs = {name: tf.convert_to_tensor(inputs[name]) for name in _INPUT_NAMES}
        if output_positions is not None:
            inputs["output_positions"] = tf.cast(output_positions, tf.int32)
        batch, seq = inputs["input_word_ids"].shape
        if batch is not None and batch >= self.SPLIT_BATCH:
            return self._forward_in_halves(inputs, batch // 2)
        if batch is not None and seq is not None:
            return self._forward(inputs, few_tokens=batch * seq <= self.FEW_TOKENS)
        shape = tf.shape(inputs["input_word_ids"])

        def unsplit():
            return tf.cond(
                shape[0] * shape[1] <= self.FEW_TOKENS,
                lambda: self._forward(inputs, few_tokens=True),
                lambda: self._forward(inputs, few_tokens=False),
            )

        if batch is not None:
            return unsplit()
        return tf.cond(
            shape[0] >= self.SPLIT_BATCH,
            lambda: self._forward_in_halves(inputs, shape[0] // 2),
            unsplit,
        )

    def _forward_in_halves(self, inputs: dict, half) -> dict:
        """_forward on rows [:half] and [half:] as two chains, outputs joined."""
        first = self._forward({k: v[:half] for k, v in inputs.items()}, few_tokens=False)
        second = self._forward({k: v[half:] for k, v in inputs.items()}, few_tokens=False)
        return tf.nest.map_structure(lambda a, b: tf.concat([a, b], 0), first, second)

    def _forward(self, inputs: dict, few_tokens: bool) -> dict:
        """__call__ on one chain (inputs: the encoder's, and `output_positions` if given);
        few_tokens: as _block's."""
        word_ids = inputs["input_word_ids"]
        # Static sizes where the caller's shapes have them: the graph rewriter fuses only
        # products whose operand shapes it knows.
        shape = tf.shape(word_ids)
        batch = word_ids.shape[0] if word_ids.shape[0] is not None else shape[0]
        seq = word_ids.shape[1] if word_ids.shape[1] is not None else shape[1]
        static_seq = word_ids.shape[1]
        if static_seq is not None and static_seq > self.max_position_embeddings:
            raise ValueError(
                f"sequence length {static_seq} is longer than max_position_embeddings "
                f"({self.max_position_embeddings}) of this model"
            )
        embeddings = (
            tf.gather(self.word_embeddings, word_ids)
            + tf.gather(self.type_embeddings, inputs["input_type_ids"])
            + self.position_embeddings[:seq][None]
        )
        # Normalized before the reshape to rows: TensorFlow's remapper fuses a LayerNorm only
        # where its input and output shapes agree, and it folds the two reshapes into one.
        embeddings = _layer_norm(
            embeddings, *self.embedding_norm, self.epsilon, self._fused_norm_from(few_tokens)
        )
        x = tf.reshape(embeddings, [batch * seq, self.hidden_size])
        attention_bias = self._attention_bias(inputs["input_mask"])
        encoder_outputs = []
        *lower_layers, last_layer = self.layers
        for weights in lower_layers:
            x = self._block(x, weights, batch, seq, attention_bias, few_tokens)
            encoder_outputs.append(tf.reshape(x, [batch, seq, self.hidden_size]))
        if "output_positions" in inputs:
            positions = inputs["output_positions"]
            # [CLS] first, for the pooler: [batch, 1 + num_positions].
            cls = tf.zeros([tf.shape(positions)[0], 1], tf.int32)
            positions = tf.concat([cls, positions], axis=1)
            x = self._block(x, last_layer, batch, seq, attention_bias, few_tokens, positions)
            last = tf.reshape(x, [batch, -1, self.hidden_size])
            cls, sequence_output = last[:, 0, :], last[:, 1:, :]
        else:
            x = self._block(x, last_layer, batch, seq, attention_bias, few_tokens)
            sequence_output = tf.reshape(x, [batch, seq, self.hidden_size])
            cls = sequence_output[:, 0, :]
        encoder_outputs.append(sequence_output)
        pooled_output = tf.math.tanh(self._dense(cls, self.pooler_kernel, self.pooler_bias))
        return {
            "sequence_output": sequence_output,
            "pooled_output": pooled_output,
            "encoder_outputs": encoder_outputs,
        }
