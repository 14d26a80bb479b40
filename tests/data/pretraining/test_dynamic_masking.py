"""Dynamic masking: create_pretraining_data --masking=dynamic writes unmasked instances, the
input pipeline masks them (dynamic_masking). The reference is the static writer itself: with
the same seed both write the same instances in the same order (the masks come from a separate
random stream), so record i of one is record i of the other, masked or not."""

import collections

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
from official_bert.data.pretraining.dynamic_masking import (
    _take_words_within_budget,
    batch_draws,
    mask_batch,
)
from official_bert.data.pretraining.features import (
    WORD_STARTS,
    pretraining_feature_spec,
    unmasked_feature_spec,
)
from official_bert.data.record_files import RecordFileError
from tests.conftest import REPO_ROOT

CORPUS = REPO_ROOT / "samples" / "pretraining_corpus.txt"
ZH_CORPUS = REPO_ROOT / "samples" / "zh" / "pretraining_corpus.txt"
ZH_VOCAB = REPO_ROOT / "samples" / "zh" / "vocab.txt"
# Passes over the sample (dupe_factor): enough predictions (~30k) that sampling noise in the
# shares is a third of the 1-point tolerance.
PASSES = 100


def _write(folder, name, corpus, vocab, workers=1, **settings):
    path = str(folder / f"{name}.tfrecord")
    write_pretraining_examples(
        [str(corpus)],
        [path],
        PretrainingDataSettings(vocab_file=str(vocab), **settings),
        num_workers=workers,
    )
    return path


def _raw_records(path, spec):
    records = list(tf.data.TFRecordDataset(path).as_numpy_iterator())
    return {k: v.numpy() for k, v in tf.io.parse_example(records, spec).items()}


def _read_in_order(path, seq_length, predictions):
    """All records of `path` (one pass, in file order) as the pipeline yields them: numpy
    arrays under the model's names."""
    batches = list(pretraining_dataset(path, 256, seq_length, predictions, is_training=False))
    return {key: np.concatenate([b[key].numpy() for b in batches]) for key in batches[0]}


def _statistics(batch, original_ids, word_starts, mask_id):
    """Shares of the predictions: of the eligible tokens, [MASK] / random / unchanged, in words
    of several pieces; and the share of predicted words predicted whole."""
    weights = batch["masked_lm_weights"] > 0
    lengths = batch["input_mask"].sum(1)
    eligible = (lengths - 3).sum()  # [CLS] A [SEP] B [SEP]
    rows = np.arange(len(weights))[:, None]
    at_positions = batch["input_word_ids"][rows, batch["masked_lm_positions"]]
    is_mask = (at_positions == mask_id) & weights
    unchanged = (at_positions == batch["masked_lm_ids"]) & weights & ~is_mask
    total = weights.sum()
    word_of = np.cumsum(word_starts, axis=1)
    word_size = collections.Counter()
    for row in range(len(word_of)):
        for word in word_of[row, : lengths[row]]:
            word_size[row, word] += 1
    predicted = collections.Counter()
    for row, slot in zip(*np.nonzero(weights), strict=True):
        predicted[row, word_of[row, batch["masked_lm_positions"][row, slot]]] += 1
    in_long_words = sum(n for key, n in predicted.items() if word_size[key] > 1)
    whole = sum(n == word_size[key] for key, n in predicted.items())
    np.testing.assert_array_equal(batch["masked_lm_ids"][weights], original_ids[weights])
    return {
        "predicted_of_eligible": total / eligible,
        "mask": is_mask.sum() / total,
        "random": (total - is_mask.sum() - unchanged.sum()) / total,
        "unchanged": unchanged.sum() / total,
        "in_multi_piece_words": in_long_words / total,
        "words_predicted_whole": whole / len(predicted),
    }


def _compare_with_static(tmp_path, corpus, vocab, seq_length, **settings):
    """(static statistics, dynamic statistics, static batch, dynamic batch) of the same
    instances, one epoch, the words by the dynamic records' word starts."""
    common = dict(dupe_factor=PASSES, max_seq_length=seq_length, **settings)
    static = _write(tmp_path, "static", corpus, vocab, **common)
    dynamic = _write(tmp_path, "dynamic", corpus, vocab, masking="dynamic", **common)
    info = inspect_pretraining_file(dynamic)
    assert info["masking"] == "dynamic" and info["word_starts"]
    word_starts = _raw_records(dynamic, unmasked_feature_spec(seq_length, word_starts=True))[
        WORD_STARTS
    ]
    static_batch = _read_in_order(static, seq_length, 20)
    dynamic_batch = _read_in_order(dynamic, seq_length, 20)
    # The same instances: the static records with their original tokens restored.
    restored = restore_masked_tokens({k: tf.constant(v) for k, v in static_batch.items()})
    unmasked = _raw_records(dynamic, unmasked_feature_spec(seq_length, word_starts=True))
    np.testing.assert_array_equal(restored["input_word_ids"].numpy(), unmasked["input_ids"])
    for key in ("input_mask", "input_type_ids", "next_sentence_labels"):
        np.testing.assert_array_equal(static_batch[key], dynamic_batch[key])
    mask_id = info["recipe"].mask_id
    rows = np.arange(len(word_starts))[:, None]
    stats = [
        _statistics(
            batch, unmasked["input_ids"][rows, batch["masked_lm_positions"]], word_starts, mask_id
        )
        for batch in (static_batch, dynamic_batch)
    ]
    return *stats, static_batch, dynamic_batch


def _assert_within_a_point(static, dynamic):
    for key, value in static.items():
        assert abs(dynamic[key] - value) < 0.01, (key, value, dynamic[key])


def test_whole_word_statistics_match_the_static_writer(minilm_dir, tmp_path):
    static, dynamic, *_ = _compare_with_static(
        tmp_path, CORPUS, minilm_dir / "vocab.txt", 64, do_whole_word_mask=True
    )
    _assert_within_a_point(static, dynamic)
    assert static["words_predicted_whole"] == dynamic["words_predicted_whole"] == 1.0
    assert 0.14 < dynamic["predicted_of_eligible"] < 0.17
    assert abs(dynamic["mask"] - 0.8) < 0.01 and abs(dynamic["random"] - 0.1) < 0.01
    # The sample's "##" words hold ~4.5% of the predictions: masked whole too.
    assert dynamic["in_multi_piece_words"] > 0.03


def test_single_piece_masking_takes_the_static_budget_exactly(minilm_dir, tmp_path):
    # Without whole words, every piece is a word of its own (word_starts all 1 on real tokens):
    # write whole-word records only to read their (trivial) starts, then compare the pieces.
    vocab = minilm_dir / "vocab.txt"
    static = _write(tmp_path, "static", CORPUS, vocab, dupe_factor=PASSES, max_seq_length=64)
    dynamic = _write(
        tmp_path, "dynamic", CORPUS, vocab, dupe_factor=PASSES, max_seq_length=64, masking="dynamic"
    )
    assert not inspect_pretraining_file(dynamic)["word_starts"]
    static_batch = _read_in_order(static, 64, 20)
    dynamic_batch = _read_in_order(dynamic, 64, 20)
    # The original's budget per instance, min(20, max(1, round(0.15 * length))), taken whole.
    np.testing.assert_array_equal(
        static_batch["masked_lm_weights"].sum(1), dynamic_batch["masked_lm_weights"].sum(1)
    )
    unmasked = _raw_records(dynamic, unmasked_feature_spec(64))["input_ids"]
    rows = np.arange(len(unmasked))[:, None]
    pieces = (unmasked > 0).astype(np.int32)  # each piece its own word
    stats = [
        _statistics(b, unmasked[rows, b["masked_lm_positions"]], pieces, 103)
        for b in (static_batch, dynamic_batch)
    ]
    _assert_within_a_point(*stats)
    # Never [CLS] or [SEP], positions ascending, padding after the predictions.
    positions, weights = dynamic_batch["masked_lm_positions"], dynamic_batch["masked_lm_weights"]
    assert not np.isin(unmasked[rows, positions][weights > 0], [101, 102]).any()
    assert (np.diff(np.where(weights > 0, positions, 10**6 + np.arange(20)), axis=1) > 0).all()
    assert (positions[weights == 0] == 0).all()


def test_jieba_words_are_masked_whole_as_the_static_writer_masks_them(tmp_path):
    pytest.importorskip("jieba", reason="needs jieba: pip install -e '.[zh]'")
    static, dynamic, *_ = _compare_with_static(
        tmp_path, ZH_CORPUS, ZH_VOCAB, 128, word_segmenter="jieba", decide_per_word=True
    )
    _assert_within_a_point(static, dynamic)
    assert dynamic["words_predicted_whole"] == 1.0
    assert dynamic["in_multi_piece_words"] > 0.5  # jieba's words: mostly several characters


def test_words_are_taken_as_the_original_takes_them():
    """The original's loop (create_masked_lm_predictions): each word in order, taken when it
    fits what is left of the budget, else skipped; against the vectorized rounds."""
    by_hand = _take_words_within_budget(
        tf.constant([[3, 2, 4, 1], [4, 3, 1, 2], [2, 2, 2, 2]]),
        tf.constant([[True] * 4, [True] * 4, [False, True, True, True]]),
        tf.constant([5, 5, 3]),
    )
    np.testing.assert_array_equal(
        by_hand.numpy(),
        [[1, 1, 0, 0], [1, 0, 1, 0], [0, 1, 0, 0]],  # 3+2; 4, skip 3, 1; invalid first word
    )
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 5, size=(64, 40))
    valid = rng.random((64, 40)) < 0.9
    budget = rng.integers(1, 21, size=64)
    expected = np.zeros_like(valid)
    for row in range(64):
        count = 0
        for word in range(40):
            if valid[row, word] and count + lengths[row, word] <= budget[row]:
                expected[row, word] = True
                count += lengths[row, word]
    taken = _take_words_within_budget(
        tf.constant(lengths, tf.int32), tf.constant(valid), tf.constant(budget, tf.int32)
    )
    np.testing.assert_array_equal(taken.numpy(), expected)


def _dynamic_records(folder, vocab, **settings):
    return _write(folder, "dynamic", CORPUS, vocab, masking="dynamic", **settings)


def test_each_epoch_masks_anew_and_the_same_epoch_alike(minilm_dir, tmp_path):
    path = _dynamic_records(tmp_path, minilm_dir / "vocab.txt", dupe_factor=2)
    info = inspect_pretraining_file(path)
    raw = _raw_records(path, unmasked_feature_spec(128))
    count = len(raw["input_ids"])
    ids = tf.constant(raw["input_ids"], tf.int32)
    mask = tf.constant(raw["input_mask"], tf.int32)

    def masks(seed, epoch):
        draws = batch_draws(
            seed, tf.fill([count], epoch), tf.zeros([count]), tf.range(count), 128, 30522
        )
        return mask_batch(ids, mask, info["recipe"], draws)["masked_lm_positions"].numpy()

    epoch0 = masks(7, 0)
    np.testing.assert_array_equal(epoch0, masks(7, 0))
    assert (epoch0 != masks(7, 1)).any(axis=1).mean() > 0.9
    assert (epoch0 != masks(8, 0)).any(axis=1).mean() > 0.9


def test_pipeline_remasks_every_epoch_and_a_resumed_pipeline_continues_the_masks(
    minilm_dir, tmp_path
):
    path = _dynamic_records(tmp_path, minilm_dir / "vocab.txt", dupe_factor=1, max_seq_length=64)
    count = sum(1 for _ in tf.data.TFRecordDataset(path))
    assert count < 48  # 96 records read below: each in two epochs or more

    def batches(skip=0):
        dataset = pretraining_dataset(path, 8, 64, 20, is_training=True, seed=5).skip(skip)
        return [{k: v.numpy() for k, v in b.items()} for b in dataset.take(12 - skip)]

    uninterrupted = batches()
    # The runner's resume: a fresh pipeline skipping the batches already read.
    for before, after in zip(uninterrupted[7:], batches(skip=7), strict=True):
        for key in before:
            np.testing.assert_array_equal(before[key], after[key], err_msg=key)
    # Every record is read in several epochs, and masked anew in each.
    seen = collections.defaultdict(set)
    for batch in uninterrupted:
        restored = restore_masked_tokens({k: tf.constant(v) for k, v in batch.items()})
        for row, text in enumerate(restored["input_word_ids"].numpy()):
            seen[text.tobytes()].add(batch["masked_lm_positions"][row].tobytes())
    assert len(seen) == count
    assert sum(len(masks) for masks in seen.values()) > 0.95 * 96


def test_parallel_writer_writes_the_same_dynamic_records(minilm_dir, tmp_path):
    vocab = str(minilm_dir / "vocab.txt")
    settings = PretrainingDataSettings(
        vocab_file=vocab, dupe_factor=2, chunk_bytes=300, masking="dynamic", do_whole_word_mask=True
    )
    outputs = {}
    for workers in (1, 2):
        path = str(tmp_path / f"w{workers}.tfrecord")
        summary = write_pretraining_examples(
            [str(CORPUS)], [path], settings, num_workers=workers, wait_for_helpers=True
        )
        outputs[workers] = open(path, "rb").read()
        assert "fraction_predicted_of_eligible" not in summary  # nothing masked yet
    assert summary["chunks_processed_in_helpers"] > 0
    assert outputs[1] == outputs[2] and outputs[1]


def test_static_records_are_unchanged_and_dynamic_ones_hold_no_masks(minilm_dir, tmp_path):
    vocab = minilm_dir / "vocab.txt"
    path = _dynamic_records(tmp_path, vocab, dupe_factor=1, use_v2_feature_names=True)
    example = tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(path))).numpy())
    assert sorted(example.features.feature) == sorted(
        [
            "input_word_ids",
            "input_mask",
            "input_type_ids",
            "next_sentence_labels",
            "masking_ids",
            "masking_probs",
        ]
    )
    recipe = inspect_pretraining_file(path)["recipe"]
    assert (recipe.mask_id, recipe.cls_id, recipe.sep_id, recipe.vocab_size) == (
        103,
        101,
        102,
        30522,
    )
    assert (recipe.masked_lm_prob, recipe.mask_token_prob, recipe.random_token_prob) == (
        0.15,
        0.8,
        0.1,
    )
    # The static spec still reads static records (the default writes them as before).
    static = _write(tmp_path, "static", CORPUS, vocab, dupe_factor=1)
    assert len(_raw_records(static, pretraining_feature_spec(128, 20))["input_ids"]) > 0


def test_bad_settings_and_mixed_files_are_clear_errors(minilm_dir, tmp_path):
    with pytest.raises(ValueError, match="max_ngram_size > 1 needs --masking=static"):
        _dynamic_records(tmp_path, minilm_dir / "vocab.txt", max_ngram_size=3)
    with pytest.raises(ValueError, match="masking must be one of"):
        PretrainingDataSettings(vocab_file="v", masking="sometimes").validate()
    path = _dynamic_records(tmp_path, minilm_dir / "vocab.txt", dupe_factor=1)
    with pytest.raises(ValueError, match="max_predictions_per_seq = 20, but"):
        pretraining_dataset(path, 8, 128, 10)
    static = _write(tmp_path, "static", CORPUS, minilm_dir / "vocab.txt", dupe_factor=1)
    with pytest.raises(RecordFileError, match="holds dynamic-masking records .* but .*static"):
        pretraining_dataset(f"{path},{static}", 8, 128, 20)


@pytest.mark.parametrize("masking", ["static", "dynamic"])
def test_more_predictions_than_positions_are_padding_as_in_the_original(
    masking, minilm_dir, tmp_path
):
    # The original's defaults with a short max_seq_length: 20 prediction slots for 8 positions.
    path = _write(
        tmp_path, masking, CORPUS, minilm_dir / "vocab.txt", max_seq_length=8, masking=masking
    )
    batch = _read_in_order(path, 8, 20)
    assert batch["masked_lm_positions"].shape == (len(batch["input_mask"]), 20)
    weights = batch["masked_lm_weights"] > 0
    counts = weights.sum(axis=1)
    # round(15% of the 5 eligible pieces) = 1 prediction each (at least 1), the rest padding.
    assert set(counts) == {1}, collections.Counter(counts)
    positions = batch["masked_lm_positions"][weights]
    assert ((positions >= 1) & (positions < 8)).all()
    assert (batch["masked_lm_positions"][~weights] == 0).all()
