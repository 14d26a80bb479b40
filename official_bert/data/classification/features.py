"""Classification examples as TFRecords with the original run_classifier.py features.

Features (as `file_based_convert_examples_to_features`): input_ids, input_mask, segment_ids
(int64 [max_seq_length]), label_ids (int64 [1]; float [1] for regression tasks, which the
original lacked) and is_real_example (int64 [1], 0 for the padding examples a TPU needs to fill
the last batch).

Long documents (run_classifier.py --doc_stride, `encode_classifier_windows`): an example longer
than max_seq_length becomes overlapping windows (data/document_windows.py), one record each,
all with the example's label, and the records add example_index (int64 [1], the example's index
in its split) so that the windows' predictions can be combined per example.
"""

from __future__ import annotations

import dataclasses
import os
import time
import weakref

import numpy as np
import tensorflow as tf
from absl import logging

from official_bert.atomic_output import atomic_output
from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.classification.data_processor import ClassifierExample, DataProcessor
from official_bert.data.completed_outputs import (
    file_signature,
    read_completed_summary,
    remove_if_exists,
    write_summary,
)
from official_bert.data.document_windows import text_windows
from official_bert.data.example_encoding import ExampleEncoder
from official_bert.data.tagging.examples import TaggingProcessor
from official_bert.side_file_names import summary_path

# Bumped when what is written for the same inputs changes, so cached files are redone.
_FORMAT_VERSION = 1


def classifier_feature_spec(
    max_seq_length: int,
    is_regression: bool = False,
    label_width: int = 1,
    is_windowed: bool = False,
) -> dict[str, tf.io.FixedLenFeature]:
    """The parse spec of the original run_classifier.py input_fn (float labels for regression;
    `label_width` multi-hot labels for multi-label records, data/classification/
    multi_label_features.py; example_index for the windows of long documents)."""
    spec = {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "label_ids": tf.io.FixedLenFeature(
            [label_width], tf.float32 if is_regression else tf.int64
        ),
        "is_real_example": tf.io.FixedLenFeature([1], tf.int64),
    }
    if is_windowed:
        spec["example_index"] = tf.io.FixedLenFeature([1], tf.int64)
    return spec


# The packer's graph, traced once per packer and arity: a run packs its train, eval and predict
# splits with one packer, and tracing the tokenizer's ops takes most of a small split's time.
# Weak keys and a weak reference inside: a packer's functions go when the packer does.
_PACKING_FUNCTIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def packing_function(packer: BertInputPacker, pairs: bool):
    """`packer` as a tf.function of string vectors [batch]: (text_a, text_b) or (text_a,)."""
    functions = _PACKING_FUNCTIONS.setdefault(packer, {})
    if pairs not in functions:
        packer_ref = weakref.ref(packer)
        functions[pairs] = tf.function(
            lambda *texts: packer_ref()(*texts),
            input_signature=[tf.TensorSpec([None], tf.string)] * (2 if pairs else 1),
            autograph=False,
        )
    return functions[pairs]


def encode_classifier_examples(
    examples: list[ClassifierExample],
    packer: BertInputPacker,
    labels: list[str] | None,
    batch_size: int = 2048,
) -> dict[str, np.ndarray]:
    """Tokenizes and packs examples in batches.

    Args:
      examples: the examples; all with text_b or all without.
      packer: makes [CLS] A [SEP] (B [SEP]) of max_seq_length.
      labels: the label names (index = label id), or None for regression (float labels).
        Examples without a label (test sets) get label 0.

    Returns:
      {"input_ids", "input_mask", "segment_ids"}: int64 [n, max_seq_length];
      "label_ids": int64 [n, 1] (float32 for regression); "is_real_example": int64 [n, 1] ones.
    """
    has_pairs = {example.text_b is not None for example in examples}
    if len(has_pairs) > 1:
        raise ValueError("examples mix single texts and pairs; a task must use one or the other")
    pairs = has_pairs == {True}
    pack = packing_function(packer, pairs)
    columns = {"input_ids": [], "input_mask": [], "segment_ids": []}
    for start in range(0, len(examples), batch_size):
        batch = examples[start : start + batch_size]
        texts = [[example.text_a for example in batch]]
        if pairs:
            texts.append([example.text_b for example in batch])
        packed = pack(*[tf.constant(text) for text in texts])
        columns["input_ids"].append(packed["input_word_ids"].numpy())
        columns["input_mask"].append(packed["input_mask"].numpy())
        columns["segment_ids"].append(packed["input_type_ids"].numpy())
    length = packer.max_seq_length
    arrays = {
        name: np.concatenate(parts).astype(np.int64) if parts else np.zeros([0, length], np.int64)
        for name, parts in columns.items()
    }
    arrays["label_ids"] = _label_ids(examples, labels)
    arrays["is_real_example"] = np.ones([len(examples), 1], np.int64)
    return arrays


def _label_ids(examples: list[ClassifierExample], labels: list[str] | None) -> np.ndarray:
    """int64 [n, 1] label ids (float32 scores for regression, labels None); 0 for no label."""
    if labels is None:
        label_ids = [
            float(example.label) if example.label is not None else 0.0 for example in examples
        ]
        return np.asarray(label_ids, np.float32).reshape(-1, 1)
    label_map = {label: index for index, label in enumerate(labels)}
    label_ids = [label_map.get(example.label, 0) for example in examples]
    return np.asarray(label_ids, np.int64).reshape(-1, 1)


def encode_classifier_windows(
    examples: list[ClassifierExample],
    packer: BertInputPacker,
    labels: list[str] | None,
    doc_stride: int,
    batch_size: int = 50_000,
) -> dict[str, np.ndarray]:
    """`encode_classifier_examples` for long documents: each example becomes its windows
    (document_windows.text_windows: a single text windowed whole; of a pair, text_a repeated
    in every window and text_b windowed), `doc_stride` wordpieces apart, in example order.

    Every window is a record with the example's label: in training each window is an example
    of its own (a window may lack the words that decide the label, as a crop of an image may;
    the combined prediction at eval time is what is measured).

    Returns encode_classifier_examples' arrays with one row per window, and "example_index"
    int64 [windows, 1].

    Raises:
      ValueError: a pair whose text_a leaves no room for text_b (naming the example's guid).
    """
    tokenizer = packer.tokenizer
    ids, splits = tokenizer.tokenize_in_batches(
        [example.text_a for example in examples], batch_size
    )
    pieces_a = [ids[splits[i] : splits[i + 1]] for i in range(len(examples))]
    pairs = [index for index, example in enumerate(examples) if example.text_b is not None]
    if pairs and len(pairs) != len(examples):
        raise ValueError("examples mix single texts and pairs; a task must use one or the other")
    pieces_b = []
    if pairs:
        ids, splits = tokenizer.tokenize_in_batches(
            [examples[index].text_b for index in pairs], batch_size
        )
        pieces_b = [ids[splits[i] : splits[i + 1]] for i in range(len(pairs))]
    segments_a, segments_b, example_index = [], [], []
    for index, example in enumerate(examples):
        a = pieces_a[index]
        b = pieces_b[index] if pairs else None
        windows = text_windows(
            len(a),
            None if b is None else len(b),
            packer.max_seq_length,
            doc_stride,
            where=f"example {example.guid}",
        )
        for window in windows:
            if b is None:
                segments_a.append(a[window.start : window.start + window.length])
            else:
                segments_a.append(a)
                segments_b.append(b[window.start : window.start + window.length])
            example_index.append(index)
    # Each window fits max_seq_length, so the packer trims nothing.
    packed = packer.pack_id_arrays([segments_a, segments_b] if pairs else [segments_a])
    arrays = {
        "input_ids": packed["input_word_ids"].astype(np.int64),
        "input_mask": packed["input_mask"].astype(np.int64),
        "segment_ids": packed["input_type_ids"].astype(np.int64),
    }
    example_index = np.asarray(example_index, np.int64)
    arrays["label_ids"] = _label_ids(examples, labels)[example_index]
    arrays["is_real_example"] = np.ones([len(example_index), 1], np.int64)
    arrays["example_index"] = example_index.reshape(-1, 1)
    return arrays


def pad_to_multiple(arrays: dict[str, np.ndarray], multiple: int) -> dict[str, np.ndarray]:
    """Appends all-zero examples (is_real_example = 0) up to a multiple of `multiple`, as the
    original's PaddingInputExample: a TPU needs every batch full."""
    count = len(arrays["input_ids"])
    missing = -count % multiple
    if missing == 0:
        return arrays
    return {
        name: np.concatenate([value, np.zeros((missing, *value.shape[1:]), value.dtype)])
        for name, value in arrays.items()
    }


def write_classifier_records(arrays: dict[str, np.ndarray], path: str) -> None:
    """Writes the examples of `encode_classifier_examples` (or `encode_tagged_sentences`) to a
    TFRecord file at `path`, under a temporary name renamed when complete.

    arrays: name -> [num_examples, length]; integer arrays become int64 features, float arrays
    float features (written after the int ones, each group in the dict's order).
    """
    int_names = [name for name, value in arrays.items() if value.dtype.kind in "iub"]
    float_names = [name for name, value in arrays.items() if value.dtype.kind == "f"]
    encoder = ExampleEncoder(int_names, float_names)
    with atomic_output(path) as temporary, tf.io.TFRecordWriter(temporary) as writer:
        for start in range(0, len(arrays["input_ids"]), 4096):
            chunk = {name: value[start : start + 4096] for name, value in arrays.items()}
            for record in encoder.encode(chunk):
                writer.write(record)


@dataclasses.dataclass(frozen=True)
class ClassifierRecords:
    """A TFRecord file of one split: `path`, `num_examples` (with padding) and
    `num_real_examples`."""

    path: str
    num_examples: int
    num_real_examples: int


def prepare_classifier_records(
    processor: DataProcessor | TaggingProcessor,
    split: str,
    packer: BertInputPacker,
    path: str,
    vocab_file: str,
    pad_to_multiple_of: int = 1,
    max_examples: int = 0,
    encode_examples=encode_classifier_examples,
    doc_stride: int | None = None,
) -> ClassifierRecords:
    """The TFRecords of one split at `path`, written unless an earlier run left them complete
    for the same data file, vocabulary, casing, max_seq_length, task settings and padding.

    `max_examples` > 0 keeps only the first examples of the split (a fixed subset).
    `encode_examples(examples, packer, labels)` makes the arrays: encode_classifier_examples,
    tagging_features.encode_tagged_sentences for a TaggingProcessor (whose sentences may take
    several records each: `num_real_examples` counts records, not sentences), or
    encode_multiple_choice_examples for a MultipleChoiceProcessor (a record per question). With
    `doc_stride`, long examples become windows: encode_examples is called with
    doc_stride=doc_stride (encode_classifier_windows for classification) and the counts are of
    windows.

    The summary `.<name>.summary.json` beside it is written last, so an interrupted run is
    redone.
    """
    source = processor.split_path(split)
    if not tf.io.gfile.exists(source):
        task_name = getattr(processor, "task_name", None) or type(processor).__name__
        raise FileNotFoundError(
            f"{source} not found: the {task_name} task reads the {split} split from "
            f"{os.path.basename(source)} in its data folder (--data_dir; run_multitask.py: "
            "--data_dirs)"
        )
    settings = {
        "format_version": _FORMAT_VERSION,
        "split": split,
        "source": [source, *file_signature(source)],
        "vocab": [vocab_file, *file_signature(vocab_file)],
        "do_lower_case": packer.tokenizer.do_lower_case,
        "max_seq_length": packer.max_seq_length,
        "task": processor.settings(),
        "pad_to_multiple_of": pad_to_multiple_of,
        "max_examples": max_examples,
    }
    if doc_stride is not None:  # only then: the summaries of earlier runs stay valid
        settings["doc_stride"] = doc_stride
    if packer.tokenizer.preserve_unused_tokens:  # the same
        settings["preserve_unused_tokens"] = True
    summary_file = summary_path(path)  # `.NAME.summary.json`: no glob of the records reads it
    summary = read_completed_summary(summary_file, [path], settings)
    if summary is not None:
        logging.info("Reusing %s (%d examples of %s)", path, summary["num_examples"], source)
        return ClassifierRecords(path, summary["num_examples"], summary["num_real_examples"])
    remove_if_exists(summary_file)
    start = time.time()
    examples = processor.get_examples(split)
    if max_examples:
        examples = examples[:max_examples]
    if not examples:
        raise ValueError(f"{source} holds no examples")
    if doc_stride is None:
        arrays = encode_examples(examples, packer, processor.get_labels())
    else:
        arrays = encode_examples(examples, packer, processor.get_labels(), doc_stride=doc_stride)
    num_real_examples = len(arrays["input_ids"])
    arrays = pad_to_multiple(arrays, pad_to_multiple_of)
    write_classifier_records(arrays, path)
    num_examples = len(arrays["input_ids"])
    write_summary(
        summary_file,
        {
            "settings": settings,
            "output_files": [path],
            "num_examples": num_examples,
            "num_real_examples": num_real_examples,
        },
    )
    logging.info(
        "Wrote %s: %d examples (%d real) of %s in %.1f s",
        path,
        num_examples,
        num_real_examples,
        source,
        time.time() - start,
    )
    return ClassifierRecords(path, num_examples, num_real_examples)
