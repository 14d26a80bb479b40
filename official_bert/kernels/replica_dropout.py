"""ReplicaDropout: keras.layers.Dropout that draws another mask on each replica of a
tf.distribute strategy (the plain dropout of every model layer), and `replica_seed`, the seed it
and PackedBitsDropout draw from.

It sits in kernels/, beside its speed twin PackedBitsDropout that builds on it, because the
layers import the kernels and never the reverse."""

import keras
import tensorflow as tf


def replica_seed(seed: tf.Tensor) -> tf.Tensor:
    """The stateless seed of this replica's draw from a Keras seed generator's seed.

    A Keras SeedGenerator's state is one variable; under MirroredStrategy (and
    MultiWorkerMirroredStrategy) it is mirrored, so every replica's `next()` gives the same seed,
    and every replica would draw the same dropout mask for its slice of the batch (row i of each
    replica's slice the same noise). Replica 0, and any call outside a strategy of several
    replicas, keeps the seed as it is (the masks of one device are unchanged); replica r > 0
    folds r into it (`tf.random.experimental.stateless_fold_in`).

    Args:
      seed: int64 [2], a Keras seed generator's `next()`.

    Returns:
      int32 [2], for TensorFlow's stateless random ops: the seed cast as Keras casts it
      (floormod 2**31 - 2), then this replica's.
    """
    seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
    if not replicas_in_sync_above_one():
        return seed
    # A Python int under MirroredStrategy, a tensor under TPUStrategy.
    replica_id = tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.int32)
    folded = tf.random.experimental.stateless_fold_in(seed, replica_id)
    return tf.where(tf.equal(replica_id, 0), seed, folded)


def replicas_in_sync_above_one() -> bool:
    """Whether this call runs in the replica context of a strategy with several replicas (a
    cross-replica context, or none, counts as one)."""
    context = tf.distribute.get_replica_context()
    return context is not None and context.num_replicas_in_sync > 1


@keras.saving.register_keras_serializable(package="official_bert")
class ReplicaDropout(keras.layers.Dropout):
    """`keras.layers.Dropout` whose masks differ between the replicas of a strategy.

    One device (or replica 0) draws exactly Keras's masks; replica r > 0 draws from its own
    seed (`replica_seed`). Same constructor, config (Keras's `get_config`: this class adds no
    argument), seed generator and checkpoint layout as `keras.layers.Dropout`.

    Call arguments:
      inputs: a float tensor of any shape and dtype.
      training: bool; without it (or False) the inputs are returned unchanged.

    Returns:
      a tensor of the inputs' shape and dtype: each element (or each slice of `noise_shape`)
      zeroed with probability `rate`, the rest scaled by 1 / (1 - rate).
    """

    def call(self, inputs, training=False):
        if not training or not 0 < self.rate < 1 or not replicas_in_sync_above_one():
            return super().call(inputs, training=training)
        noise_shape = None
        if self.noise_shape is not None:
            # Keras's noise shape: a None axis takes the inputs' size.
            noise_shape = [
                tf.shape(inputs)[axis] if size is None else size
                for axis, size in enumerate(self.noise_shape)
            ]
        return tf.nn.experimental.stateless_dropout(
            inputs,
            rate=self.rate,
            noise_shape=noise_shape,
            seed=replica_seed(self.seed_generator.next()),
        )
