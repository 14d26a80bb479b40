"""The tf.data pipeline shared by the fine-tuning readers (classifier_dataset, squad_dataset):
one TFRecord file, sharded per input pipeline, batched, then parsed a batch at a time."""

from __future__ import annotations

from collections.abc import Callable

import tensorflow as tf


def batched_records(
    input_file: str,
    parse: Callable[[tf.Tensor], dict],
    batch_size: int,
    is_training: bool,
    input_context: tf.distribute.InputContext | None = None,
    drop_remainder: bool | None = None,
    seed: int | None = None,
    shuffle_buffer_size: int = 100_000,
) -> tf.data.Dataset:
    """`parse` applied to batches of serialized records (string [per-replica batch]) of
    `input_file`.

    Training: shuffled in a buffer of `shuffle_buffer_size` with `seed`, reshuffled each pass,
    repeated. Otherwise in file order, once. With an `input_context` (a distributed dataset
    function's) each input pipeline reads every num_input_pipelines-th record and batches its
    per-replica share of the global `batch_size`. `drop_remainder` defaults to `is_training`
    (training batches are full; evaluation keeps the last short one).
    """
    dataset = tf.data.TFRecordDataset(input_file)
    if input_context is not None:
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if is_training:
        dataset = dataset.shuffle(shuffle_buffer_size, seed=seed, reshuffle_each_iteration=True)
        dataset = dataset.repeat()
    per_replica = (
        input_context.get_per_replica_batch_size(batch_size) if input_context else batch_size
    )
    if drop_remainder is None:
        drop_remainder = is_training
    dataset = dataset.batch(per_replica, drop_remainder=drop_remainder)
    return dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def trimmed_length(input_mask: tf.Tensor, max_seq_length: int) -> tf.Tensor:
    """The sequence length a batch can be cut to: its longest real example (input_mask int
    [batch, seq]) rounded up to a multiple of 8, at most max_seq_length; int32 scalar."""
    longest = tf.reduce_max(tf.reduce_sum(input_mask, axis=1))
    return tf.minimum((longest + 7) // 8 * 8, max_seq_length)
