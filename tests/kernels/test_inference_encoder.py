"""FusedInferenceEncoder against its plain twin, the Keras BertEncoder in eval mode: every
output (sequence, pooled, each layer), with padding, causal masks and each activation; the
bfloat16 path against the mixed_bfloat16 Keras encoder; real MiniLM weights."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert.kernels import FusedInferenceEncoder, fast_kernels
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
    _assert_outputs_close(fused(inputs), expected, atol=2e-5)
    # The same in a graph whose batch and length are unknown when it is traced (serving).
    spec = {name: tf.TensorSpec([None, None], tf.int32) for name in inputs}
    graph_call = tf.function(fused.__call__, input_signature=[spec])
    _assert_outputs_close(graph_call(inputs), expected, atol=2e-5)


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
    assert len(qkv_products) == 2 * (4 * len(fused.layers) + 1)
    outputs = split_call(inputs)
    _assert_outputs_close(outputs, encoder(inputs, training=False), atol=2e-5)
    fused.SPLIT_BATCH = batch + 1  # the same batch as one chain (products blocked otherwise)
    _assert_outputs_close(outputs, fused(inputs), atol=1e-5)


def test_a_batch_of_unknown_size_chooses_halves_when_it_runs():
    """A serving signature's batch (None when traced): both chains are in the graph and the
    batch's size picks one at run time; outputs equal the Keras encoder's either way."""
    with fast_kernels(True):
        encoder = _encoder()
    fused = FusedInferenceEncoder(encoder)
    names = ("input_word_ids", "input_mask", "input_type_ids")
    spec = {name: tf.TensorSpec([None, None], tf.int32) for name in names}
    serve = tf.function(fused.__call__, input_signature=[spec])
    graph = serve.get_concrete_function().graph
    (choice,) = [op for op in graph.get_operations() if op.type in ("If", "StatelessIf")]
    library = {f.signature.name: f for f in graph.as_graph_def().library.function}
    products = [
        sum(node.op == "MatMul" for node in library[choice.get_attr(branch).name].node_def)
        for branch in ("then_branch", "else_branch")
    ]
    assert products == [2 * (4 * len(fused.layers) + 1), 4 * len(fused.layers) + 1]
    for batch in (fused.SPLIT_BATCH + 3, fused.SPLIT_BATCH - 1):
        inputs = random_inputs(batch=batch, seq=16, vocab=100)
        inputs["input_mask"][batch // 2, 9:] = 0
        _assert_outputs_close(serve(inputs), encoder(inputs, training=False), atol=2e-5)


@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
@pytest.mark.parametrize("batch", [3, 9], ids=["one_chain", "halves"])
def test_output_positions_equal_the_keras_encoders(causal, batch):
    """As BertEncoder's `output_positions`: the last layer at [CLS] and those rows only, in
    eager, static and unknown-batch graphs; [batch, 0] leaves `pooled_output` alone."""
    with fast_kernels(True):
        encoder = _encoder(causal=causal)
    inputs = random_inputs(batch=batch, seq=16, vocab=100)
    rng = np.random.default_rng(1)
    positions = rng.integers(0, 16, (batch, 3)).astype(np.int32)
    positions[0] = [5, 5, 0]  # repeats and a padding slot
    expected = encoder(inputs, training=False, output_positions=positions)
    full = encoder(inputs, training=False)
    fused = FusedInferenceEncoder(encoder)
    names = ("input_word_ids", "input_mask", "input_type_ids")
    for spec_batch in (batch, None):
        spec = {name: tf.TensorSpec([spec_batch, None], tf.int32) for name in names}
        positions_spec = tf.TensorSpec([spec_batch, None], tf.int32)
        graph_call = tf.function(
            lambda x, p: fused(x, output_positions=p), input_signature=[spec, positions_spec]
        )
        outputs = graph_call(inputs, positions)
        assert outputs["sequence_output"].shape == (batch, 3, 32)
        _assert_outputs_close(outputs, expected, atol=2e-5)
        cls_only = graph_call(inputs, np.zeros((batch, 0), np.int32))
        assert cls_only["sequence_output"].shape == (batch, 0, 32)
        np.testing.assert_allclose(
            _float32(cls_only["pooled_output"]), _float32(full["pooled_output"]), atol=2e-5
        )
    _assert_outputs_close(fused(inputs, output_positions=positions), expected, atol=2e-5)


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
    _assert_outputs_close(FusedInferenceEncoder(encoder)(inputs), expected, atol=5e-5)
