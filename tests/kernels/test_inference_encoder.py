"""FusedInferenceEncoder against its plain twin, the Keras BertEncoder in eval mode: every
output (sequence, pooled, each layer), with padding, causal masks and each activation; the
bfloat16 path against the mixed_bfloat16 Keras encoder; real MiniLM weights."""

import functools

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert.kernels import FusedInferenceEncoder, fast_kernels
from official_bert.kernels.inference_encoder import _layer_norm
from official_bert.models import BertEncoder
from tests.conftest import random_inputs, tiny_encoder_kwargs


def _encoder(dtype="float32", seed=3, **overrides):
    """A built tiny encoder whose every weight (biases and LayerNorm betas included, which
    Keras initializes to 0 and 1) is random, so that a misplaced bias or scale shows."""
    encoder = BertEncoder(**tiny_encoder_kwargs(**overrides), dtype=dtype)
    encoder.build()
    rng = np.random.default_rng(seed)
    for variable in encoder.weights:
        scale = 0.5 if "gamma" in variable.path or "beta" in variable.path else 0.2
        base = 1.0 if "gamma" in variable.path else 0.0
        variable.assign(base + scale * rng.standard_normal(variable.shape).astype(np.float32))
    return encoder


def _float32(tensor):
    return tf.cast(tensor, tf.float32).numpy()


def _assert_outputs_close(fused_outputs, keras_outputs, atol, rtol=0.0):
    np.testing.assert_allclose(
        _float32(fused_outputs["sequence_output"]),
        _float32(keras_outputs["sequence_output"]),
        atol=atol,
        rtol=rtol,
    )
    np.testing.assert_allclose(
        _float32(fused_outputs["pooled_output"]),
        _float32(keras_outputs["pooled_output"]),
        atol=atol,
        rtol=rtol,
    )
    assert len(fused_outputs["encoder_outputs"]) == len(keras_outputs["encoder_outputs"])
    for ours, theirs in zip(
        fused_outputs["encoder_outputs"], keras_outputs["encoder_outputs"], strict=True
    ):
        np.testing.assert_allclose(_float32(ours), _float32(theirs), atol=atol, rtol=rtol)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"activation": "gelu_exact"},
        {"activation": "relu"},
        {"causal": True},
        # head size 6: the query scale 1/sqrt(6) is not a power of two (rounded differently)
        {"hidden_size": 24, "num_attention_heads": 4, "intermediate_size": 40},
    ],
    ids=["gelu", "gelu_exact", "relu", "causal", "head_size_6"],
)
@pytest.mark.parametrize("fast", [False, True], ids=["plain", "fast_kernels"])
def test_float32_outputs_equal_the_keras_encoder(overrides, fast):
    with fast_kernels(fast):
        encoder = _encoder(**overrides)
    inputs = random_inputs(batch=4, seq=16, vocab=100)
    if fast:
        # A row with every key masked (a padding row of a batch): the fast attention and the
        # fused encoder keep its scores' differences, as the original's adder; Keras's softmax
        # zeroes such a row, so the plain twin differs there by design.
        inputs["input_mask"][3] = 0
    expected = encoder(inputs, training=False)
    fused = FusedInferenceEncoder(encoder)
    # Rows of real tokens agree to float32 rounding; the all-masked row, whose LayerNorm inputs
    # are nearly constant, magnifies the feed-forward halves' other order of summation.
    atol = 1e-4 if fast else 2e-5
    eager = fused(inputs)
    _assert_outputs_close(eager, expected, atol=atol)
    _assert_outputs_close(_rows(eager, 3), _rows(expected, 3), atol=2e-5)
    # The same in a graph whose batch and length are unknown when it is traced (serving).
    spec = {name: tf.TensorSpec([None, None], tf.int32) for name in inputs}
    graph_call = tf.function(fused.__call__, input_signature=[spec])
    _assert_outputs_close(graph_call(inputs), expected, atol=atol)


def _rows(outputs: dict, count: int) -> dict:
    """The encoder outputs of the batch's first `count` rows."""
    return {
        "sequence_output": outputs["sequence_output"][:count],
        "pooled_output": outputs["pooled_output"][:count],
        "encoder_outputs": [layer[:count] for layer in outputs["encoder_outputs"]],
    }


@pytest.mark.parametrize("batch", [8, 11])
def test_a_large_static_batch_runs_as_two_halves_with_the_same_outputs(batch):
    """From SPLIT_BATCH rows on, a batch of static size is two chains (uneven for an odd
    batch); each row's outputs are those of the Keras encoder and of one chain."""
    with fast_kernels(True):
        encoder = _encoder()
    inputs = random_inputs(batch=batch, seq=16, vocab=100)
    inputs["input_mask"][batch // 2 - 1, 5:] = 0  # padding on both sides of the split
    inputs["input_mask"][batch // 2, 9:] = 0
    inputs["input_type_ids"][batch // 2 :, 8:] = 1
    fused = FusedInferenceEncoder(encoder)
    assert batch >= fused.SPLIT_BATCH
    spec = {name: tf.TensorSpec([batch, 16], tf.int32) for name in inputs}
    split_call = tf.function(fused.__call__, input_signature=[spec])
    graph = split_call.get_concrete_function().graph
    # Two chains: each of the encoder's products is in the graph twice.
    qkv_products = [op for op in graph.get_operations() if op.type == "MatMul"]
    assert len(qkv_products) == 2 * _products_of_one_chain(fused)
    outputs = split_call(inputs)
    _assert_outputs_close(outputs, encoder(inputs, training=False), atol=2e-5)
    fused.SPLIT_BATCH = batch + 1  # the same batch as one chain (products blocked otherwise)
    _assert_outputs_close(outputs, fused(inputs), atol=1e-5)


def _products_of_one_chain(fused) -> int:
    """MatMuls of one chain: per layer QKV, attention output and two per feed-forward part;
    the pooler."""
    parts = len(fused.layers[0]["intermediate_kernels"])
    return (2 + 2 * parts) * len(fused.layers) + 1


def _branch_products(graph) -> list:
    """For each If op of a traced graph that holds products (its branch functions looked up
    in the graph's library, nested Ifs followed; the LayerNorms' Ifs hold none):
    [(MatMul count, BatchMatMulV2 count, BatchMatMulV3 count)] of its then and else branches,
    in the order the Ifs are met."""
    library = {f.signature.name: f for f in graph.as_graph_def().library.function}
    found = []

    def walk(nodes):
        for node in nodes:
            if node.op in ("If", "StatelessIf"):
                counts = []
                for branch in ("then_branch", "else_branch"):
                    body = library[node.attr[branch].func.name].node_def
                    counts.append(
                        tuple(
                            sum(n.op == op for n in body)
                            for op in ("MatMul", "BatchMatMulV2", "BatchMatMulV3")
                        )
                    )
                if any(any(branch) for branch in counts):
                    found.append(counts)
                for branch in ("then_branch", "else_branch"):
                    walk(library[node.attr[branch].func.name].node_def)

    walk(graph.as_graph_def().node)
    return found


def test_a_call_of_unknown_shape_chooses_its_path_when_it_runs():
    """A serving signature's batch and length (None when traced): the halves, one chain and
    one chain of few tokens are all in the graph, the call's shape picks one at run time, and
    the outputs equal the Keras encoder's whichever runs."""
    with fast_kernels(True):
        encoder = _encoder()
    fused = FusedInferenceEncoder(encoder)
    names = ("input_word_ids", "input_mask", "input_type_ids")
    spec = {name: tf.TensorSpec([None, None], tf.int32) for name in names}
    serve = tf.function(fused.__call__, input_signature=[spec])
    chain = _products_of_one_chain(fused)
    attention = 2 * len(fused.layers)  # batched products of one chain
    assert _branch_products(serve.get_concrete_function().graph) == [
        # halves (two chains of oneDNN's batched products) or one chain
        [(2 * chain, 2 * attention, 0), (0, 0, 0)],
        # one chain: few tokens (Eigen's batched products) or more
        [(chain, 0, attention), (chain, attention, 0)],
    ]
    few_rows = fused.FEW_TOKENS // 16
    for batch in (fused.SPLIT_BATCH + 3, fused.SPLIT_BATCH - 1, few_rows, 1):
        inputs = random_inputs(batch=batch, seq=16, vocab=100)
        inputs["input_mask"][batch // 2, 9:] = 0
        _assert_outputs_close(serve(inputs), encoder(inputs, training=False), atol=2e-5)


@pytest.mark.parametrize(
    "overrides, moved_as",
    [
        ({}, tf.complex64),
        ({"causal": True}, tf.complex64),
        ({"hidden_size": 24, "num_attention_heads": 4, "intermediate_size": 40}, tf.complex64),
        ({"hidden_size": 21, "num_attention_heads": 3, "intermediate_size": 40}, tf.int32),
    ],
    ids=["gelu", "causal", "head_size_6", "head_size_7"],
)
def test_few_tokens_run_the_attention_on_tensorflows_own_kernels_with_the_same_outputs(
    overrides, moved_as
):
    """At most FEW_TOKENS tokens: the attention's transposes, batched products and softmax
    run as transposes of complex64 values of the same bits (integers for an odd head size),
    BatchMatMulV3 and written-out softmax (TensorFlow's own kernels); the outputs are the
    Keras encoder's, and those of the oneDNN path. (An integer transpose gets a false oneDNN
    error line in the log, so complex64 where the head size allows it.)"""
    with fast_kernels(True):
        encoder = _encoder(**overrides)
    fused = FusedInferenceEncoder(encoder)
    seq = 16
    batch = fused.FEW_TOKENS // seq
    inputs = random_inputs(batch=batch, seq=seq, vocab=100)  # row 1 padded
    spec = {name: tf.TensorSpec([batch, seq], tf.int32) for name in inputs}
    few_call = tf.function(fused.__call__, input_signature=[spec])
    operations = few_call.get_concrete_function().graph.get_operations()
    op_types = [op.type for op in operations]
    assert op_types.count("BatchMatMulV3") == 2 * len(fused.layers)
    assert "BatchMatMulV2" not in op_types and "Softmax" not in op_types
    transposes = [op for op in operations if op.type == "Transpose"]
    assert transposes and all(op.get_attr("T") == moved_as for op in transposes)
    outputs = few_call(inputs)
    _assert_outputs_close(outputs, encoder(inputs, training=False), atol=2e-5)
    # One more row: past FEW_TOKENS, oneDNN's kernels; the shared rows' outputs agree.
    more = random_inputs(batch=batch + 1, seq=seq, vocab=100)
    more_call = tf.function(fused.__call__)
    graph = more_call.get_concrete_function(
        {name: tf.TensorSpec([batch + 1, seq], tf.int32) for name in more}
    ).graph
    assert "BatchMatMulV3" not in [op.type for op in graph.get_operations()]
    np.testing.assert_allclose(
        more_call(more)["sequence_output"].numpy()[:batch],
        outputs["sequence_output"].numpy(),
        atol=1e-5,
    )


def test_few_tokens_in_bfloat16_match_the_onednn_path_and_mixed_bfloat16():
    encoder = _encoder()
    mixed = _encoder(dtype="mixed_bfloat16")
    mixed.set_weights(encoder.get_weights())
    fused = FusedInferenceEncoder(encoder, dtype="bfloat16")
    inputs = random_inputs(batch=2, seq=16)
    assert 2 * 16 <= fused.FEW_TOKENS
    few = fused(inputs)
    assert few["sequence_output"].dtype == tf.bfloat16
    _assert_outputs_close(few, mixed(inputs, training=False), atol=0.1, rtol=0.05)
    fused.FEW_TOKENS = 0  # the same call on oneDNN's kernels
    _assert_outputs_close(few, fused(inputs), atol=0.05, rtol=0.02)


def _positions_graph_call(fused, batch):
    """`fused` called with output_positions in a graph of batch `batch` (None: unknown) and
    unknown length."""
    names = ("input_word_ids", "input_mask", "input_type_ids")
    spec = {name: tf.TensorSpec([batch, None], tf.int32) for name in names}
    positions_spec = tf.TensorSpec([batch, None], tf.int32)
    return tf.function(
        lambda x, p: fused(x, output_positions=p), input_signature=[spec, positions_spec]
    )


@functools.cache
def _positions_encoders(causal):
    """(fast-kernel encoder, its FusedInferenceEncoder, the latter's unknown-batch graph call
    with output_positions) of one `causal`, shared by the batches of
    test_output_positions_equal_the_keras_encoders: the unknown-batch graph holds every path,
    so one trace of it serves each batch, whichever path the batch takes."""
    with fast_kernels(True):
        encoder = _encoder(causal=causal)
    fused = FusedInferenceEncoder(encoder)
    return encoder, fused, _positions_graph_call(fused, None)


@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
@pytest.mark.parametrize("batch", [1, 3, 9], ids=["few_tokens", "one_chain", "halves"])
def test_output_positions_equal_the_keras_encoders(causal, batch):
    """As BertEncoder's `output_positions`: the last layer at [CLS] and those rows only, in
    eager, static and unknown-batch graphs; [batch, 0] leaves `pooled_output` alone."""
    encoder, fused, unknown_batch_call = _positions_encoders(causal)
    inputs = random_inputs(batch=batch, seq=16, vocab=100)
    rng = np.random.default_rng(1)
    positions = rng.integers(0, 16, (batch, 3)).astype(np.int32)
    positions[0] = [5, 5, 0]  # repeats and a padding slot
    expected = encoder(inputs, training=False, output_positions=positions)
    full = encoder(inputs, training=False)
    for graph_call in (_positions_graph_call(fused, batch), unknown_batch_call):
        outputs = graph_call(inputs, positions)
        assert outputs["sequence_output"].shape == (batch, 3, 32)
        _assert_outputs_close(outputs, expected, atol=2e-5)
        cls_only = graph_call(inputs, np.zeros((batch, 0), np.int32))
        assert cls_only["sequence_output"].shape == (batch, 0, 32)
        np.testing.assert_allclose(
            _float32(cls_only["pooled_output"]), _float32(full["pooled_output"]), atol=2e-5
        )
    _assert_outputs_close(fused(inputs, output_positions=positions), expected, atol=2e-5)


def _layer_norm_float64(x, gamma, beta, epsilon):
    x = np.asarray(x, np.float64)
    centered = x - x.mean(axis=-1, keepdims=True)
    variance = (centered**2).mean(axis=-1, keepdims=True)
    return centered / np.sqrt(variance + epsilon) * gamma + beta


@pytest.mark.parametrize("shape", [[300, 64], [6, 50, 64]])
@pytest.mark.parametrize("remapping", [True, False], ids=["remapped", "as_written"])
def test_a_fused_layer_norm_equals_the_written_out_one(shape, remapping):
    """_layer_norm as FusedBatchNormV3 (which TensorFlow's oneDNN remapper turns into one
    _MklLayerNorm, and which runs as written with remapping off) and written out: the same
    values, against float64, BERT's epsilon of 1e-12 kept (tf.nn.fused_batch_norm would raise
    it to 1e-5: rows of variance 1e-6 show that), for static shapes and unknown rows."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    x[..., :20, :] *= 1e-3  # small-variance rows
    gamma = (1.0 + 0.5 * rng.standard_normal(shape[-1])).astype(np.float32)
    beta = (0.5 * rng.standard_normal(shape[-1])).astype(np.float32)
    expected = _layer_norm_float64(x, gamma, beta, 1e-12)
    previous = tf.config.optimizer.get_experimental_options()
    tf.config.optimizer.set_experimental_options({"remapping": remapping})
    try:
        for fused_from in (None, 0, x.size + 1):
            for spec_shape in (shape, [None] * (len(shape) - 1) + shape[-1:]):

                def layer_norm(x, fused_from=fused_from):
                    return _layer_norm(x, gamma, beta, 1e-12, fused_from)

                norm = tf.function(
                    layer_norm, input_signature=[tf.TensorSpec(spec_shape, tf.float32)]
                )
                graph = norm.get_concrete_function().graph
                # Static: the form chosen when traced; unknown rows: both forms, in the
                # branches of an If, chosen when run.
                unknown = spec_shape[0] is None
                in_graph = _fused_batch_norm_count(graph) > 0
                assert in_graph == (fused_from is not None if unknown else fused_from == 0)
                op_types = [op.type for op in graph.get_operations()]
                assert ("StatelessIf" in op_types) == (fused_from is not None and unknown)
                np.testing.assert_allclose(norm(x).numpy(), expected, atol=2e-5, rtol=1e-5)
    finally:
        tf.config.optimizer.set_experimental_options(previous)


def _fused_batch_norm_count(graph) -> int:
    """FusedBatchNormV3 ops in a traced graph and in its If branches (the library)."""
    library = graph.as_graph_def().library.function
    nodes = list(graph.as_graph_def().node) + [n for f in library for n in f.node_def]
    return sum(node.op == "FusedBatchNormV3" for node in nodes)


def test_layer_norms_of_many_tokens_run_fused_with_the_same_outputs():
    """From FUSED_NORM_ELEMENTS on (0 here: every LayerNorm of a chain that is not few
    tokens), the encoder's LayerNorms are FusedBatchNormV3 graphs; outputs stay the Keras
    encoder's, in eager, static (one chain and halves) and unknown-shape graphs. Where
    TensorFlow does not use oneDNN (fused_norms False) none is."""
    with fast_kernels(True):
        encoder = _encoder()
    fused = FusedInferenceEncoder(encoder)
    fused.FUSED_NORM_ELEMENTS = 0
    fused.fused_norms = True  # as where oneDNN is on (this test runs on any build)
    norms = 2 * len(fused.layers) + 1  # of one chain
    names = ("input_word_ids", "input_mask", "input_type_ids")
    for batch in (3, fused.SPLIT_BATCH + 1):
        inputs = random_inputs(batch=batch, seq=16, vocab=100)
        inputs["input_mask"][batch // 2, 9:] = 0
        expected = encoder(inputs, training=False)
        _assert_outputs_close(fused(inputs), expected, atol=2e-5)
        static = tf.function(
            fused.__call__,
            input_signature=[{name: tf.TensorSpec([batch, 16], tf.int32) for name in names}],
        )
        chains = 2 if batch >= fused.SPLIT_BATCH else 1
        assert _fused_batch_norm_count(static.get_concrete_function().graph) == chains * norms
        _assert_outputs_close(static(inputs), expected, atol=2e-5)
    serve = tf.function(
        fused.__call__,
        input_signature=[{name: tf.TensorSpec([None, None], tf.int32) for name in names}],
    )
    # Halves (two chains) and one chain of more than FEW_TOKENS; none in the few-token chain.
    assert _fused_batch_norm_count(serve.get_concrete_function().graph) == 3 * norms
    for batch in (fused.SPLIT_BATCH + 3, 3, 1):
        inputs = random_inputs(batch=batch, seq=16, vocab=100)
        _assert_outputs_close(serve(inputs), encoder(inputs, training=False), atol=2e-5)
    fused.fused_norms = False
    static = tf.function(fused.__call__)
    graph = static.get_concrete_function(
        {name: tf.TensorSpec([3, 16], tf.int32) for name in names}
    ).graph
    assert _fused_batch_norm_count(graph) == 0


def test_weights_are_a_copy_taken_when_built():
    encoder = _encoder()
    inputs = random_inputs(batch=2, seq=8)
    fused = FusedInferenceEncoder(encoder)
    before = fused(inputs)["sequence_output"].numpy()
    encoder.transformer_layers[0].output_dense.bias.assign(
        encoder.transformer_layers[0].output_dense.bias + 1.0
    )
    np.testing.assert_array_equal(fused(inputs)["sequence_output"].numpy(), before)
    assert not np.allclose(encoder(inputs, training=False)["sequence_output"].numpy(), before)


def test_bfloat16_keeps_bfloat16_weights_and_matches_mixed_bfloat16():
    encoder = _encoder()
    mixed = _encoder(dtype="mixed_bfloat16")
    mixed.set_weights(encoder.get_weights())
    inputs = random_inputs(batch=3, seq=16)
    fused = FusedInferenceEncoder(encoder, dtype="bfloat16")
    # Every product's kernel and every embedding table is stored in bfloat16: nothing to cast
    # per call. LayerNorm's parameters stay float32 (its statistics are float32).
    for variable in fused.variables:
        expected = (
            tf.float32 if ("gamma" in variable.name or "beta" in variable.name) else tf.bfloat16
        )
        assert variable.dtype == expected, variable.name
    outputs = fused(inputs)
    assert outputs["sequence_output"].dtype == tf.bfloat16
    # Against the Keras mixed_bfloat16 encoder (the same bfloat16 products, rounded at other
    # places) and against float32: both within bfloat16's precision over two layers.
    reference = mixed(inputs, training=False)
    _assert_outputs_close(outputs, reference, atol=0.1, rtol=0.05)
    exact = encoder(inputs, training=False)
    error = np.abs(_float32(outputs["sequence_output"]) - _float32(exact["sequence_output"]))
    assert error.mean() < 0.02, error.mean()
    assert error.max() < 0.2, error.max()


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_transposed_kernels_compute_the_same_function(dtype):
    # bfloat16 stores its product kernels [out, in] by default (oneDNN reads that layout
    # faster); both layouts, both dtypes, give the same outputs, on few and many tokens and
    # with the last layer at a few positions (the query's own columns of the QKV kernel).
    encoder = _encoder()
    default = FusedInferenceEncoder(encoder, dtype=dtype)
    assert default.kernels_transposed == (dtype == "bfloat16")
    other = FusedInferenceEncoder(
        encoder, dtype=dtype, transposed_kernels=not default.kernels_transposed
    )
    transposed, plain = (default, other) if default.kernels_transposed else (other, default)
    hidden, intermediate = encoder.hidden_size, encoder.intermediate_size
    assert transposed.layers[0]["qkv_kernel"].shape == (3 * hidden, hidden)
    assert plain.layers[0]["qkv_kernel"].shape == (hidden, 3 * hidden)
    # The first feed-forward part's kernels (float32's tiny feed-forward runs in two halves).
    parts = len(plain.layers[0]["intermediate_kernels"])
    assert (
        parts
        == len(transposed.layers[0]["intermediate_kernels"])
        == (2 if dtype == "float32" else 1)
    )
    assert transposed.layers[0]["intermediate_kernels"][0].shape == (intermediate // parts, hidden)
    assert plain.layers[0]["output_kernels"][0].shape == (intermediate // parts, hidden)
    tolerance = {"atol": 2e-2, "rtol": 1e-2} if dtype == "bfloat16" else {"atol": 1e-5}
    positions = tf.constant([[3, 5], [1, 2], [4, 7]])
    for batch, seq in ((1, 8), (3, 16)):
        inputs = random_inputs(batch=batch, seq=seq)
        _assert_outputs_close(transposed(inputs), plain(inputs), **tolerance)
    _assert_outputs_close(
        transposed(inputs, output_positions=positions),
        plain(inputs, output_positions=positions),
        **tolerance,
    )


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_feed_forward_in_two_halves_computes_the_same_function(dtype):
    # Small float32 feed-forwards run as two halves of their intermediate units by default (two
    # products oneDNN runs on one core each, side by side); large ones in one piece. Both forms
    # give the same outputs, on few and many tokens, with an odd number of units too.
    encoder = _encoder(hidden_size=24, num_attention_heads=4, intermediate_size=41)
    halves = FusedInferenceEncoder(encoder, dtype=dtype, split_feed_forward=True)
    # The default: halves for a small float32 model only.
    assert FusedInferenceEncoder(encoder, dtype=dtype).split_feed_forward == (dtype == "float32")
    shapes = [(24, 20), (24, 21)]  # [in, out]; bfloat16 stores [out, in]
    if halves.kernels_transposed:
        shapes = [shape[::-1] for shape in shapes]
    assert [tuple(k.shape) for k in halves.layers[1]["intermediate_kernels"]] == shapes
    whole = FusedInferenceEncoder(encoder, dtype=dtype, split_feed_forward=False)
    assert len(whole.layers[1]["intermediate_kernels"]) == 1
    for batch, seq in ((1, 8), (3, 16), (9, 16)):
        inputs = random_inputs(batch=batch, seq=seq)
        if dtype == "float32":
            _assert_outputs_close(halves(inputs), whole(inputs), atol=1e-5)
            continue
        # bfloat16: the halves' second products are rounded before their sum, so the two forms
        # differ by a few of bfloat16's steps; both stay as close to float32 as each other.
        _assert_outputs_close(halves(inputs), whole(inputs), atol=0.05, rtol=0.02)
        exact = _float32(encoder(inputs, training=False)["sequence_output"])
        errors = [
            np.abs(_float32(form(inputs)["sequence_output"]) - exact).mean()
            for form in (halves, whole)
        ]
        assert errors[0] < 1.5 * errors[1] + 1e-3, errors
    # One intermediate unit cannot be halved: asked or not, it runs whole.
    single = _encoder(hidden_size=24, num_attention_heads=4, intermediate_size=1)
    assert not FusedInferenceEncoder(single, split_feed_forward=True).split_feed_forward
    # The size rule: BERT-Base's 768 x 3072 feed-forward runs whole.
    assert 768 * 3072 > FusedInferenceEncoder.SPLIT_FEED_FORWARD_ELEMENTS >= 384 * 1536


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="dtype must be one of"):
        FusedInferenceEncoder(_encoder(), dtype="float16")
    with pytest.raises(ValueError, match="needs an official_bert BertEncoder, got Dense"):
        FusedInferenceEncoder(keras.layers.Dense(3))
    with pytest.raises(ValueError, match="needs a built encoder"):
        FusedInferenceEncoder(BertEncoder(**tiny_encoder_kwargs()))
    fused = FusedInferenceEncoder(_encoder())
    with pytest.raises(ValueError, match="eval-only"):
        fused(random_inputs(batch=1, seq=8), training=True)
    too_long = random_inputs(batch=1, seq=80)  # max_position_embeddings is 64
    with pytest.raises(ValueError, match="longer than max_position_embeddings"):
        fused(too_long)


def test_real_minilm_weights_on_real_text(minilm_dir):
    """all-MiniLM-L6-v2 (6 layers, erf GELU, 12 heads of 32) on tokenized sentences."""
    from official_bert.checkpoints.safetensors_bert import (
        read_hf_config,
        read_safetensors_checkpoint,
    )
    from official_bert.tokenization import FullTokenizer

    config = read_hf_config(str(minilm_dir / "config.json"))
    encoder = BertEncoder.from_bert_config(config)
    encoder.build()
    read_safetensors_checkpoint(str(minilm_dir / "model.safetensors"), encoder)
    tokenizer = FullTokenizer(str(minilm_dir / "vocab.txt"), do_lower_case=True)
    sentences = ["The quick brown fox jumps over the lazy dog.", "BERT reads text both ways."]
    seq = 16
    ids = np.zeros((2, seq), np.int32)
    for row, sentence in enumerate(sentences):
        tokens = ["[CLS]", *tokenizer.tokenize(sentence), "[SEP]"]
        ids[row, : len(tokens)] = tokenizer.convert_tokens_to_ids(tokens)
    inputs = {
        "input_word_ids": ids,
        "input_mask": (ids > 0).astype(np.int32),
        "input_type_ids": np.zeros_like(ids),
    }
    expected = encoder(inputs, training=False)
    # Hidden states reach |5| here: float32 rounding over six layers differs by up to 1.1e-5 of a
    # value with Keras 3.12 (Python 3.10's) and less with 3.15, hence the relative part.
    _assert_outputs_close(FusedInferenceEncoder(encoder)(inputs), expected, atol=5e-5, rtol=2e-5)
