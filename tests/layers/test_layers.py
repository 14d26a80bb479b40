"""Behaviour and config round trips of every layer in official_bert/layers."""

import keras
import numpy as np
import pytest

from official_bert.layers import (
    BertEmbeddings,
    ClassificationHead,
    MaskedLMHead,
    SpanHead,
    TransformerBlock,
)


def _config_round_trip(layer):
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    assert keras.saving.get_registered_object(
        keras.saving.get_registered_name(type(layer))
    ) is type(layer)


def test_embeddings_sum_word_position_and_type_then_layer_norm():
    layer = BertEmbeddings(
        vocab_size=20,
        hidden_size=8,
        max_position_embeddings=10,
        type_vocab_size=2,
        dropout_rate=0.0,
    )
    layer.build()
    ids = np.array([[3, 4, 5]], np.int32)
    types = np.array([[0, 1, 1]], np.int32)
    out = np.asarray(layer(ids, types))
    raw = (
        layer.word_embeddings.embeddings.numpy()[ids[0]]
        + layer.token_type_embeddings.embeddings.numpy()[types[0]]
        + layer.position_embeddings.numpy()[:3]
    )
    mean = raw.mean(-1, keepdims=True)
    var = raw.var(-1, keepdims=True)
    np.testing.assert_allclose(out[0], (raw - mean) / np.sqrt(var + 1e-12), atol=1e-5)
    assert out.shape == (1, 3, 8)
    _config_round_trip(layer)


def test_embeddings_refuse_sequences_longer_than_the_position_table():
    layer = BertEmbeddings(vocab_size=20, hidden_size=8, max_position_embeddings=4)
    layer.build()
    ids = np.zeros((1, 5), np.int32)
    with pytest.raises(
        ValueError, match="sequence length 5 is longer than max_position_embeddings"
    ):
        layer(ids, ids)


def test_transformer_block_masks_padding_and_switches_dropout():
    block = TransformerBlock(hidden_size=16, num_attention_heads=4, intermediate_size=32)
    block.build((None, None, 16))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 6, 16)).astype(np.float32)
    mask = np.ones((2, 6, 6), bool)
    mask[:, :, 4:] = False  # keys 4 and 5 are padding
    out = np.asarray(block(x, attention_mask=mask))
    x_changed = x.copy()
    x_changed[:, 4:] = rng.normal(size=(2, 2, 16))
    out_changed = np.asarray(block(x_changed, attention_mask=mask))
    # Real positions do not see what sits in the padding.
    np.testing.assert_allclose(out[:, :4], out_changed[:, :4], atol=1e-6)
    np.testing.assert_array_equal(out, np.asarray(block(x, attention_mask=mask)))
    assert not np.allclose(out, np.asarray(block(x, attention_mask=mask, training=True)))
    _config_round_trip(block)


def test_masked_lm_head_is_tied_to_the_word_embeddings():
    embedding = keras.layers.Embedding(30, 8)
    embedding.build((None, None))
    head = MaskedLMHead(vocab_size=30, hidden_size=8, token_embedding=embedding)
    head.build()
    sequence = np.random.default_rng(1).normal(size=(2, 5, 8)).astype(np.float32)
    positions = np.array([[0, 3], [4, 1]], np.int32)
    logits = np.asarray(head(sequence, positions))
    assert logits.shape == (2, 2, 30) and logits.dtype == np.float32
    # Its own weights: transform dense, LayerNorm, output bias; no output matrix of its own.
    assert sorted(v.path.split("/")[-1] for v in head.weights if v is not embedding.embeddings) == [
        "beta",
        "bias",
        "gamma",
        "kernel",
        "output_bias",
    ]
    hidden = np.asarray(head.transform_layer_norm(head.transform_dense(sequence[[0], [3]])))
    np.testing.assert_allclose(logits[0, 1], hidden[0] @ embedding.embeddings.numpy().T, atol=1e-5)
    embedding.embeddings.assign(embedding.embeddings.numpy() * 2.0)
    assert not np.allclose(logits, np.asarray(head(sequence, positions)))
    config = head.get_config()
    assert "token_embedding" not in config and config["vocab_size"] == 30


def test_masked_lm_head_without_embedding_is_a_clear_error():
    head = MaskedLMHead(vocab_size=30, hidden_size=8)
    with pytest.raises(ValueError, match="needs `token_embedding`"):
        head.build()


def test_classification_head_and_span_head_shapes_and_configs():
    head = ClassificationHead(num_classes=3, dropout_rate=0.5)
    head.build((None, 8))
    pooled = np.ones((4, 8), np.float32)
    assert np.asarray(head(pooled)).shape == (4, 3)
    np.testing.assert_array_equal(np.asarray(head(pooled)), np.asarray(head(pooled)))
    assert not np.allclose(np.asarray(head(pooled)), np.asarray(head(pooled, training=True)))
    _config_round_trip(head)
    span = SpanHead()
    span.build((None, None, 8))
    start, end = span(np.ones((2, 7, 8), np.float32))
    assert start.shape == (2, 7) and end.shape == (2, 7)
    kernel = span.dense.kernel.numpy()
    np.testing.assert_allclose(
        np.asarray(start)[0, 0], kernel[:, 0].sum() + span.dense.bias.numpy()[0], atol=1e-5
    )
    _config_round_trip(span)
