"""The exported text preprocessor (TF Hub BERT preprocessor API) on a vocabulary written here."""

import shutil

import numpy as np
import pytest
import tensorflow as tf

from official_bert.export import export_bert_preprocessor, load_preprocessor
from official_bert.tokenization import FullTokenizer
from tests.tiny_data import write_tiny_vocab

SENTENCES = ["The quick brown fox jumps over the lazy dog.", "Hello, WORLD! Zebra"]
# Ids read off write_tiny_vocab's lines by hand: [CLS]=2, [SEP]=3, [UNK]=1, the=5, quick=27,
# brown=28, fox=29, jump=30, ##s=53, over=31, lazy=32, dog=33, .=49, hello=34, ,=48, world=35,
# !=50.
GOLDEN_PIECES = [[5, 27, 28, 29, 30, 53, 31, 5, 32, 33, 49], [34, 48, 35, 50, 1]]


@pytest.fixture(scope="module")
def preprocessor_path(tmp_path_factory):
    directory = tmp_path_factory.mktemp("preprocessor")
    write_tiny_vocab(directory / "vocab.txt")
    return export_bert_preprocessor(
        str(directory / "export"), str(directory / "vocab.txt"), True, default_seq_length=12
    ), directory / "vocab.txt"


def test_golden_ids_and_the_root_call(preprocessor_path):
    path, vocab_file = preprocessor_path
    preprocessor = load_preprocessor(path)
    tokens = preprocessor.tokenize(tf.constant(SENTENCES))
    assert tokens.shape.rank == 3  # [batch, (words), (pieces)]
    assert tokens.merge_dims(1, 2).to_list() == GOLDEN_PIECES
    assert tokens.to_list()[0][4] == [30, 53]  # "jumps" is one word of two pieces
    reference = FullTokenizer(str(vocab_file), do_lower_case=True)
    assert [reference.convert_tokens_to_ids(reference.tokenize(s)) for s in SENTENCES] == (
        GOLDEN_PIECES
    )

    packed = preprocessor(tf.constant(SENTENCES))
    assert {name: value.dtype for name, value in packed.items()} == {
        "input_word_ids": tf.int32,
        "input_mask": tf.int32,
        "input_type_ids": tf.int32,
    }
    np.testing.assert_array_equal(
        packed["input_word_ids"],
        [[2, *GOLDEN_PIECES[0][:10], 3], [2, *GOLDEN_PIECES[1], 3, 0, 0, 0, 0, 0]],
    )
    np.testing.assert_array_equal(packed["input_mask"], [[1] * 12, [1] * 7 + [0] * 5])
    np.testing.assert_array_equal(packed["input_type_ids"], np.zeros((2, 12)))
    assert preprocessor.get_special_tokens_dict() == {
        "vocab_size": 100,
        "start_of_sequence_id": 2,
        "end_of_segment_id": 3,
        "padding_id": 0,
        "mask_id": 4,
    }
    assert bool(preprocessor.do_lower_case.numpy()) is True

    # serving_default (TF Serving, saved_model_cli) takes "sentences", as the Model Garden's
    # preprocessors do.
    serving = preprocessor.signatures["serving_default"]
    assert list(serving.structured_input_signature[1]) == ["sentences"]
    served = serving(sentences=tf.constant(SENTENCES))
    np.testing.assert_array_equal(served["input_word_ids"], packed["input_word_ids"])


def test_pack_two_segments_with_round_robin_truncation(preprocessor_path):
    preprocessor = load_preprocessor(preprocessor_path[0])
    a = preprocessor.tokenize(tf.constant(["the quick brown fox jumps", "hello world"]))
    b = preprocessor.tokenize(tf.constant(["hello world", "the quick brown fox jumps over"]))
    packed = preprocessor.bert_pack_inputs([a, b], seq_length=tf.constant(10))
    # Original _truncate_seq_pair: one piece at a time off the longer side (B on a tie).
    np.testing.assert_array_equal(
        packed["input_word_ids"],
        [[2, 5, 27, 28, 29, 30, 3, 34, 35, 3], [2, 34, 35, 3, 5, 27, 28, 29, 30, 3]],
    )
    np.testing.assert_array_equal(packed["input_type_ids"], [[0] * 7 + [1] * 3, [0] * 4 + [1] * 6])
    np.testing.assert_array_equal(packed["input_mask"], np.ones((2, 10)))
    # Flat [batch, (pieces)] segments are accepted too, and the default length is 12.
    flat = preprocessor.bert_pack_inputs([a.merge_dims(1, 2)])
    np.testing.assert_array_equal(
        flat["input_word_ids"],
        [[2, 5, 27, 28, 29, 30, 53, 3, 0, 0, 0, 0], [2, 34, 35, 3] + [0] * 8],
    )


def test_inside_tf_data_and_hub_keras_layer(preprocessor_path):
    import tensorflow_hub as hub

    path = preprocessor_path[0]
    preprocessor = load_preprocessor(path)
    dataset = tf.data.Dataset.from_tensor_slices(SENTENCES * 3).batch(2).map(preprocessor)
    batches = list(dataset)
    assert len(batches) == 3
    np.testing.assert_array_equal(
        batches[0]["input_word_ids"], preprocessor(tf.constant(SENTENCES))["input_word_ids"]
    )
    layer = hub.KerasLayer(path)
    packed = layer(tf.constant(SENTENCES))
    np.testing.assert_array_equal(
        packed["input_word_ids"], preprocessor(tf.constant(SENTENCES))["input_word_ids"]
    )


def test_no_vocab_path_inside_and_works_after_moving(tmp_path):
    source = tmp_path / "vocab_dir_91c2"
    source.mkdir()
    write_tiny_vocab(source / "vocab.txt")
    path = export_bert_preprocessor(str(tmp_path / "export"), str(source / "vocab.txt"), True)
    saved_model_pb = (tmp_path / "export" / "saved_model.pb").read_bytes()
    assert b"vocab_dir_91c2" not in saved_model_pb
    shutil.rmtree(source)
    shutil.move(path, tmp_path / "moved")
    preprocessor = load_preprocessor(str(tmp_path / "moved"))
    assert preprocessor.tokenize(tf.constant(SENTENCES)).merge_dims(1, 2).to_list() == (
        GOLDEN_PIECES
    )
    assert preprocessor(tf.constant(SENTENCES))["input_word_ids"].shape == (2, 128)
    tf.saved_model.save(preprocessor, str(tmp_path / "again"))
    again = load_preprocessor(str(tmp_path / "again"))
    assert again.tokenize(tf.constant(SENTENCES)).merge_dims(1, 2).to_list() == GOLDEN_PIECES
    assert tf.io.read_file(again.vocab_file.asset_path).numpy().startswith(b"[PAD]\n[UNK]\n")


def test_tokenize_with_offsets_is_exported_on_request(preprocessor_path, tmp_path):
    path, vocab_file = preprocessor_path
    assert not hasattr(load_preprocessor(path), "tokenize_with_offsets")
    with_offsets = load_preprocessor(
        export_bert_preprocessor(
            str(tmp_path / "export"), str(vocab_file), True, tokenize_with_offsets=True
        )
    )
    text = "Hello, WORLD! Zebra jumps"
    ids, starts, limits = with_offsets.tokenize_with_offsets(tf.constant([text, ""]))
    assert ids.to_list() == with_offsets.tokenize(tf.constant([text, ""])).to_list()
    assert ids.to_list() == [[[34], [48], [35], [50], [1], [30, 53]], []]
    assert starts.dtype == limits.dtype == tf.int64
    spans = [
        [text[a:b] for a, b in zip(s, e, strict=True)]
        for s, e in zip(starts[0], limits[0], strict=True)
    ]
    assert spans == [["Hello"], [","], ["WORLD"], ["!"], ["Zebra"], ["jump", "s"]]
