"""The tf.data pipeline shared by the fine-tuning readers (classifier_dataset, squad_dataset):
one TFRecord file, checked, sharded per input pipeline, batched, then parsed a batch at a time;
and the token-id check every reader applies to its parsed batches."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import tensorflow as tf

from official_bert.data.record_files import check_record_files

# How check_token_ids' message begins: script_main reports the check's failure, which reaches
# the script as a TensorFlow InvalidArgumentError of the input pipeline, as an input error.
TOKEN_ID_CHECK = "token ids beyond the model's vocabulary"


@tf.autograph.experimental.do_not_convert  # Python loops over names only
def check_token_ids(
    batch: dict,
    vocab_size: int,
    sources: str | tf.Tensor,
    names: Sequence[str] = ("input_word_ids",),
) -> dict:
    """`batch` unchanged, once its token ids (int [batch, ...] under `names`) are known to be in
    [0, vocab_size); else InvalidArgumentError naming the largest id, vocab_size and a file
    with such ids.

    Records written with another (larger) vocab would otherwise end in a gather error, or on a
    GPU, whose gather returns zeros for ids out of range, in silently wrong training. Runs in the
    input pipeline on the host: no device sync on the training step.

    sources: the file of every row (string [batch]) or of the whole batch (str).
    """
    ids = [batch[name] for name in names]
    bad_rows = None
    largest = tf.constant(0, tf.int64)
    for values in ids:
        values = tf.cast(values, tf.int64)
        out_of_range = tf.logical_or(values < 0, values >= vocab_size)
        rows = tf.reduce_any(tf.reshape(out_of_range, [tf.shape(values)[0], -1]), axis=1)
        bad_rows = rows if bad_rows is None else tf.logical_or(bad_rows, rows)
        largest = tf.maximum(largest, tf.reduce_max(tf.reshape(values, [-1])))
    sources = tf.broadcast_to(tf.convert_to_tensor(sources), tf.shape(bad_rows))
    # Only evaluated when the check fails.
    check = tf.debugging.Assert(
        tf.logical_not(tf.reduce_any(bad_rows)),
        [
            f"{TOKEN_ID_CHECK} in {'/'.join(names)}: the largest id is",
            largest,
            f"but vocab_size is {vocab_size} (records written with another vocab.txt?); file:",
            tf.boolean_mask(sources, bad_rows)[:1],
        ],
        summarize=1,
    )
    with tf.control_dependencies([check]):
        return {name: tf.identity(value) for name, value in batch.items()}


def batched_records(
    input_file: str,
    parse: Callable[[tf.Tensor], dict],
    batch_size: int,
    is_training: bool,
    input_context: tf.distribute.InputContext | None = None,
    drop_remainder: bool | None = None,
    seed: int | None = None,
    shuffle_buffer_size: int = 100_000,
    vocab_size: int | None = None,
) -> tf.data.Dataset:
    """`parse` applied to batches of serialized records (string [per-replica batch]) of
    `input_file`, which is checked first (record_files.check_record_files). With `vocab_size`
    the parsed batches' input_word_ids are checked to be below it (check_token_ids).

    Training: shuffled in a buffer of `shuffle_buffer_size` with `seed`, reshuffled each pass,
    repeated. Otherwise in file order, once. With an `input_context` (a distributed dataset
    function's) each input pipeline reads every num_input_pipelines-th record and batches its
    per-replica share of the global `batch_size`. `drop_remainder` defaults to `is_training`
    (training batches are full; evaluation keeps the last short one).
    """
    check_record_files([input_file])
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
    if vocab_size is not None:
        parse_unchecked = parse

        def parse(records):
            return check_token_ids(parse_unchecked(records), vocab_size, input_file)

    return dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


@tf.autograph.experimental.do_not_convert  # straight-line code
def trimmed_length(input_mask: tf.Tensor, max_seq_length: int | tf.Tensor) -> tf.Tensor:
    """The sequence length a batch can be cut to: its longest real example (input_mask int
    [batch, seq]) rounded up to a multiple of 8, at most max_seq_length (8 for an empty
    batch); a scalar of input_mask's dtype. The multiple keeps the distinct shapes few (oneDNN
    builds and caches a kernel per product shape) for at most 7 positions of padding."""
    lengths = tf.reduce_sum(input_mask, axis=1)
    longest = tf.reduce_max(tf.concat([lengths, tf.ones([1], lengths.dtype)], axis=0))
    return tf.minimum((longest + 7) // 8 * 8, tf.cast(max_seq_length, lengths.dtype))
