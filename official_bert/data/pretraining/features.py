"""The TFRecord features of masked-LM + next-sentence pre-training examples."""

from __future__ import annotations

import tensorflow as tf

# Feature names of the original release, in the order it writes them.
ORIGINAL_FEATURE_NAMES = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "masked_lm_positions",
    "masked_lm_ids",
    "masked_lm_weights",
    "next_sentence_labels",
)
# The TF2 (Model Garden / TF Hub) spelling of the two that differ.
V2_RENAMES = {"input_ids": "input_word_ids", "segment_ids": "input_type_ids"}


def feature_names(use_v2_feature_names: bool = False) -> list[str]:
    """The seven feature names, original spelling or v2 (input_word_ids, input_type_ids)."""
    if use_v2_feature_names:
        return [V2_RENAMES.get(name, name) for name in ORIGINAL_FEATURE_NAMES]
    return list(ORIGINAL_FEATURE_NAMES)


def pretraining_feature_spec(
    max_seq_length: int, max_predictions_per_seq: int, use_v2_feature_names: bool = False
) -> dict[str, tf.io.FixedLenFeature]:
    """The parse spec of the original run_pretraining.py input_fn (same shapes and dtypes)."""
    names = dict(zip(ORIGINAL_FEATURE_NAMES, feature_names(use_v2_feature_names), strict=True))
    shapes = {
        "input_ids": ([max_seq_length], tf.int64),
        "input_mask": ([max_seq_length], tf.int64),
        "segment_ids": ([max_seq_length], tf.int64),
        "masked_lm_positions": ([max_predictions_per_seq], tf.int64),
        "masked_lm_ids": ([max_predictions_per_seq], tf.int64),
        "masked_lm_weights": ([max_predictions_per_seq], tf.float32),
        "next_sentence_labels": ([1], tf.int64),
    }
    return {
        names[name]: tf.io.FixedLenFeature(shape, dtype) for name, (shape, dtype) in shapes.items()
    }


# === Dynamic-masking records (create_pretraining_data.py --masking=dynamic) ===
# The instance unmasked (input_ids, input_mask, segment_ids, next_sentence_labels, as above),
# and what the input pipeline masks it with, so that run_pretraining.py needs no vocab file.
WORD_STARTS = "word_starts"  # int64 [max_seq_length]: 1 at the first piece of every word
# int64 [6]: [MASK], [CLS] and [SEP] ids, vocab size, max_predictions_per_seq, decide_per_word.
MASKING_IDS = "masking_ids"
# float [3]: masked_lm_prob, mask_token_prob, random_token_prob (the rest stay unchanged).
MASKING_PROBS = "masking_probs"
UNMASKED_FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids", "next_sentence_labels")


def unmasked_feature_spec(
    max_seq_length: int, use_v2_feature_names: bool = False, word_starts: bool = False
) -> dict[str, tf.io.FixedLenFeature]:
    """The parse spec of dynamic-masking records: the unmasked instance, the masking recipe and,
    for whole-word masking, the word starts."""
    spec = {
        name: tf.io.FixedLenFeature([max_seq_length], tf.int64)
        for name in ("input_ids", "input_mask", "segment_ids")
    }
    spec["next_sentence_labels"] = tf.io.FixedLenFeature([1], tf.int64)
    if use_v2_feature_names:
        spec = {V2_RENAMES.get(name, name): value for name, value in spec.items()}
    spec[MASKING_IDS] = tf.io.FixedLenFeature([6], tf.int64)
    spec[MASKING_PROBS] = tf.io.FixedLenFeature([3], tf.float32)
    if word_starts:
        spec[WORD_STARTS] = tf.io.FixedLenFeature([max_seq_length], tf.int64)
    return spec
