"""tf.data input of classification TFRecords (the original run_classifier.py features), of
token tagging TFRecords (data/tagging/features.py) and of multiple-choice TFRecords
(data/multiple_choice/features.py)."""

from __future__ import annotations

import tensorflow as tf

from official_bert.data.classification.features import classifier_feature_spec
from official_bert.data.multiple_choice.features import multiple_choice_feature_spec
from official_bert.data.record_batches import batched_records, trimmed_length
from official_bert.data.record_files import first_record
from official_bert.data.tagging.features import tagging_feature_spec

# Model input names by original feature name.
_MODEL_NAMES = {
    "input_ids": "input_word_ids",
    "input_mask": "input_mask",
    "segment_ids": "input_type_ids",
    "label_ids": "label_ids",
    "is_real_example": "is_real_example",
}
# What tagging records hold besides (label_ids is per token there).
_TAGGING_NAMES = ("label_weights", "sentence_index")


def inspect_classifier_file(path: str) -> dict:
    """{"max_seq_length", "is_regression", "is_tagging", "label_width", "is_windowed",
    "num_choices"} of a classification, tagging or multiple-choice TFRecord file, from its first
    record (num_choices 0 but for multiple-choice records, whose max_seq_length is that of one
    candidate's sequence); a file of another kind raises ValueError naming the missing
    features."""
    features = tf.train.Example.FromString(first_record(path)).features.feature
    missing = [name for name in _MODEL_NAMES if name not in features]
    if missing:
        raise ValueError(
            f"{path}: not a classification file: features {missing} are missing (found "
            f"{sorted(features)})"
        )
    is_tagging = all(name in features for name in _TAGGING_NAMES)
    label_ids = features["label_ids"]
    num_choices = len(features["choice_mask"].int64_list.value) if "choice_mask" in features else 0
    return {
        "max_seq_length": len(features["input_ids"].int64_list.value) // max(num_choices, 1),
        "is_regression": bool(label_ids.float_list.value),
        "is_tagging": is_tagging,
        # Classification: 1, or num_labels for multi-hot (multi-label) records.
        "label_width": len(label_ids.int64_list.value or label_ids.float_list.value),
        "is_windowed": "example_index" in features,
        "num_choices": num_choices,
    }


def classifier_dataset(
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
    """Batches of classification examples.

    Training: records shuffled (a buffer of `shuffle_buffer_size`, by default the whole of any
    GLUE task; the original's 100 left batches ordered as the file), reshuffled each pass,
    repeated, batches full. Evaluation and prediction: in file order, once.

    `trim_padding` cuts each batch's sequences to its longest real example (rounded up to a
    multiple of 8, at most max_seq_length). The encoder's outputs at real positions do not depend
    on padding, so results are the same while short-sentence tasks (SST-2, CoLA) run several times
    faster; the sequence dimension becomes dynamic, so leave it off on TPUs.

    Returns dict batches: input_word_ids, input_mask, input_type_ids (int32 [batch,
    max_seq_length], or [batch, None] with trim_padding), label_ids ([batch] int32, float32 for
    regression; multi-hot int32 [batch, num_labels] for multi-label records, never trimmed),
    is_real_example ([batch] float32, a weight), and for the windows of long documents
    example_index ([batch] int32). Tagging records: label_ids int32 and label_weights float32
    [batch, max_seq_length] (trimmed as the inputs), sentence_index int32 [batch].
    Multiple-choice records: the inputs int32 [batch, num_choices, max_seq_length] (trimmed on
    the last axis), choice_mask int32 [batch, num_choices].

    `vocab_size` (the model's): batches with input_word_ids not below it fail, naming the file.

    Raises:
      RecordFileError: the file is empty, a side file or not TFRecords (record_files).
      ValueError: the file's sequence length differs from `max_seq_length` (naming both).
    """
    info = inspect_classifier_file(input_file)
    if info["max_seq_length"] != max_seq_length:
        raise ValueError(
            f"{input_file} holds examples of max_seq_length {info['max_seq_length']}, but "
            f"--max_seq_length={max_seq_length}; delete it to have it rewritten, or pass "
            f"--max_seq_length={info['max_seq_length']}"
        )
    num_choices = info["num_choices"]
    if info["is_tagging"]:
        spec = tagging_feature_spec(max_seq_length)
    elif num_choices:
        spec = multiple_choice_feature_spec(max_seq_length, num_choices)
    else:
        spec = classifier_feature_spec(
            max_seq_length, info["is_regression"], info["label_width"], info["is_windowed"]
        )
    # Cut with trim_padding: the inputs, and the per-token labels of tagging (never the
    # multi-hot labels of multi-label records, [batch, num_labels]).
    per_token = {"input_ids", "input_mask", "segment_ids"}
    if info["is_tagging"]:
        per_token.update(spec.keys() - {"is_real_example", "sentence_index"})

    def parse(records):
        parsed = tf.io.parse_example(records, spec)
        if num_choices:  # each candidate's sequence a row of its own: [batch, choices, seq]
            parsed = {
                name: tf.reshape(value, [-1, num_choices, max_seq_length])
                if name in per_token
                else value
                for name, value in parsed.items()
            }
        if trim_padding:
            mask = parsed["input_mask"]
            length = trimmed_length(tf.reshape(mask, [-1, max_seq_length]), max_seq_length)
            parsed = {
                name: value[..., :length] if name in per_token else value
                for name, value in parsed.items()
            }
        batch = {}
        for name, value in parsed.items():
            if value.shape[-1] == 1 and name != "choice_mask":  # label_ids, is_real_example
                value = tf.squeeze(value, -1)
            if name == "is_real_example":
                value = tf.cast(value, tf.float32)
            elif value.dtype == tf.int64:  # int64 is not supported on TPU
                value = tf.cast(value, tf.int32)
            batch[_MODEL_NAMES.get(name, name)] = value
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
