import numpy as np
import pytest
import tensorflow as tf

from official_bert.data.pretraining_data_writer import (
    PretrainingDataSettings,
    write_pretraining_examples,
)
from official_bert.data.pretraining_dataset import inspect_pretraining_file, pretraining_dataset
from tests.conftest import REPO_ROOT

CORPUS = REPO_ROOT / "samples" / "pretraining_corpus.txt"


@pytest.fixture(scope="module")
def files(minilm_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("pretraining")
    vocab = str(minilm_dir / "vocab.txt")
    original = folder / "original.tfrecord"
    write_pretraining_examples(
        [str(CORPUS)],
        [str(original)],
        PretrainingDataSettings(vocab_file=vocab, dupe_factor=2),
        num_workers=1,
    )
    v2 = folder / "v2.tfrecord"
    write_pretraining_examples(
        [str(CORPUS)],
        [str(v2)],
        PretrainingDataSettings(
            vocab_file=vocab,
            dupe_factor=2,
            max_seq_length=64,
            max_predictions_per_seq=10,
            use_v2_feature_names=True,
        ),
        num_workers=1,
        gzip_compress=True,
    )
    return original, v2


def test_reads_batches_under_model_names(files):
    original, _ = files
    batch = next(iter(pretraining_dataset(str(original), 4, 128, 20, is_training=True, seed=1)))
    assert sorted(batch) == sorted(
        [
            "input_word_ids",
            "input_mask",
            "input_type_ids",
            "masked_lm_positions",
            "masked_lm_ids",
            "masked_lm_weights",
            "next_sentence_labels",
        ]
    )
    assert batch["input_word_ids"].shape == (4, 128) and batch["input_word_ids"].dtype == tf.int32
    assert batch["masked_lm_weights"].dtype == tf.float32
    assert batch["next_sentence_labels"].shape == (4, 1)
    evaluation = list(pretraining_dataset(str(original), 8, 128, 20, is_training=False))
    total = sum(int(b["input_word_ids"].shape[0]) for b in evaluation)
    assert total == sum(1 for _ in tf.data.TFRecordDataset(str(original)))


def test_detects_v2_names_and_gzip(files):
    _, v2 = files
    info = inspect_pretraining_file(str(v2))
    assert info == {
        "use_v2_feature_names": True,
        "max_seq_length": 64,
        "max_predictions_per_seq": 10,
        "compression_type": "GZIP",
    }
    batch = next(iter(pretraining_dataset(str(v2), 2, 64, 10, is_training=False)))
    assert batch["input_type_ids"].shape == (2, 64)
    np.testing.assert_array_equal(batch["input_word_ids"][:, 0], [101, 101])  # [CLS]


def test_length_mismatch_names_both(files):
    original, _ = files
    with pytest.raises(ValueError, match=r"max_seq_length = 128, but --max_seq_length=512"):
        pretraining_dataset(str(original), 4, 512, 20)
    with pytest.raises(
        ValueError, match=r"max_predictions_per_seq = 20, but --max_predictions_per_seq=76"
    ):
        pretraining_dataset(str(original), 4, 128, 76)
    with pytest.raises(FileNotFoundError, match="no file matches"):
        pretraining_dataset(str(original) + "-nothing*", 4, 128, 20)
