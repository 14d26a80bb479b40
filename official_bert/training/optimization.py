"""The original BERT optimizer and learning-rate schedule, as Keras 3 objects."""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

# Variables the original exempts from weight decay ("LayerNorm", "layer_norm", "bias" in its
# variable names). Keras variable names are the last path component: LayerNorm parameters are
# "gamma"/"beta", and every bias (output_bias of the MLM head too) contains "bias".
WEIGHT_DECAY_EXCLUSIONS = ("gamma", "beta", "bias")


@keras.saving.register_keras_serializable(package="official_bert")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up from 0 to `learning_rate` over `num_warmup_steps`, then linear decay to 0
    at `num_train_steps` (the original create_optimizer: polynomial decay with power 1, and
    `step / num_warmup_steps * learning_rate` while warming up).

    Called with the 0-based number of updates done so far (float32 scalar), as Keras does.
    """

    def __init__(self, learning_rate: float, num_train_steps: int, num_warmup_steps: int = 0):
        if num_train_steps <= 0:
            raise ValueError(f"num_train_steps must be positive, got {num_train_steps}")
        if not 0 <= num_warmup_steps <= num_train_steps:
            raise ValueError(
                f"num_warmup_steps ({num_warmup_steps}) must be in [0, num_train_steps "
                f"({num_train_steps})]"
            )
        self.learning_rate = learning_rate
        self.num_train_steps = num_train_steps
        self.num_warmup_steps = num_warmup_steps

    def __call__(self, step):
        step = ops.cast(step, "float32")
        decayed = self.learning_rate * (
            1.0 - ops.minimum(step, float(self.num_train_steps)) / self.num_train_steps
        )
        if not self.num_warmup_steps:
            return decayed
        warmup = self.learning_rate * step / self.num_warmup_steps
        return ops.where(step < self.num_warmup_steps, warmup, decayed)

    def get_config(self):
        return {
            "learning_rate": self.learning_rate,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
        }


@keras.saving.register_keras_serializable(package="official_bert")
class AdamWeightDecay(keras.optimizers.Optimizer):
    """The original BERT optimizer (AdamWeightDecayOptimizer): Adam without bias correction, and
    weight decay added to the update (decoupled, as in AdamW) except for LayerNorm parameters and
    biases.

    Keras's own AdamW corrects the moment estimates for their zero initialization; the original
    does not, which makes the first steps smaller. Written by hand to keep the original's update,
    so a fine-tuning recipe tuned on the original behaves the same here. Weight decay uses the
    Keras base optimizer's decoupled decay (`variable -= lr * weight_decay * variable` before the
    Adam update), which is exactly the original's `update += weight_decay * param`.
    """

    def __init__(
        self,
        learning_rate=0.001,
        weight_decay_rate: float = 0.0,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-6,
        exclude_from_weight_decay: tuple[str, ...] = WEIGHT_DECAY_EXCLUSIONS,
        name: str = "adam_weight_decay",
        **kwargs,
    ):
        super().__init__(
            learning_rate=learning_rate,
            weight_decay=weight_decay_rate or None,
            name=name,
            **kwargs,
        )
        self.weight_decay_rate = weight_decay_rate
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.exclusions = tuple(exclude_from_weight_decay)
        if self.exclusions:
            self.exclude_from_weight_decay(var_names=list(self.exclusions))

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._first_moments = self.add_optimizer_variables(variables, "adam_m")
        self._second_moments = self.add_optimizer_variables(variables, "adam_v")

    def update_step(self, gradient, variable, learning_rate):
        learning_rate = ops.cast(learning_rate, variable.dtype)
        # Embedding lookups give sparse (IndexedSlices) gradients; the moments are dense, as in
        # the original, so the gradient is made dense too (keras.ops keeps IndexedSlices sparse).
        gradient = ops.cast(tf.convert_to_tensor(gradient), variable.dtype)
        index = self._get_variable_index(variable)
        m, v = self._first_moments[index], self._second_moments[index]
        if _is_resource_variable(variable) and _is_resource_variable(m.value):
            # TensorFlow's fused Adam kernel does the whole update in one pass over memory
            # (the Keras-ops lines below take about twelve, which costs several percent of a
            # BERT-base train step on CPU). With both beta powers 0 its step size is
            # lr * sqrt(1 - 0) / (1 - 0) = lr: Adam without bias correction, as the original.
            tf.raw_ops.ResourceApplyAdam(
                var=variable.handle,
                m=m.value.handle,
                v=v.value.handle,
                beta1_power=tf.constant(0.0, variable.dtype),
                beta2_power=tf.constant(0.0, variable.dtype),
                lr=learning_rate,
                beta1=tf.constant(self.beta_1, variable.dtype),
                beta2=tf.constant(self.beta_2, variable.dtype),
                epsilon=tf.constant(self.epsilon, variable.dtype),
                grad=gradient,
            )
            return
        self.assign(m, self.beta_1 * m + (1.0 - self.beta_1) * gradient)
        self.assign(v, self.beta_2 * v + (1.0 - self.beta_2) * ops.square(gradient))
        self.assign_sub(variable, learning_rate * m / (ops.sqrt(v) + self.epsilon))

    def get_config(self):
        config = super().get_config()
        config.pop("weight_decay", None)
        config.update(
            weight_decay_rate=self.weight_decay_rate,
            beta_1=self.beta_1,
            beta_2=self.beta_2,
            epsilon=self.epsilon,
            exclude_from_weight_decay=list(self.exclusions),
        )
        return config


def _is_resource_variable(variable) -> bool:
    """Whether `variable` is a TensorFlow resource variable (or one replica's part of one)."""
    return hasattr(variable, "handle") and getattr(variable.handle, "dtype", None) == tf.resource


def create_optimizer(
    learning_rate: float,
    num_train_steps: int,
    num_warmup_steps: int,
    optimizer_type: str = "adamw",
    weight_decay_rate: float = 0.01,
    clip_norm: float | None = 1.0,
) -> keras.optimizers.Optimizer:
    """The optimizer of the original create_optimizer, or a Keras alternative.

    optimizer_type: "adamw" (the original AdamWeightDecay, no bias correction), "keras_adamw"
      (keras.optimizers.AdamW, bias-corrected), or "lamb" (keras.optimizers.Lamb).
    All use warm-up + linear decay, weight decay `weight_decay_rate` except LayerNorm parameters
    and biases, epsilon 1e-6, and global-norm clipping at `clip_norm` (the original's 1.0).
    """
    schedule = WarmupLinearDecay(learning_rate, num_train_steps, num_warmup_steps)
    common = dict(learning_rate=schedule, epsilon=1e-6, global_clipnorm=clip_norm)
    if optimizer_type == "adamw":
        return AdamWeightDecay(weight_decay_rate=weight_decay_rate, **common)
    if optimizer_type in ("keras_adamw", "lamb"):
        cls = keras.optimizers.AdamW if optimizer_type == "keras_adamw" else keras.optimizers.Lamb
        optimizer = cls(weight_decay=weight_decay_rate or None, **common)
        optimizer.exclude_from_weight_decay(var_names=list(WEIGHT_DECAY_EXCLUSIONS))
        return optimizer
    raise ValueError(
        f"unknown optimizer_type {optimizer_type!r}; expected adamw, keras_adamw or lamb"
    )
