"""batched_records / trimmed_length: the pipeline the fine-tuning readers share."""

import numpy as np
import tensorflow as tf

from official_bert.data.record_batches import batched_records, trimmed_length


def _write_numbered_records(path, count):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(count):
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={"n": tf.train.Feature(int64_list=tf.train.Int64List(value=[i]))}
                )
            )
            writer.write(example.SerializeToString())


def _parse(records):
    return tf.io.parse_example(records, {"n": tf.io.FixedLenFeature([], tf.int64)})


def test_evaluation_reads_in_order_once_and_keeps_the_short_last_batch(tmp_path):
    path = tmp_path / "r.tfrecord"
    _write_numbered_records(path, 10)
    batches = [b["n"].numpy().tolist() for b in batched_records(str(path), _parse, 4, False)]
    assert batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_training_shuffles_repeats_and_keeps_batches_full(tmp_path):
    path = tmp_path / "r.tfrecord"
    _write_numbered_records(path, 10)
    dataset = batched_records(str(path), _parse, 4, True, seed=3, shuffle_buffer_size=10)
    batches = [b["n"].numpy() for b in dataset.take(10)]  # 40 records: four passes
    assert all(len(b) == 4 for b in batches)
    values = np.concatenate(batches)
    first_pass, second_pass = values[:10].tolist(), values[10:20].tolist()
    assert sorted(first_pass) == list(range(10))  # each pass holds every record once
    assert first_pass != list(range(10))  # shuffled
    assert second_pass != first_pass  # and reshuffled each pass
    assert np.bincount(values, minlength=10).tolist() == [4] * 10


def test_input_context_shards_records_and_batches_the_replica_share(tmp_path):
    path = tmp_path / "r.tfrecord"
    _write_numbered_records(path, 12)
    seen = []
    for pipeline in range(2):
        context = tf.distribute.InputContext(
            num_input_pipelines=2, input_pipeline_id=pipeline, num_replicas_in_sync=2
        )
        batches = [
            b["n"].numpy().tolist() for b in batched_records(str(path), _parse, 6, False, context)
        ]
        assert all(len(b) == 3 for b in batches)  # global batch 6 over 2 replicas
        seen.append(sum(batches, []))
    assert seen == [[0, 2, 4, 6, 8, 10], [1, 3, 5, 7, 9, 11]]


def test_trimmed_length_rounds_up_to_eight_and_caps_at_max_seq_length():
    mask = tf.constant([[1] * 9 + [0] * 23, [1] * 3 + [0] * 29])
    assert int(trimmed_length(mask, 32)) == 16
    assert int(trimmed_length(tf.ones([2, 30], tf.int32), 30)) == 30
