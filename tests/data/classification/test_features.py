"""Classification TFRecords: the original features, caching, padding, and the tf.data reader."""

import os

import numpy as np
import pytest
import tensorflow as tf

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.classification.dataset import classifier_dataset
from official_bert.data.classification.examples import get_processor
from official_bert.data.classification.features import prepare_classifier_records
from tests.conftest import SHARED

GLUE = SHARED / "data" / "glue"

# The parse spec of the original run_classifier.py file_based_input_fn_builder.
ORIGINAL_SPEC = {
    "input_ids": tf.io.FixedLenFeature([64], tf.int64),
    "input_mask": tf.io.FixedLenFeature([64], tf.int64),
    "segment_ids": tf.io.FixedLenFeature([64], tf.int64),
    "label_ids": tf.io.FixedLenFeature([], tf.int64),
    "is_real_example": tf.io.FixedLenFeature([], tf.int64),
}


@pytest.fixture(scope="module")
def packer(minilm_dir):
    return BertInputPacker(str(minilm_dir / "vocab.txt"), 64)


def _mrpc():
    if not (GLUE / "MRPC").exists():
        pytest.skip(f"not present: {GLUE / 'MRPC'}")
    return get_processor("mrpc", str(GLUE / "MRPC"))


def test_records_parse_with_the_original_spec(tmp_path, packer, minilm_dir):
    processor = _mrpc()
    path = str(tmp_path / "eval.tf_record")
    records = prepare_classifier_records(
        processor, "dev", packer, path, str(minilm_dir / "vocab.txt")
    )
    assert (records.num_examples, records.num_real_examples) == (408, 408)
    examples = processor.get_examples("dev")
    parsed = [
        tf.io.parse_single_example(record, ORIGINAL_SPEC)
        for record in tf.data.TFRecordDataset(path)
    ]
    assert len(parsed) == 408
    first = packer(tf.constant([examples[0].text_a]), tf.constant([examples[0].text_b]))
    np.testing.assert_array_equal(parsed[0]["input_ids"].numpy(), first["input_word_ids"][0])
    np.testing.assert_array_equal(parsed[0]["segment_ids"].numpy(), first["input_type_ids"][0])
    labels = [int(p["label_ids"]) for p in parsed]
    assert labels == [int(example.label) for example in examples]
    assert all(int(p["is_real_example"]) == 1 for p in parsed)


def test_cached_records_are_reused_until_an_input_or_setting_changes(tmp_path, packer, minilm_dir):
    processor = _mrpc()
    vocab = str(minilm_dir / "vocab.txt")
    path = str(tmp_path / "train.tf_record")
    prepare_classifier_records(processor, "dev", packer, path, vocab)
    first_mtime = os.stat(path).st_mtime_ns
    prepare_classifier_records(processor, "dev", packer, path, vocab)
    assert os.stat(path).st_mtime_ns == first_mtime  # reused
    padded = prepare_classifier_records(
        processor, "dev", packer, path, vocab, pad_to_multiple_of=64
    )
    assert os.stat(path).st_mtime_ns != first_mtime  # another setting: rewritten
    assert (padded.num_examples, padded.num_real_examples) == (448, 408)
    real = [
        int(tf.io.parse_single_example(r, ORIGINAL_SPEC)["is_real_example"])
        for r in tf.data.TFRecordDataset(path)
    ]
    assert sum(real) == 408 and real[-40:] == [0] * 40

    # An edited data file (same size and all) makes the records stale.
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    source = data_dir / "dev.tsv"
    source.write_bytes((GLUE / "MRPC" / "dev.tsv").read_bytes())
    local = get_processor("mrpc", str(data_dir))
    second = str(tmp_path / "local.tf_record")
    prepare_classifier_records(local, "dev", packer, second, vocab)
    mtime = os.stat(second).st_mtime_ns
    os.utime(source, ns=(source.stat().st_atime_ns, source.stat().st_mtime_ns + 10**9))
    prepare_classifier_records(local, "dev", packer, second, vocab)
    assert os.stat(second).st_mtime_ns != mtime


def test_an_interrupted_write_leaves_nothing_that_looks_complete(
    tmp_path, packer, minilm_dir, monkeypatch
):
    processor = _mrpc()
    path = str(tmp_path / "eval.tf_record")

    def failing_rename(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(tf.io.gfile, "rename", failing_rename)
    with pytest.raises(OSError, match="disk full"):
        prepare_classifier_records(processor, "dev", packer, path, str(minilm_dir / "vocab.txt"))
    assert os.listdir(tmp_path) == []


def test_regression_labels_are_floats_and_the_reader_trims_padding(tmp_path, packer, minilm_dir):
    if not (GLUE / "STS-B").exists():
        pytest.skip(f"not present: {GLUE / 'STS-B'}")
    processor = get_processor("sts-b", str(GLUE / "STS-B"))
    path = str(tmp_path / "eval.tf_record")
    prepare_classifier_records(processor, "dev", packer, path, str(minilm_dir / "vocab.txt"))
    full = next(iter(classifier_dataset(path, 16, 64, is_training=False)))
    assert full["input_word_ids"].shape == (16, 64)
    assert full["label_ids"].dtype == tf.float32
    expected = [float(e.label) for e in processor.get_examples("dev")[:16]]
    np.testing.assert_allclose(full["label_ids"].numpy(), expected, rtol=1e-6)
    trimmed = next(iter(classifier_dataset(path, 16, 64, is_training=False, trim_padding=True)))
    length = trimmed["input_word_ids"].shape[1]
    longest = int(tf.reduce_max(tf.reduce_sum(full["input_mask"], 1)))
    assert length % 8 == 0 and longest <= length < longest + 8
    np.testing.assert_array_equal(trimmed["input_word_ids"], full["input_word_ids"][:, :length])
    assert int(tf.reduce_sum(full["input_mask"][:, length:])) == 0


def test_reader_refuses_records_of_another_length(tmp_path, packer, minilm_dir):
    processor = _mrpc()
    path = str(tmp_path / "eval.tf_record")
    prepare_classifier_records(processor, "dev", packer, path, str(minilm_dir / "vocab.txt"))
    with pytest.raises(ValueError, match="max_seq_length 64, but --max_seq_length=128"):
        classifier_dataset(path, 8, 128, is_training=False)


def test_trimmed_batches_give_the_same_logits(tmp_path, minilm_dir):
    from official_bert.models import BertClassifier, BertEncoder

    processor = _mrpc()
    path = str(tmp_path / "eval.tf_record")
    vocab = str(minilm_dir / "vocab.txt")
    prepare_classifier_records(processor, "dev", BertInputPacker(vocab, 128), path, vocab)
    model = BertClassifier(
        BertEncoder(
            vocab_size=30522,
            hidden_size=32,
            num_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=128,
        ),
        num_classes=2,
    )
    model.build()
    full = classifier_dataset(path, 8, 128, is_training=False).take(10)
    trimmed = classifier_dataset(path, 8, 128, is_training=False, trim_padding=True).take(10)
    lengths = []
    for full_batch, trimmed_batch in zip(full, trimmed, strict=True):
        lengths.append(trimmed_batch["input_word_ids"].shape[1])
        np.testing.assert_allclose(model(trimmed_batch), model(full_batch), atol=1e-5)
    assert max(lengths) < 128, lengths
