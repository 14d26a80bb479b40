"""The original BERT optimizer and learning-rate schedule, as Keras 3 objects."""

from __future__ import annotations

import keras
import tensorflow as tf
from absl import logging
from keras import ops

from official_bert.kernels.frozen_weights import refuse_frozen_weight_products
from official_bert.kernels.fused_adam import fused_adam_update
from official_bert.kernels.switch import fast_kernels_enabled

# Variables the original exempts from weight decay ("LayerNorm", "layer_norm", "bias" in its
# variable names). Keras variable names are the last path component: LayerNorm parameters are
# "gamma"/"beta", and every bias (output_bias of the MLM head too) contains "bias".
WEIGHT_DECAY_EXCLUSIONS = ("gamma", "beta", "bias")


@keras.saving.register_keras_serializable(package="official_bert")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up from 0 over `num_warmup_steps`, then linear decay to 0 at `num_train_steps`.

    By default as the original create_optimizer: the decay (polynomial, power 1) runs from step
    0, and warm-up (`step / num_warmup_steps * learning_rate`) overrides it for the first steps,
    so the rate peaks at `learning_rate * (1 - num_warmup_steps / num_train_steps)` when warm-up
    ends. With `decay_after_warmup=True` the decay starts at the end of warm-up from the full
    `learning_rate` (Hugging Face's get_linear_schedule_with_warmup, as the torch recipes use):
    a rate `num_train_steps / (num_train_steps - num_warmup_steps)` times the original's through
    the whole decay (1.11x with 10% warm-up), which changes fine-tuning results by a point or
    more on small tasks such as MRPC.

    A warm-up longer than training (the original's default of 10000 steps on a short run) is
    warm-up throughout, as in the original: the rate never reaches `learning_rate`.

    Called with the 0-based number of updates done so far (float32 scalar), as Keras does.
    """

    def __init__(
        self,
        learning_rate: float,
        num_train_steps: int,
        num_warmup_steps: int = 0,
        decay_after_warmup: bool = False,
    ):
        if num_train_steps <= 0:
            raise ValueError(f"num_train_steps must be positive, got {num_train_steps}")
        if num_warmup_steps < 0:
            raise ValueError(f"num_warmup_steps must be 0 or more, got {num_warmup_steps}")
        if num_warmup_steps > num_train_steps:
            # The original trains on (its default warm-up of 10000 steps with a short run).
            logging.warning(
                "Warm-up (%d steps) is longer than training (%d steps): the learning rate rises "
                "through the whole run and ends at %.3g of its peak, as in the original",
                num_warmup_steps,
                num_train_steps,
                num_train_steps / num_warmup_steps,
            )
        self.learning_rate = learning_rate
        self.num_train_steps = num_train_steps
        self.num_warmup_steps = num_warmup_steps
        self.decay_after_warmup = decay_after_warmup

    def __call__(self, step):
        step = ops.cast(step, "float32")
        decay_start = self.num_warmup_steps if self.decay_after_warmup else 0
        decay_steps = max(self.num_train_steps - decay_start, 1)
        remaining = ops.clip((self.num_train_steps - step) / decay_steps, 0.0, 1.0)
        decayed = self.learning_rate * remaining
        if not self.num_warmup_steps:
            return decayed
        warmup = self.learning_rate * step / self.num_warmup_steps
        return ops.where(step < self.num_warmup_steps, warmup, decayed)

    def get_config(self):
        return {
            "learning_rate": self.learning_rate,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
            "decay_after_warmup": self.decay_after_warmup,
        }


@keras.saving.register_keras_serializable(package="official_bert")
class AdamWeightDecay(keras.optimizers.Optimizer):
    """The original BERT optimizer (AdamWeightDecayOptimizer): Adam without bias correction, and
    weight decay added to the update (decoupled, as in AdamW) except for LayerNorm parameters and
    biases.

    Keras's own AdamW corrects the moment estimates for their zero initialization; the original
    does not, which makes the first steps smaller. Written by hand to keep the original's update,
    so a fine-tuning recipe tuned on the original behaves the same here. Weight decay is decoupled
    (`variable -= lr * weight_decay_rate * variable` before the Adam update, as the Keras base
    optimizer's), which is exactly the original's `update += weight_decay * param`. It is done
    here in `update_step` rather than by Keras (whose `variable * wd * lr` makes two passes over
    every variable before the subtraction, one more than needed), with the exclusions of
    Keras's `exclude_from_weight_decay`.

    `bias_correction=True` gives instead the AdamW of the paper (Loshchilov & Hutter, with Adam's
    Algorithm 1), as `torch.optim.AdamW` and Hugging Face compute it: `lr * m_hat / (sqrt(v_hat)
    + epsilon)`. Keras's AdamW differs from it in where epsilon goes (`sqrt(v) + epsilon` before
    the correction, so in the paper's terms its epsilon is `epsilon / sqrt(1 - beta_2^t)`: 32x
    larger at the first step), which damps the early updates of small-gradient weights: on MRPC
    from all-MiniLM-L6-v2 that alone cost 2 points of dev accuracy against the torch recipe.

    `apply_gradients(grads_and_vars, gradient_scale=s)` applies `s * gradient` (the training
    runner's global-norm clip factor), so that the scaling costs no pass of its own. Built with
    the speed paths on (official_bert.kernels), each variable's scale, weight decay and Adam
    update run as one XLA-compiled loop (kernels/fused_adam.py); off, as TensorFlow ops.
    """

    def __init__(
        self,
        learning_rate=0.001,
        weight_decay_rate: float = 0.0,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-6,
        exclude_from_weight_decay: tuple[str, ...] = WEIGHT_DECAY_EXCLUSIONS,
        bias_correction: bool = False,
        name: str = "adam_weight_decay",
        **kwargs,
    ):
        super().__init__(
            learning_rate=learning_rate,
            weight_decay=None,  # applied in update_step, see the class docstring
            name=name,
            **kwargs,
        )
        self.weight_decay_rate = weight_decay_rate
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.exclusions = tuple(exclude_from_weight_decay)
        self.bias_correction = bias_correction
        # Read once, as layers read the switch when they are built.
        self.fused_update = fast_kernels_enabled()
        # Set by apply_gradients for the duration of one call (a scalar tensor or None).
        self._gradient_scale = None
        if self.exclusions:
            self.exclude_from_weight_decay(var_names=list(self.exclusions))

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._first_moments = self.add_optimizer_variables(variables, "adam_m")
        self._second_moments = self.add_optimizer_variables(variables, "adam_v")

    def apply_gradients(self, grads_and_vars, gradient_scale=None):
        """Keras's apply_gradients; with `gradient_scale` (a scalar), every gradient is
        multiplied by it first. Single-replica use: the scale is held on the optimizer for the
        duration of the call."""
        self._gradient_scale = gradient_scale
        try:
            return super().apply_gradients(grads_and_vars)
        finally:
            self._gradient_scale = None

    def apply(self, grads, trainable_variables=None):
        """Keras's apply, which apply_gradients, model.fit and LossScaleOptimizer all reach.

        RuntimeError where the environment asks oneDNN to keep the first weights it sees
        (kernels.frozen_weights): the update would be computed from stale ones."""
        refuse_frozen_weight_products("training")
        return super().apply(grads, trainable_variables)

    def update_step(self, gradient, variable, learning_rate):
        learning_rate = ops.cast(learning_rate, variable.dtype)
        # Embedding lookups give sparse (IndexedSlices) gradients; the moments are dense, as in
        # the original, so the gradient is made dense too (keras.ops keeps IndexedSlices sparse).
        gradient = ops.cast(tf.convert_to_tensor(gradient), variable.dtype)
        index = self._get_variable_index(variable)
        m, v = self._first_moments[index], self._second_moments[index]
        beta_1 = ops.cast(self.beta_1, variable.dtype)
        beta_2 = ops.cast(self.beta_2, variable.dtype)
        epsilon = ops.cast(self.epsilon, variable.dtype)
        decay = None
        if self.weight_decay_rate and self._use_weight_decay(variable):
            # Keras's order (decay, then Adam) with the two scalars multiplied first.
            decay = learning_rate * ops.cast(self.weight_decay_rate, variable.dtype)
        if self.bias_correction:
            step = ops.cast(self.iterations + 1, variable.dtype)
            beta_1_power, beta_2_power = ops.power(beta_1, step), ops.power(beta_2, step)
            # lr * m_hat / (sqrt(v_hat) + eps) = lr * sqrt(c2) / c1 * m / (sqrt(v) + eps * sqrt(c2))
            # with c = 1 - beta^t: the fused kernel's form, with the epsilon scaled.
            epsilon = epsilon * ops.sqrt(1.0 - beta_2_power)
        else:
            # Both powers 0: step size lr * sqrt(1 - 0) / (1 - 0) = lr, no correction.
            beta_1_power = beta_2_power = ops.zeros((), variable.dtype)
        resource = _is_resource_variable(variable) and _is_resource_variable(m.value)
        if resource and self.fused_update:
            fused_adam_update(
                variable.handle,
                m.value.handle,
                v.value.handle,
                gradient,
                gradient_scale=1.0 if self._gradient_scale is None else self._gradient_scale,
                decay=0.0 if decay is None else decay,
                learning_rate=learning_rate,
                beta_1=beta_1,
                beta_2=beta_2,
                epsilon=epsilon,
                beta_1_power=beta_1_power,
                beta_2_power=beta_2_power,
            )
            return
        if self._gradient_scale is not None:
            gradient = gradient * ops.cast(self._gradient_scale, variable.dtype)
        if decay is not None:
            self.assign_sub(variable, variable * decay)
        if resource:
            # TensorFlow's fused Adam kernel does the whole update in one pass over memory
            # (the Keras-ops lines below take about twelve, which costs several percent of a
            # BERT-base train step on CPU).
            tf.raw_ops.ResourceApplyAdam(
                var=variable.handle,
                m=m.value.handle,
                v=v.value.handle,
                beta1_power=beta_1_power,
                beta2_power=beta_2_power,
                lr=learning_rate,
                beta1=beta_1,
                beta2=beta_2,
                epsilon=epsilon,
                grad=gradient,
            )
            return
        self.assign(m, beta_1 * m + (1.0 - beta_1) * gradient)
        self.assign(v, beta_2 * v + (1.0 - beta_2) * ops.square(gradient))
        step_size = learning_rate * ops.sqrt(1.0 - beta_2_power) / (1.0 - beta_1_power)
        self.assign_sub(variable, step_size * m / (ops.sqrt(v) + epsilon))

    def get_config(self):
        config = super().get_config()
        config.pop("weight_decay", None)
        config.update(
            weight_decay_rate=self.weight_decay_rate,
            beta_1=self.beta_1,
            beta_2=self.beta_2,
            epsilon=self.epsilon,
            exclude_from_weight_decay=list(self.exclusions),
            bias_correction=self.bias_correction,
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
    decay_after_warmup: bool = False,
) -> keras.optimizers.Optimizer:
    """The optimizer of the original create_optimizer, or a Keras alternative.

    optimizer_type: "adamw" (the original AdamWeightDecay, no bias correction), "adamw_torch"
      (AdamWeightDecay with bias correction: the paper's AdamW, as torch.optim.AdamW and Hugging
      Face's recipes), "keras_adamw" (keras.optimizers.AdamW: bias-corrected, epsilon placed
      before the correction) or "lamb" (keras.optimizers.Lamb).
    All use warm-up + linear decay (WarmupLinearDecay: from step 0 as the original, or from the
    end of warm-up with `decay_after_warmup`), weight decay `weight_decay_rate` except LayerNorm
    parameters and biases, epsilon 1e-6, and global-norm clipping at `clip_norm` (the original's
    1.0). The torch recipe of Hugging Face is `adamw_torch` with `decay_after_warmup=True`.
    """
    schedule = WarmupLinearDecay(
        learning_rate, num_train_steps, num_warmup_steps, decay_after_warmup=decay_after_warmup
    )
    common = dict(learning_rate=schedule, epsilon=1e-6, global_clipnorm=clip_norm)
    if optimizer_type in ("adamw", "adamw_torch"):
        return AdamWeightDecay(
            weight_decay_rate=weight_decay_rate,
            bias_correction=optimizer_type == "adamw_torch",
            **common,
        )
    if optimizer_type in ("keras_adamw", "lamb"):
        cls = keras.optimizers.AdamW if optimizer_type == "keras_adamw" else keras.optimizers.Lamb
        optimizer = cls(weight_decay=weight_decay_rate or None, **common)
        optimizer.exclude_from_weight_decay(var_names=list(WEIGHT_DECAY_EXCLUSIONS))
        return optimizer
    raise ValueError(
        f"unknown optimizer_type {optimizer_type!r}; expected adamw, adamw_torch, keras_adamw "
        "or lamb"
    )
