import numpy as np
import pytest
import tensorflow as tf

from official_bert.data.pretraining.data_writer import (
    PretrainingDataSettings,
    write_pretraining_examples,
)
from official_bert.data.pretraining.dataset import (
    inspect_pretraining_file,
    pretraining_dataset,
    restore_masked_tokens,
)
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
        "masking": "static",
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


def test_repeated_evaluation_runs_on_in_full_batches(files):
    """repeat=True: the original's eval input_fn (TFRecordDataset(files).repeat(), batches with
    drop_remainder=True): the records in order, the batches running on into the next pass."""
    original, _ = files
    ids = [
        example["input_word_ids"]
        for example in pretraining_dataset(str(original), 1, 128, 20, is_training=False).unbatch()
    ]
    batch_size = 7 if len(ids) % 7 else 9
    assert len(ids) % batch_size
    dataset = pretraining_dataset(
        str(original), batch_size, 128, 20, is_training=False, repeat=True
    )
    batches = list(dataset.take(len(ids) // batch_size + 3))
    assert all(batch["input_word_ids"].shape == (batch_size, 128) for batch in batches)
    read = np.concatenate([batch["input_word_ids"] for batch in batches])
    np.testing.assert_array_equal(read, np.stack((ids * 2)[: len(read)]))


def test_every_file_of_the_list_has_its_lengths_checked(files, minilm_dir, tmp_path):
    # A later file of other lengths used to pass the check (made on the first file only) and
    # fail mid-run with tf.data's "Key: masked_lm_weights ... Values size: 10 but output shape:
    # [20]"; now it is the one-line error of the first file's, naming the later file.
    original, _ = files
    shorter = tmp_path / "shorter.tfrecord"
    write_pretraining_examples(
        [str(CORPUS)],
        [str(shorter)],
        PretrainingDataSettings(
            vocab_file=str(minilm_dir / "vocab.txt"),
            dupe_factor=1,
            max_seq_length=64,
            max_predictions_per_seq=10,
        ),
        num_workers=1,
    )
    with pytest.raises(ValueError) as raised:
        pretraining_dataset(f"{original},{shorter}", 4, 128, 20, is_training=False)
    assert str(raised.value) == (
        f"{shorter} holds examples with max_seq_length = 64, but --max_seq_length=128; pass "
        "--max_seq_length=64 or regenerate the data with --max_seq_length=128"
    )
    with pytest.raises(ValueError, match=rf"^{original} holds examples with max_seq_length = 128,"):
        pretraining_dataset(f"{shorter},{original}", 4, 64, 10, is_training=False)


def test_restore_masked_tokens_by_hand():
    batch = {
        "input_word_ids": tf.constant([[101, 103, 7, 103, 102, 0], [101, 9, 55, 102, 0, 0]]),
        "input_mask": tf.constant([[1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 0, 0]]),
        "input_type_ids": tf.zeros([2, 6], tf.int32),
        # Row 0: [MASK] at 1 and 3, and 2 kept as is (label = input); a padding slot (weight 0)
        # points at position 0 with label 0. Row 1: a random token (55) at 2.
        "masked_lm_positions": tf.constant([[1, 2, 3, 0], [2, 0, 0, 0]]),
        "masked_lm_ids": tf.constant([[20, 7, 30, 0], [40, 0, 0, 0]]),
        "masked_lm_weights": tf.constant([[1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]]),
        "next_sentence_labels": tf.constant([[0], [1]]),
    }
    restored = restore_masked_tokens(batch)
    assert sorted(restored) == ["input_mask", "input_type_ids", "input_word_ids"]
    assert restored["input_word_ids"].numpy().tolist() == [
        [101, 20, 7, 30, 102, 0],
        [101, 9, 40, 102, 0, 0],
    ]


def test_restored_inputs_equal_unmasked_records(minilm_dir, tmp_path):
    """Records masked 80/10/10 and records written with the same seed but every prediction left
    unchanged (0/0/1) hold the same instances and predictions; restoring the first gives the
    input_ids of the second, exactly."""
    paths = {}
    for name, shares in (("masked", (0.8, 0.1, 0.1)), ("unchanged", (0.0, 0.0, 1.0))):
        paths[name] = str(tmp_path / f"{name}.tfrecord")
        write_pretraining_examples(
            [str(CORPUS)],
            [paths[name]],
            PretrainingDataSettings(
                vocab_file=str(minilm_dir / "vocab.txt"),
                dupe_factor=2,
                max_seq_length=64,
                max_predictions_per_seq=10,
                next_sentence=False,
                mask_token_prob=shares[0],
                random_token_prob=shares[1],
                keep_token_prob=shares[2],
            ),
            num_workers=1,
        )

    def read(name, restore):
        dataset = pretraining_dataset(
            paths[name], 1000, 64, 10, is_training=False, restore_original_tokens=restore
        )
        return next(iter(dataset))

    masked, unchanged = read("masked", False), read("unchanged", False)
    restored = read("masked", True)
    assert sorted(restored) == ["input_mask", "input_type_ids", "input_word_ids"]
    np.testing.assert_array_equal(masked["masked_lm_positions"], unchanged["masked_lm_positions"])
    changed = (masked["input_word_ids"] != unchanged["input_word_ids"]).numpy().sum()
    assert changed > 0.8 * masked["masked_lm_weights"].numpy().sum()  # the inputs were masked
    np.testing.assert_array_equal(restored["input_word_ids"], unchanged["input_word_ids"])
    np.testing.assert_array_equal(restored["input_mask"], masked["input_mask"])
