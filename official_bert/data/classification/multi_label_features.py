"""Multi-label classification records: the texts packed as for one label, and the label field
holding the example's label set as a multi-hot vector.

Features: input_ids, input_mask, segment_ids (int64 [max_seq_length]), label_ids (int64
[num_labels]: 1 for each label of the example, 0 for the others; all 0 for an example with no
label or an unlabeled test row) and is_real_example (int64 [1]). classifier_dataset reads the
label width from the first record, so the same reader serves both kinds of record.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.classification.data_processor import ClassifierExample
from official_bert.data.classification.features import encode_classifier_examples


def multi_hot_labels(label_sets: list[tuple[str, ...]], labels: list[str]) -> np.ndarray:
    """int64 [len(label_sets), len(labels)]: row i has 1 at the index (in `labels`) of each
    label of label_sets[i]. A name outside `labels` raises ValueError (the processor checks
    train and dev rows first, naming their file and line)."""
    index = {label: position for position, label in enumerate(labels)}
    indicators = np.zeros([len(label_sets), len(labels)], np.int64)
    for row, label_set in enumerate(label_sets):
        for name in label_set:
            if name not in index:
                raise ValueError(f"label {name!r} is not one of {labels}")
            indicators[row, index[name]] = 1
    return indicators


def multi_label_encoder(label_set: Callable[[str | None], tuple[str, ...]]):
    """The `encode_examples(examples, packer, labels)` of multi-label records (see
    prepare_classifier_records); `label_set` splits an example's label field into its labels
    (GenericProcessor.label_set).

    The returned function gives encode_classifier_examples' arrays with "label_ids" int64
    [n, num_labels] multi-hot. Names outside `labels` are left out: the processor has already
    refused them in train and dev rows (naming file and line), and a test file's labels are
    never scored.
    """

    def encode(
        examples: list[ClassifierExample], packer: BertInputPacker, labels: list[str]
    ) -> dict[str, np.ndarray]:
        # The single-label ids encode_classifier_examples makes are replaced below.
        arrays = encode_classifier_examples(examples, packer, labels)
        known = set(labels)
        label_sets = [
            tuple(name for name in label_set(example.label) if name in known)
            for example in examples
        ]
        arrays["label_ids"] = multi_hot_labels(label_sets, labels)
        return arrays

    return encode
