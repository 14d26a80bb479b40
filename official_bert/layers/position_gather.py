"""gather_positions: the vectors of a sequence at given positions, per batch row."""

import tensorflow as tf


def gather_positions(sequence, positions):
    """sequence[b, positions[b, p], :] for every row b and slot p.

    Args:
      sequence: float [batch, seq_length, width].
      positions: int [batch, num_positions], each in [0, seq_length) (a position outside is an
        InvalidArgumentError on CPU, as for any gather).

    Returns:
      [batch, num_positions, width], sequence's dtype.

    Written with TensorFlow's batched gather rather than keras.ops.take_along_axis, which
    broadcasts the positions to [batch, num_positions, width] and transposes that integer
    tensor: TensorFlow's oneDNN build logs a false "DT_INT64 only on platforms with AVX-512"
    error for every integer Transpose, once per process.
    """
    return tf.gather(sequence, tf.cast(positions, tf.int32), axis=1, batch_dims=1)
