import keras
import numpy as np
import pytest

from official_bert.layers import MaskedLMHead


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


def test_without_positions_the_head_predicts_at_every_position():
    """masked_positions=None (a left-to-right LM): the logits of every position, equal to
    gathering all positions."""
    embedding = keras.layers.Embedding(30, 8)
    embedding.build((None, None))
    head = MaskedLMHead(vocab_size=30, hidden_size=8, token_embedding=embedding)
    head.build()
    sequence = np.random.default_rng(2).normal(size=(2, 5, 8)).astype(np.float32)
    every = np.asarray(head(sequence))
    assert every.shape == (2, 5, 30) == head.compute_output_shape((2, 5, 8))
    all_positions = np.tile(np.arange(5, dtype=np.int32), (2, 1))
    np.testing.assert_allclose(every, np.asarray(head(sequence, all_positions)), atol=1e-6)
