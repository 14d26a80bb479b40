"""Running a model over a dataset under a strategy and collecting its outputs on the host."""

from __future__ import annotations

import collections

import numpy as np
import tensorflow as tf


def predict(
    strategy: tf.distribute.Strategy, model, dataset: tf.data.Dataset, keep: tuple[str, ...] = ()
) -> dict[str, np.ndarray]:
    """The model's outputs (dropout off) for every batch of `dataset`, in dataset order.

    Under MultiWorkerMirroredStrategy the model runs outside the strategy, on this worker's
    devices, over the whole dataset (as Runner.evaluate does): distributing it would shard it
    over the workers (a single record file cannot be split by file) and leave each worker with
    its share, which nothing gathers.

    Args:
      strategy: the strategy the model was built under; batches are split over its replicas
        (not over the workers of a MultiWorkerMirroredStrategy: see above).
      model: a Keras model taking the dataset's dict batches; it returns a tensor or a dict.
      dataset: batches (a partial last batch is fine except on TPU).
      keep: batch fields to return beside the outputs (e.g. "label_ids").

    Returns:
      numpy arrays concatenated over batches: "outputs" (or the model's own output names when it
      returns a dict), as float32, and each field of `keep`; per-token arrays of batches with
      trimmed padding are zero-padded to the longest batch. Every worker of a multi-worker
      strategy returns the whole dataset's outputs.
    """

    def replica_step(batch):
        outputs = model(batch, training=False)
        if not isinstance(outputs, dict):
            outputs = {"outputs": outputs}
        results = {name: tf.cast(value, tf.float32) for name, value in outputs.items()}
        results.update({name: batch[name] for name in keep})
        return results

    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        batches = dataset
        # One trace for all batches, whatever their length (a partial last batch, trimmed padding).
        step = tf.function(replica_step, input_signature=[dataset.element_spec])

        def local_results(value):
            return [value]
    else:
        batches = strategy.experimental_distribute_dataset(dataset)

        @tf.function(input_signature=[batches.element_spec])
        def step(batch):
            return strategy.run(replica_step, args=(batch,))

        local_results = strategy.experimental_local_results

    collected = collections.defaultdict(list)
    for batch in batches:
        for name, value in step(batch).items():
            # Replicas hold consecutive slices of the batch: their concatenation keeps the order.
            for local in local_results(value):
                collected[name].append(local.numpy())
    return {name: _concatenate_padded(parts) for name, parts in collected.items()}


def _concatenate_padded(parts: list[np.ndarray]) -> np.ndarray:
    """Concatenates batches along axis 0; batches cut to their own sequence length (trimmed
    padding) are zero-padded on axis 1 to the longest first."""
    if len({part.shape[1:] for part in parts}) > 1:
        longest = max(part.shape[1] for part in parts)
        parts = [
            np.pad(part, [(0, 0), (0, longest - part.shape[1])] + [(0, 0)] * (part.ndim - 2))
            for part in parts
        ]
    return np.concatenate(parts)
