"""PackedBitsDropout: Keras Dropout whose keep-mask costs half the random bits (a speed path:
the plain twin is ReplicaDropout, keras.layers.Dropout with a mask per replica)."""

import keras
import tensorflow as tf

from official_bert.kernels.replica_dropout import ReplicaDropout, replica_seed
from official_bert.kernels.switch import fast_kernels_enabled

# The mask's resolution: each element's keep decision is one 16-bit random number.
_MASK_LEVELS = 1 << 16


@keras.saving.register_keras_serializable(package="official_bert")
class PackedBitsDropout(ReplicaDropout):
    """`keras.layers.Dropout` that draws two 16-bit mask values from each 32-bit random number.

    Keras's TensorFlow dropout draws one random *float* per element (a 32-bit Philox draw, then
    a conversion); in mixed_bfloat16 the uniform floats are also bfloat16, so coarse that a
    rate of 0.1 drops 10.2% of the elements. Here one `stateless_random_uniform` of uint32 covers
    two elements (bitcast to uint16), and an element is kept when its 16-bit number is at least
    round(rate * 65536): the same rate to within 1/65536 in every dtype, for half the random
    numbers and no float conversion (the mask's share of a CPU step: bench/RESULTS.md). Written
    by hand because neither Keras nor TensorFlow offers a dropout with a cheaper mask; the plain
    twin is ReplicaDropout (keras.layers.Dropout).

    Same constructor, config, seed generator (so the same checkpoint layout) and inference
    behaviour as `keras.layers.Dropout`; with a `noise_shape` it defers to Keras's dropout.
    Under a strategy of several replicas each replica draws its own mask (`replica_seed`: one
    device's masks are unchanged).

    Call arguments:
      inputs: a float tensor of any shape and dtype.
      training: bool; without it (or False) the inputs are returned unchanged.

    Returns:
      a tensor of the inputs' shape and dtype: each element zeroed with probability `rate`,
      the rest scaled by 1 / (1 - rate).
    """

    def call(self, inputs, training=False):
        if not training or not 0 < self.rate < 1 or self.noise_shape is not None:
            return super().call(inputs, training=training)
        # Stateless TF random ops take an int32 seed pair (Keras keeps the state as int64); each
        # replica of a strategy its own.
        seed = replica_seed(self.seed_generator.next())
        shape = tf.shape(inputs)
        size = tf.size(inputs)
        words = tf.random.stateless_uniform(
            [(size + 1) // 2], seed, minval=None, maxval=None, dtype=tf.uint32
        )
        halves = tf.reshape(tf.bitcast(words, tf.uint16), [-1])[:size]
        threshold = tf.constant(round(self.rate * _MASK_LEVELS), tf.uint16)
        keep = tf.reshape(halves >= threshold, shape)
        scale = tf.cast(1.0 / (1.0 - self.rate), inputs.dtype)
        return tf.where(keep, inputs * scale, tf.zeros([], inputs.dtype))


def dropout_layer(rate: float, **kwargs) -> keras.layers.Dropout:
    """A dropout layer for a model being built: PackedBitsDropout when the fast kernels are on
    (official_bert.kernels.use_fast_kernels), else ReplicaDropout (keras.layers.Dropout). Both
    have the same constructor, config and checkpoint state (the seed generator), so the choice
    changes no variable; both draw another mask on each replica of a strategy."""
    layer_class = PackedBitsDropout if fast_kernels_enabled() else ReplicaDropout
    return layer_class(rate, **kwargs)
