"""fused_adam_update: one variable's AdamWeightDecay step (gradient scale, decoupled weight decay,
Adam) as one XLA-compiled loop over memory (a speed path: the plain twin is a scale, an
`assign_sub` and TensorFlow's fused `ResourceApplyAdam`, in AdamWeightDecay.update_step).

An optimizer step touches every weight: on a CPU it is bound by memory traffic, not arithmetic.
BERT-Base has 110M float32 weights, so each pass over them (or over their gradients or moments)
moves 440 MB. The plain step makes several: the global-norm clip rescales every gradient (read
and write), the weight decay reads the variable twice and writes it, then the fused Adam kernel
reads variable, gradient and both moments and writes three of them. Here XLA compiles all of it
into one loop that reads each of the four once and writes three (measured in bench/RESULTS.md,
train_step.py). Written by hand because TensorFlow's Adam kernels take neither a gradient scale
nor decoupled weight decay, and Keras's optimizers run each of those as separate ops.
"""

from __future__ import annotations

import tensorflow as tf


@tf.function(jit_compile=True, autograph=False)  # straight-line code
def _update(
    variable,
    m,
    v,
    gradient,
    gradient_scale,
    decay,
    alpha,
    beta_1,
    beta_2,
    epsilon,
):
    """The loop on resource handles; see fused_adam_update for the arguments."""
    dtype = gradient.dtype
    gradient = gradient * gradient_scale
    old_m = tf.raw_ops.ReadVariableOp(resource=m, dtype=dtype)
    old_v = tf.raw_ops.ReadVariableOp(resource=v, dtype=dtype)
    new_m = old_m + (gradient - old_m) * (1.0 - beta_1)
    new_v = old_v + (tf.square(gradient) - old_v) * (1.0 - beta_2)
    weights = tf.raw_ops.ReadVariableOp(resource=variable, dtype=dtype)
    weights = weights - weights * decay
    tf.raw_ops.AssignVariableOp(resource=m, value=new_m)
    tf.raw_ops.AssignVariableOp(resource=v, value=new_v)
    tf.raw_ops.AssignVariableOp(
        resource=variable, value=weights - new_m * alpha / (tf.sqrt(new_v) + epsilon)
    )


def fused_adam_update(
    variable: tf.Tensor,
    m: tf.Tensor,
    v: tf.Tensor,
    gradient: tf.Tensor,
    *,
    gradient_scale: tf.Tensor,
    decay: tf.Tensor,
    learning_rate: tf.Tensor,
    beta_1: tf.Tensor,
    beta_2: tf.Tensor,
    epsilon: tf.Tensor,
    beta_1_power: tf.Tensor,
    beta_2_power: tf.Tensor,
) -> None:
    """Updates a weight and its Adam moments in place, in one pass:

        g = gradient * gradient_scale
        m += (g - m) * (1 - beta_1);  v += (g^2 - v) * (1 - beta_2)
        variable -= variable * decay
        variable -= alpha * m / (sqrt(v) + epsilon),  alpha = lr * sqrt(1 - beta_2_power)
                                                              / (1 - beta_1_power)

    the same arithmetic, in the same order, as `g * scale`, `variable -= variable * decay` and
    TensorFlow's ResourceApplyAdam (equal to float rounding: XLA may contract a multiply-add).

    Args:
      variable, m, v: resource handles (`tf.Variable.handle`) of the weight and its first and
        second moments, one float dtype and shape.
      gradient: dense tensor of the weight's shape and dtype.
      gradient_scale: scalar the gradient is multiplied by first (a global-norm clip's factor).
      decay: scalar, learning rate times the weight decay rate (0 for no decay).
      learning_rate, beta_1, beta_2, epsilon, beta_1_power, beta_2_power: scalars, as
        ResourceApplyAdam's (both powers 0 for Adam without bias correction).
    All scalars are cast to the gradient's dtype.
    """
    dtype = gradient.dtype

    def scalar(value):
        return tf.cast(value, dtype)

    alpha = (
        scalar(learning_rate) * tf.sqrt(1.0 - scalar(beta_2_power)) / (1.0 - scalar(beta_1_power))
    )
    _update(
        variable,
        m,
        v,
        gradient,
        scalar(gradient_scale),
        scalar(decay),
        alpha,
        scalar(beta_1),
        scalar(beta_2),
        scalar(epsilon),
    )
