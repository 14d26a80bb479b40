"""Mixing the training batches of several classification tasks: which task each step trains."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf


def task_sampling_probabilities(
    num_examples: Sequence[int], temperature: float = 1.0
) -> np.ndarray:
    """p_i proportional to n_i ** (1 / temperature): float64 [num_tasks], summing to 1.

    temperature 1 samples tasks in proportion to their training sets (every example is equally
    likely to be drawn); a large temperature approaches uniform over tasks, which favors small
    tasks (the temperature-scaled mixing of Arivazhagan et al., 2019, and T5).
    """
    if temperature <= 0:
        raise ValueError(f"sampling_temperature must be > 0, got {temperature}")
    sizes = np.asarray(num_examples, np.float64)
    if sizes.ndim != 1 or len(sizes) == 0 or np.any(sizes <= 0):
        raise ValueError(f"every task needs training examples; got sizes {list(num_examples)}")
    # In log space: n ** (1/T) overflows for large n and small T.
    logits = np.log(sizes) / temperature
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def task_choice_dataset(
    probabilities: Sequence[float], seed: int, repeats: int = 1
) -> tf.data.Dataset:
    """An endless dataset of int64 task indexes, draw k with probabilities `probabilities`.

    Draw k depends only on (seed, k) (a stateless categorical sample), so the sequence is the
    same in every run, on every worker and after skipping k draws on resume. Each draw is
    repeated `repeats` times in a row: the per-replica batches one input pipeline gives to its
    replicas in one step are consecutive elements, so repeats = replicas per pipeline makes all
    replicas of a step train the same task.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    log_probabilities = tf.math.log(tf.constant([probabilities], tf.float64))

    def draw(index):
        return tf.random.stateless_categorical(
            log_probabilities, 1, seed=tf.stack([tf.constant(seed, tf.int64), index])
        )[0, 0]

    choices = tf.data.Dataset.counter().map(draw)
    if repeats > 1:
        choices = choices.map(lambda task: tf.fill([repeats], task)).unbatch()
    return choices


def multitask_dataset(
    task_datasets: Sequence[tf.data.Dataset],
    probabilities: Sequence[float],
    seed: int,
    input_context: tf.distribute.InputContext | None = None,
) -> tf.data.Dataset:
    """One endless stream of single-task batches, the task of each drawn by task_choice_dataset.

    Args:
      task_datasets: one endless dataset of classifier batches per task (classifier_dataset with
        is_training=True), in task order; under a strategy, built for `input_context`.
      probabilities: the probability of each task (task_sampling_probabilities).
      seed: the seed of the task sequence; the same on every worker.
      input_context: the input pipeline's context under tf.distribute (None: one device). Each
        pipeline gives consecutive batches to its replicas, one each per step, so each draw is
        repeated once per replica of the pipeline: all replicas of a step train the same task.

    Returns:
      dict batches: the tasks' fields, with label_ids as float32 [batch] for every task (class
      ids are exact in float32; the tasks' batches must share one dtype to be mixed), and
      task_id: int32 [batch], the task index, equal across the batch.
    """
    if len(task_datasets) != len(probabilities):
        raise ValueError(
            f"{len(task_datasets)} task datasets but {len(probabilities)} probabilities"
        )
    repeats = 1
    if input_context is not None:
        repeats = input_context.num_replicas_in_sync // input_context.num_input_pipelines

    def tagger(task_index):
        def tag(batch):
            batch = dict(batch)
            batch["label_ids"] = tf.cast(batch["label_ids"], tf.float32)
            batch["task_id"] = tf.fill(tf.shape(batch["label_ids"]), task_index)
            return batch

        return tag

    tagged = [dataset.map(tagger(index)) for index, dataset in enumerate(task_datasets)]
    return tf.data.Dataset.choose_from_datasets(
        tagged, task_choice_dataset(probabilities, seed, repeats)
    )
