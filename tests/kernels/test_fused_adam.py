"""fused_adam_update and the optimizer and runner paths built on it equal their plain twins: a
scaled gradient, `variable -= variable * decay`, TensorFlow's ResourceApplyAdam, and
tf.clip_by_global_norm in the runner."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import official_bert.training.runner as runner_module
from official_bert.kernels import fast_kernels
from official_bert.kernels.fused_adam import fused_adam_update
from official_bert.training.optimization import AdamWeightDecay, create_optimizer
from tests.conftest import synthetic_pretraining_examples
from tests.training.test_runner import make_runner, trained_weights


def _plain_update(variable, m, v, gradient, scale, decay, lr, powers, epsilon=1e-6):
    variable.assign_sub(variable * decay)
    tf.raw_ops.ResourceApplyAdam(
        var=variable.handle,
        m=m.handle,
        v=v.handle,
        beta1_power=powers[0],
        beta2_power=powers[1],
        lr=lr,
        beta1=0.9,
        beta2=0.999,
        epsilon=epsilon,
        grad=gradient * scale,
    )


def _fused(variable, m, v, gradient, scale, decay, lr, powers, epsilon=1e-6):
    fused_adam_update(
        variable.handle,
        m.handle,
        v.handle,
        gradient,
        gradient_scale=scale,
        decay=decay,
        learning_rate=lr,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=epsilon,
        beta_1_power=powers[0],
        beta_2_power=powers[1],
    )


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize(
    "shape, scale, decay, powers",
    [
        ((7, 5), 1.0, 0.0, (0.0, 0.0)),
        ((64, 48), 0.37, 1e-3, (0.0, 0.0)),
        ((1000,), 0.5, 2e-4, (0.9**3, 0.999**3)),  # bias correction's powers at step 3
    ],
)
def test_fused_update_equals_scale_decay_and_resource_apply_adam(
    shape, scale, decay, powers, compiled
):
    rng = np.random.default_rng(0)
    start = [rng.normal(size=shape).astype(np.float32) for _ in range(3)]
    start[2] = np.abs(start[2]) * 1e-3  # second moments are non-negative
    gradients = [tf.constant(rng.normal(size=shape).astype(np.float32)) for _ in range(4)]
    results = []
    for update in (_plain_update, _fused):
        variable, m, v = (tf.Variable(value) for value in start)
        step = tf.function(update) if compiled else update
        for gradient in gradients:
            step(
                variable,
                m,
                v,
                gradient,
                tf.constant(scale),
                tf.constant(decay),
                tf.constant(0.01),
                powers,
            )
        results.append([variable.numpy(), m.numpy(), v.numpy()])
    (plain_variable, plain_m, plain_v), (variable, m, v) = results
    np.testing.assert_allclose(m, plain_m, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(v, plain_v, rtol=1e-6, atol=1e-10)
    # The weights moved by ~4 * lr = 0.04; their changes agree to float rounding.
    np.testing.assert_allclose(variable - start[0], plain_variable - start[0], rtol=1e-5, atol=1e-7)
    assert np.abs(variable - start[0]).max() > 1e-2


def _adam_weight_decay_run(fast: bool, bias_correction: bool, scales, compiled: bool):
    """Weights of a kernel, bias and gamma after AdamWeightDecay steps with gradient scales."""
    rng = np.random.default_rng(3)
    with fast_kernels(fast):
        variables = [
            keras.Variable(rng.normal(size=shape).astype(np.float32), name=name)
            for name, shape in (("kernel", (6, 4)), ("bias", (4,)), ("gamma", (4,)))
        ]
        optimizer = AdamWeightDecay(
            learning_rate=0.05, weight_decay_rate=0.1, bias_correction=bias_correction
        )
    assert optimizer.fused_update is fast
    optimizer.build(variables)

    def apply(gradients, scale):
        optimizer.apply_gradients(zip(gradients, variables, strict=True), gradient_scale=scale)

    if compiled:
        apply = tf.function(apply)
    for scale in scales:
        gradients = [tf.constant(rng.normal(size=v.shape).astype(np.float32)) for v in variables]
        apply(gradients, tf.constant(scale))
    assert optimizer._gradient_scale is None
    return [v.numpy() for v in variables]


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("bias_correction", [False, True])
def test_adam_weight_decay_fused_equals_plain_with_gradient_scales(bias_correction, compiled):
    scales = [1.0, 0.25, 0.6, 1.0]
    fused = _adam_weight_decay_run(True, bias_correction, scales, compiled)
    plain = _adam_weight_decay_run(False, bias_correction, scales, compiled)
    unscaled = _adam_weight_decay_run(False, bias_correction, [1.0] * 4, compiled)
    for fused_value, plain_value, unscaled_value in zip(fused, plain, unscaled, strict=True):
        np.testing.assert_allclose(fused_value, plain_value, rtol=1e-5, atol=1e-6)
        # The scale reached the update (Adam normalizes, but not exactly: epsilon and the
        # moments' history see it).
        assert np.abs(fused_value - unscaled_value).max() > 1e-4


def test_clip_factor_is_clip_by_global_norms():
    rng = np.random.default_rng(4)
    gradients = [tf.constant(rng.normal(size=(5, 3)).astype(np.float32)), tf.constant([3.0, 4.0])]
    for clip_norm in (0.5, 1.0, 100.0):
        clipped, norm = tf.clip_by_global_norm(gradients, clip_norm)
        factor = runner_module._global_norm_clip_factor(gradients, clip_norm)
        np.testing.assert_allclose((gradients[1] * factor).numpy(), clipped[1].numpy(), rtol=1e-6)
        assert float(factor) == pytest.approx(min(1.0, clip_norm / float(norm)), rel=1e-6)
    with_inf = gradients + [tf.constant([np.inf])]
    assert np.isnan(float(runner_module._global_norm_clip_factor(with_inf, 1.0)))


@pytest.mark.parametrize("fast", [False, True])
def test_runner_folding_the_clip_into_the_update_equals_clipping_the_gradients(
    tmp_path, monkeypatch, fast
):
    """Clipping active (clip 0.05 on a tiny pretrainer's gradients): the runner that hands the
    clip factor to AdamWeightDecay trains to the weights of one that clips the gradients
    first, with the fused update and without."""
    examples = synthetic_pretraining_examples(12)

    def optimizer_fn():
        return create_optimizer(0.01, 100, 0, clip_norm=0.05)

    with fast_kernels(fast):
        folded = make_runner(tmp_path / "folded", optimizer_fn=optimizer_fn)
        start = [v.numpy() for v in folded.model.trainable_variables]
        folded_weights = trained_weights(folded, examples, 4)
        # Not an AdamWeightDecay to the runner: it clips with tf.clip_by_global_norm.
        monkeypatch.setattr(runner_module, "AdamWeightDecay", type("Other", (), {}))
        clipping = make_runner(tmp_path / "clipping", optimizer_fn=optimizer_fn)
        clipping_weights = trained_weights(clipping, examples, 4)
    assert max(np.abs(a - b).max() for a, b in zip(folded_weights, start, strict=True)) > 1e-3
    for a, b in zip(folded_weights, clipping_weights, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
