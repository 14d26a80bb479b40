import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert.training.optimization import (
    AdamWeightDecay,
    WarmupLinearDecay,
    create_optimizer,
)


def test_reaches_the_target_like_the_original_optimization_test():
    # The original optimization_test.py: 100 steps at lr 0.2 bring w to x within 1e-2.
    w = keras.Variable([0.1, -0.2, -0.1], name="w")
    x = tf.constant([0.4, 0.2, -0.5])
    optimizer = AdamWeightDecay(learning_rate=0.2)
    for _ in range(100):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(x - w))
        optimizer.apply_gradients([(tape.gradient(loss, w), w)])
    np.testing.assert_allclose(w.numpy(), [0.4, 0.2, -0.5], rtol=1e-2, atol=1e-2)


def _reference_update(param, grad, m, v, lr, decay, b1=0.9, b2=0.999, eps=1e-6):
    # The original AdamWeightDecayOptimizer.apply_gradients, in numpy.
    m = b1 * m + (1 - b1) * grad
    v = b2 * v + (1 - b2) * grad**2
    update = m / (np.sqrt(v) + eps) + decay * param
    return param - lr * update, m, v


def test_update_equals_the_original_without_bias_correction_and_with_decay_exclusions():
    rng = np.random.default_rng(0)
    kernel = keras.Variable(rng.normal(size=(3, 2)).astype(np.float32), name="kernel")
    bias = keras.Variable(rng.normal(size=(2,)).astype(np.float32), name="bias")
    gamma = keras.Variable(rng.normal(size=(2,)).astype(np.float32), name="gamma")
    optimizer = AdamWeightDecay(learning_rate=0.05, weight_decay_rate=0.1)
    expected = {v.name: [v.numpy(), 0.0, 0.0] for v in (kernel, bias, gamma)}
    for _ in range(5):
        grads = [rng.normal(size=v.shape).astype(np.float32) for v in (kernel, bias, gamma)]
        optimizer.apply_gradients(zip(grads, (kernel, bias, gamma), strict=True))
        for variable, grad in zip((kernel, bias, gamma), grads, strict=True):
            param, m, v = expected[variable.name]
            decay = 0.1 if variable.name == "kernel" else 0.0
            expected[variable.name] = list(_reference_update(param, grad, m, v, 0.05, decay))
    for variable in (kernel, bias, gamma):
        np.testing.assert_allclose(
            variable.numpy(), expected[variable.name][0], rtol=1e-5, atol=1e-6
        )


def _torch_adamw_update(param, grad, m, v, step, lr, decay, b1=0.9, b2=0.999, eps=1e-6):
    # torch.optim.AdamW (and the paper's AdamW): decay first, then bias-corrected moments with
    # epsilon added to sqrt(v_hat), in numpy.
    param = param * (1 - lr * decay)
    m = b1 * m + (1 - b1) * grad
    v = b2 * v + (1 - b2) * grad**2
    m_hat, v_hat = m / (1 - b1**step), v / (1 - b2**step)
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


@pytest.mark.parametrize("compiled", [False, True])
def test_adamw_torch_equals_torch_adamw_with_small_gradients(compiled):
    # Gradients of 1e-6..1e-4: where epsilon's placement matters (Keras's AdamW differs there).
    rng = np.random.default_rng(2)
    kernel = keras.Variable(rng.normal(size=(5, 4)).astype(np.float32), name="kernel")
    bias = keras.Variable(rng.normal(size=(4,)).astype(np.float32), name="bias")
    optimizer = create_optimizer(
        1e-2, num_train_steps=1000, num_warmup_steps=0, optimizer_type="adamw_torch"
    )
    assert optimizer.bias_correction

    def apply(grads):
        optimizer.apply_gradients(zip(grads, (kernel, bias), strict=True))

    if compiled:
        optimizer.build([kernel, bias])
        apply = tf.function(apply)
    expected = {v.name: [v.numpy().astype(np.float64), 0.0, 0.0] for v in (kernel, bias)}
    for step in range(1, 7):
        scale = 10.0 ** rng.uniform(-6, -4)
        grads = [(scale * rng.normal(size=v.shape)).astype(np.float32) for v in (kernel, bias)]
        apply([tf.constant(g) for g in grads])
        lr = 1e-2 * (1 - (step - 1) / 1000)  # linear decay from step 0, no warm-up
        for variable, grad in zip((kernel, bias), grads, strict=True):
            param, m, v = expected[variable.name]
            decay = 0.01 if variable.name == "kernel" else 0.0
            expected[variable.name] = list(_torch_adamw_update(param, grad, m, v, step, lr, decay))
    for variable in (kernel, bias):
        start = expected[variable.name][0]
        np.testing.assert_allclose(variable.numpy(), start, rtol=1e-5, atol=1e-6)
    # Keras's AdamW, same steps, lands elsewhere: its epsilon is 32x larger at step 1.
    keras_kernel = keras.Variable(np.zeros((2,), np.float32), name="kernel")
    keras_opt = keras.optimizers.AdamW(learning_rate=1e-2, epsilon=1e-6, weight_decay=0.0)
    keras_opt.apply_gradients([(tf.constant([1e-5, 1e-5]), keras_kernel)])
    ours_kernel = keras.Variable(np.zeros((2,), np.float32), name="kernel")
    AdamWeightDecay(learning_rate=1e-2, bias_correction=True).apply_gradients(
        [(tf.constant([1e-5, 1e-5]), ours_kernel)]
    )
    # torch: -lr * g / (|g| + eps) = -1e-2 * 1e-5 / 1.1e-5; Keras: -lr * g / (|g| + 31.6 eps).
    np.testing.assert_allclose(ours_kernel.numpy(), [-1e-2 / 1.1] * 2, rtol=1e-5)
    assert abs(keras_kernel.numpy()[0]) < 0.3 * 1e-2


def test_compiled_update_uses_the_fused_kernel_with_the_same_result(monkeypatch):
    # In a tf.function the update is TensorFlow's fused ResourceApplyAdam (one pass over the
    # moments, with both beta powers 0: no bias correction); it must equal the Keras-ops update.
    import official_bert.training.optimization as optimization

    rng = np.random.default_rng(1)
    start = rng.normal(size=(4, 3)).astype(np.float32)
    grads = [tf.constant(rng.normal(size=(4, 3)).astype(np.float32)) for _ in range(4)]

    def train(fused: bool) -> np.ndarray:
        if not fused:
            monkeypatch.setattr(optimization, "_is_resource_variable", lambda variable: False)
        kernel = keras.Variable(start, name="kernel")
        optimizer = AdamWeightDecay(learning_rate=0.05, weight_decay_rate=0.1)
        optimizer.build([kernel])
        step = tf.function(lambda grad: optimizer.apply_gradients([(grad, kernel)]))
        graph = step.get_concrete_function(grads[0]).graph
        assert ("ResourceApplyAdam" in {op.type for op in graph.get_operations()}) is fused
        for grad in grads:
            step(grad)
        return kernel.numpy()

    fused = train(True)
    # Not bit-identical: the fused kernel's vectorized square root differs in the last bits
    # (a few 1e-5 of the update): the updates are compared.
    np.testing.assert_allclose(fused - start, train(False) - start, rtol=1e-4, atol=1e-7)


def test_schedule_warms_up_then_decays_to_zero():
    schedule = WarmupLinearDecay(1e-3, num_train_steps=100, num_warmup_steps=10)
    values = [float(schedule(step)) for step in (0, 5, 10, 55, 100, 150)]
    np.testing.assert_allclose(values, [0.0, 5e-4, 9e-4, 4.5e-4, 0.0, 0.0], atol=1e-9)
    assert (
        WarmupLinearDecay.from_config(schedule.get_config()).get_config() == schedule.get_config()
    )
    with pytest.raises(ValueError, match="num_warmup_steps"):
        WarmupLinearDecay(1e-3, 10, -1)


@pytest.mark.parametrize("decay_after_warmup", [False, True])
def test_a_warmup_longer_than_training_warms_up_throughout_as_the_original(decay_after_warmup):
    # The original's create_optimizer with its default num_warmup_steps=10000 and a 20-step run:
    # the polynomial decay is overridden at every step by step / 10000 * learning_rate.
    schedule = WarmupLinearDecay(1e-3, 20, 10_000, decay_after_warmup=decay_after_warmup)
    values = [float(schedule(step)) for step in (0, 1, 10, 19)]
    np.testing.assert_allclose(values, [0.0, 1e-7, 1e-6, 1.9e-6], rtol=1e-6)


def test_schedule_decaying_after_warmup_is_hugging_faces_linear_schedule():
    # transformers.get_linear_schedule_with_warmup's multiplier, written out.
    steps, warmup = 343, 34

    def hf_rate(step):
        if step < warmup:
            return 2e-5 * step / max(1, warmup)
        return 2e-5 * max(0.0, (steps - step) / max(1, steps - warmup))

    schedule = WarmupLinearDecay(2e-5, steps, warmup, decay_after_warmup=True)
    every_step = range(0, steps + 10)
    np.testing.assert_allclose(
        [float(schedule(step)) for step in every_step],
        [hf_rate(step) for step in every_step],
        rtol=1e-6,
        atol=1e-12,
    )
    # The original's rate is (steps - warmup) / steps of it through the decay.
    original = WarmupLinearDecay(2e-5, steps, warmup)
    np.testing.assert_allclose(float(original(100)), hf_rate(100) * (steps - warmup) / steps)
    assert WarmupLinearDecay.from_config(schedule.get_config()).decay_after_warmup
    # No decay phase at all: 0 after warm-up rather than a division by zero.
    assert float(WarmupLinearDecay(1.0, 10, 10, decay_after_warmup=True)(10)) == 0.0
    optimizer = create_optimizer(2e-5, steps, warmup, "adamw_torch", decay_after_warmup=True)
    assert float(optimizer._learning_rate(warmup)) == pytest.approx(2e-5)


@pytest.mark.parametrize("optimizer_type", ["adamw", "adamw_torch", "keras_adamw", "lamb"])
def test_create_optimizer_types_clip_and_train(optimizer_type):
    optimizer = create_optimizer(
        0.1, num_train_steps=50, num_warmup_steps=5, optimizer_type=optimizer_type
    )
    assert optimizer.global_clipnorm == 1.0
    w = keras.Variable([3.0, -3.0], name="kernel")
    start = float(tf.reduce_sum(tf.square(w)))
    for _ in range(30):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(w))
        optimizer.apply_gradients([(tape.gradient(loss, w), w)])
    assert float(tf.reduce_sum(tf.square(w))) < 0.5 * start
    with pytest.raises(ValueError, match="unknown optimizer_type"):
        create_optimizer(0.1, 10, 1, optimizer_type="sgd")


def test_serialization_round_trip():
    optimizer = create_optimizer(2e-5, 1000, 100)
    clone = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert isinstance(clone, AdamWeightDecay)
    assert clone.get_config()["weight_decay_rate"] == 0.01
    assert clone.get_config()["exclude_from_weight_decay"] == ["gamma", "beta", "bias"]


def test_sparse_embedding_gradients_are_applied():
    table = keras.Variable(np.ones((5, 2), np.float32), name="embeddings")
    optimizer = AdamWeightDecay(learning_rate=0.1)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.gather(table, [1, 3]))
    gradient = tape.gradient(loss, table)
    assert isinstance(gradient, tf.IndexedSlices)
    optimizer.apply_gradients([(gradient, table)])
    changed = np.flatnonzero(np.abs(table.numpy() - 1.0).sum(axis=1) > 0)
    assert changed.tolist() == [1, 3]
