"""Multiple-choice examples as TFRecords: every candidate packed with its context.

Features of a record (one question): input_ids, input_mask, segment_ids (int64 [num_choices *
max_seq_length]: the candidates' sequences [CLS] context [SEP] question candidate [SEP] one
after the other), choice_mask (int64 [num_choices], 1 for the slots that hold a candidate; a
question with fewer candidates leaves the rest all zeros), label_ids (int64 [1], the right
candidate's index; 0 without a label) and is_real_example (int64 [1]). The reader
(data/classification/dataset.py) gives the model [batch, num_choices, seq_length] inputs.

Pairs too long for max_seq_length are cut as the original's _truncate_seq_pair does (the longer
text loses its last wordpiece first), by the packer.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.classification.features import packing_function
from official_bert.data.multiple_choice.examples import MultipleChoiceExample

_INPUT_NAMES = {
    "input_ids": "input_word_ids",
    "input_mask": "input_mask",
    "segment_ids": "input_type_ids",
}


def multiple_choice_feature_spec(
    max_seq_length: int, num_choices: int
) -> dict[str, tf.io.FixedLenFeature]:
    """The parse spec of multiple-choice records (the inputs flat: [num_choices *
    max_seq_length])."""
    inputs = tf.io.FixedLenFeature([num_choices * max_seq_length], tf.int64)
    return {
        "input_ids": inputs,
        "input_mask": inputs,
        "segment_ids": inputs,
        "choice_mask": tf.io.FixedLenFeature([num_choices], tf.int64),
        "label_ids": tf.io.FixedLenFeature([1], tf.int64),
        "is_real_example": tf.io.FixedLenFeature([1], tf.int64),
    }


def encode_multiple_choice_examples(
    examples: list[MultipleChoiceExample],
    packer: BertInputPacker,
    labels: list[str],
    batch_size: int = 4096,
) -> dict[str, np.ndarray]:
    """Tokenizes and packs every candidate of every example.

    Args:
      examples: the questions, each with at most len(labels) candidates.
      packer: makes [CLS] context [SEP] question candidate [SEP] of max_seq_length.
      labels: the candidate indexes "0" .. num_choices - 1 (MultipleChoiceProcessor.get_labels):
        their number is the records' number of slots.
      batch_size: the (context, candidate) pairs packed at once.

    Returns:
      {"input_ids", "input_mask", "segment_ids"}: int64 [n, num_choices * max_seq_length];
      "choice_mask": int64 [n, num_choices]; "label_ids", "is_real_example": int64 [n, 1].
    """
    num_choices, length = len(labels), packer.max_seq_length
    contexts, choice_texts, slots = [], [], []
    for number, example in enumerate(examples):
        if len(example.choices) > num_choices:
            raise ValueError(
                f"example {example.guid}: {len(example.choices)} candidates, more than the "
                f"task's {num_choices}"
            )
        for slot, text in enumerate(example.choice_texts()):
            contexts.append(example.context)
            choice_texts.append(text)
            slots.append(number * num_choices + slot)
    pack = packing_function(packer, pairs=True)
    rows = {
        name: np.zeros([len(examples) * num_choices, length], np.int64) for name in _INPUT_NAMES
    }
    for start in range(0, len(slots), batch_size):
        stop = start + batch_size
        packed = pack(tf.constant(contexts[start:stop]), tf.constant(choice_texts[start:stop]))
        for name, packed_name in _INPUT_NAMES.items():
            rows[name][slots[start:stop]] = packed[packed_name].numpy()
    arrays = {
        name: value.reshape(len(examples), num_choices * length) for name, value in rows.items()
    }
    choice_mask = np.zeros([len(examples) * num_choices], np.int64)
    choice_mask[slots] = 1
    arrays["choice_mask"] = choice_mask.reshape(len(examples), num_choices)
    arrays["label_ids"] = np.array(
        [int(example.label or 0) for example in examples], np.int64
    ).reshape(-1, 1)
    arrays["is_real_example"] = np.ones([len(examples), 1], np.int64)
    return arrays
