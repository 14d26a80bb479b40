"""A BertEncoder built with the fast kernels on against one built plain: the same checkpoint keys
and variable paths (those of main before the kernels moved, tests/fixtures/
bert_encoder_checkpoint_keys.json), the same outputs and gradients, and checkpoints that restore
across the two."""

import json

import numpy as np
import pytest
import tensorflow as tf

from official_bert.kernels import (
    BatchedMatmulAttention,
    PackedBitsDropout,
    ReplicaDropout,
    fast_kernels,
)
from official_bert.kernels.gelu_gradient import gelu_tanh
from official_bert.layers import SelfAttention
from official_bert.models import BertEncoder
from tests.conftest import REPO_ROOT, random_inputs, tiny_encoder_kwargs

GOLDEN = json.loads((REPO_ROOT / "tests/fixtures/bert_encoder_checkpoint_keys.json").read_text())


def _encoder(fast: bool, **overrides) -> BertEncoder:
    with fast_kernels(fast):
        encoder = BertEncoder(**tiny_encoder_kwargs(**overrides), name="bert_encoder")
    encoder.build()
    return encoder


def _checkpoint_keys(encoder, directory) -> list[str]:
    path = tf.train.Checkpoint(model=encoder).write(str(directory / "ckpt"))
    return sorted(
        k for k, _ in tf.train.list_variables(path) if k != "_CHECKPOINTABLE_OBJECT_GRAPH"
    )


@pytest.mark.parametrize("fast", [False, True])
def test_checkpoint_keys_and_variable_paths_are_mains(fast, tmp_path):
    encoder = _encoder(fast)
    assert _checkpoint_keys(encoder, tmp_path) == GOLDEN["checkpoint_keys"]
    assert [v.path.split("/", 1)[1] for v in encoder.weights] == GOLDEN["variable_paths"]


def test_the_switch_picks_the_layers_when_the_encoder_is_built():
    plain, fast = _encoder(False), _encoder(True)
    block = plain.transformer_layer_0
    assert type(block.attention) is SelfAttention
    assert type(block.output_dropout) is ReplicaDropout  # Keras's Dropout, a mask per replica
    assert block.intermediate_dense.activation is not gelu_tanh
    block = fast.transformer_layer_0
    assert type(block.attention) is BatchedMatmulAttention
    assert type(block.output_dropout) is PackedBitsDropout
    assert type(fast.embeddings.dropout) is PackedBitsDropout
    assert block.intermediate_dense.activation is gelu_tanh
    assert plain.get_config() == fast.get_config()


@pytest.mark.parametrize("causal", [False, True])
def test_same_outputs_and_gradients_and_checkpoints_restore_across(causal, tmp_path):
    plain, fast = _encoder(False, causal=causal), _encoder(True, causal=causal)
    path = tf.train.Checkpoint(model=plain).write(str(tmp_path / "plain"))
    tf.train.Checkpoint(model=fast).read(path).assert_consumed()
    inputs = random_inputs()
    results = []
    for encoder in (plain, fast):
        with tf.GradientTape() as tape:
            outputs = encoder(inputs)  # dropout off: the masks of the two paths differ
            loss = tf.reduce_sum(tf.sin(outputs["sequence_output"])) + tf.reduce_sum(
                outputs["pooled_output"]
            )
        gradients = tape.gradient(loss, encoder.trainable_weights)
        gradients = [tf.convert_to_tensor(g) for g in gradients]  # embeddings: IndexedSlices
        results.append([outputs["sequence_output"], outputs["pooled_output"], *gradients])
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_dropout_is_on_in_training_in_both():
    inputs = random_inputs()
    for fast in (False, True):
        encoder = _encoder(fast)
        inference = encoder(inputs)["sequence_output"]
        trained = encoder(inputs, training=True)["sequence_output"]
        assert np.abs(trained - inference).max() > 1e-3, fast
