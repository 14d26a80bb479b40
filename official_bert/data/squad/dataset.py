"""tf.data input of SQuAD TFRecords (the original run_squad.py features)."""

from __future__ import annotations

import tensorflow as tf

from official_bert.data.record_batches import batched_records, trimmed_length
from official_bert.data.record_files import first_record
from official_bert.data.squad.features import squad_feature_spec

# Model input names by original feature name; the rest keep their names.
_MODEL_NAMES = {
    "input_ids": "input_word_ids",
    "input_mask": "input_mask",
    "segment_ids": "input_type_ids",
}


def inspect_squad_file(path: str) -> tuple[int, bool]:
    """(max_seq_length, whether it holds training labels) of a SQuAD TFRecord file, from its
    first record; a file of another kind raises ValueError naming the missing features."""
    features = tf.train.Example.FromString(first_record(path)).features.feature
    missing = [name for name in ("unique_ids", *_MODEL_NAMES) if name not in features]
    if missing:
        raise ValueError(
            f"{path}: not a SQuAD file: features {missing} are missing (found {sorted(features)})"
        )
    return len(features["input_ids"].int64_list.value), "start_positions" in features


def squad_dataset(
    input_file: str,
    batch_size: int,
    max_seq_length: int,
    is_training: bool,
    input_context: tf.distribute.InputContext | None = None,
    drop_remainder: bool | None = None,
    seed: int | None = None,
    shuffle_buffer_size: int = 100_000,
    trim_padding: bool = False,
    vocab_size: int | None = None,
) -> tf.data.Dataset:
    """Batches of SQuAD features.

    Training: shuffled (the original's buffer of 100 left windows of one article together),
    reshuffled each pass, repeated, batches full. Otherwise: in file order, once.

    `trim_padding` (training only makes sense: predictions are gathered over batches of one
    length) cuts each batch to its longest window rounded up to a multiple of 8. Answer
    positions always lie inside the real tokens, but the loss changes: the span softmax of the
    original's loss runs over every position, the padding included.

    Returns dict batches: input_word_ids, input_mask, input_type_ids (int32 [batch,
    max_seq_length]), unique_ids (int64 [batch]); a training file adds start_positions,
    end_positions, is_impossible (int32 [batch]).

    `vocab_size` (the model's): batches with input_word_ids not below it fail, naming the file.

    Raises:
      RecordFileError: the file is empty, a side file or not TFRecords (record_files).
      ValueError: the file's sequence length differs from max_seq_length (naming both).
    """
    found, has_labels = inspect_squad_file(input_file)
    if found != max_seq_length:
        raise ValueError(
            f"{input_file} holds features of max_seq_length {found}, but "
            f"--max_seq_length={max_seq_length}; delete it to have it rewritten, or pass "
            f"--max_seq_length={found}"
        )
    spec = squad_feature_spec(max_seq_length, has_labels)

    def parse(records):
        parsed = tf.io.parse_example(records, spec)
        batch = {}
        for name, value in parsed.items():
            # unique_ids are only carried through to post-processing; the model's inputs and
            # labels become int32, as TPUs need.
            if name != "unique_ids":
                value = tf.cast(value, tf.int32)
            batch[_MODEL_NAMES.get(name, name)] = value
        if trim_padding:
            length = trimmed_length(batch["input_mask"], max_seq_length)
            for name in _MODEL_NAMES.values():
                batch[name] = batch[name][:, :length]
        return batch

    return batched_records(
        input_file,
        parse,
        batch_size,
        is_training,
        input_context,
        drop_remainder,
        seed,
        shuffle_buffer_size,
        vocab_size,
    )
