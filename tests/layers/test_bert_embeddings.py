import numpy as np
import pytest

from official_bert.layers import BertEmbeddings
from tests.conftest import assert_config_round_trip


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
    assert_config_round_trip(layer)


def test_embeddings_refuse_sequences_longer_than_the_position_table():
    layer = BertEmbeddings(vocab_size=20, hidden_size=8, max_position_embeddings=4)
    layer.build()
    ids = np.zeros((1, 5), np.int32)
    with pytest.raises(
        ValueError, match="sequence length 5 is longer than max_position_embeddings"
    ):
        layer(ids, ids)


def test_a_sequence_length_known_only_when_run_is_checked_with_the_same_message():
    import tensorflow as tf

    layer = BertEmbeddings(vocab_size=20, hidden_size=8, max_position_embeddings=4)
    layer.build()
    spec = tf.TensorSpec([None, None], tf.int32)
    embed = tf.function(lambda ids: layer(ids, ids), input_signature=[spec])
    assert embed(np.zeros((2, 4), np.int32)).shape == (2, 4, 8)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"sequence length is longer than max_position_embeddings \(4\)",
    ):
        embed(np.zeros((2, 5), np.int32))
