"""Frozen-weight products (TF_ONEDNN_ASSUME_FROZEN_WEIGHTS): the environment read as TensorFlow
reads it, FusedInferenceEncoder's outputs unchanged in a process that has them on, and training
refused while they are asked for (TensorFlow's products would keep the first weights)."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from official_bert.kernels import FusedInferenceEncoder
from official_bert.kernels.frozen_weights import (
    FROZEN_WEIGHTS_VARIABLE,
    ONEDNN_VARIABLE,
    frozen_weight_products_requested,
    refuse_frozen_weight_products,
    use_frozen_weight_products,
)
from tests.conftest import random_inputs, synthetic_pretraining_examples
from tests.kernels.test_inference_encoder import _encoder, _float32
from tests.training.test_runner import dataset_fn_of, make_runner

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "environ, requested",
    [
        ({}, False),
        ({FROZEN_WEIGHTS_VARIABLE: "1"}, True),
        ({FROZEN_WEIGHTS_VARIABLE: "TRUE"}, True),
        ({FROZEN_WEIGHTS_VARIABLE: "0"}, False),
        ({FROZEN_WEIGHTS_VARIABLE: "False"}, False),
        # Without oneDNN the variable does nothing; an unreadable oneDNN switch keeps oneDNN on.
        ({FROZEN_WEIGHTS_VARIABLE: "1", ONEDNN_VARIABLE: "0"}, False),
        ({FROZEN_WEIGHTS_VARIABLE: "1", ONEDNN_VARIABLE: "false"}, False),
        ({FROZEN_WEIGHTS_VARIABLE: "1", ONEDNN_VARIABLE: "yes"}, True),
    ],
)
def test_the_environment_is_read_as_tensorflow_reads_it(environ, requested):
    assert frozen_weight_products_requested(environ) is requested


@pytest.mark.parametrize("value", ["yes", "", "2"])
def test_a_value_tensorflow_cannot_read_is_named(value):
    with pytest.raises(ValueError, match=f"{FROZEN_WEIGHTS_VARIABLE}='{value}'.*0, 1, false"):
        frozen_weight_products_requested({FROZEN_WEIGHTS_VARIABLE: value})


def test_switching_on_sets_the_variable_and_the_guard_then_refuses():
    environ = {"OTHER": "x"}
    refuse_frozen_weight_products("training", environ)  # nothing asked for yet: no error
    assert use_frozen_weight_products(environ=environ) is True
    assert environ == {"OTHER": "x", FROZEN_WEIGHTS_VARIABLE: "1"}
    with pytest.raises(RuntimeError, match="so evaluation would silently compute with stale"):
        refuse_frozen_weight_products("evaluation", environ)


@pytest.mark.parametrize(
    "enabled, default, before, after",
    [
        (True, False, {}, "1"),
        (False, True, {FROZEN_WEIGHTS_VARIABLE: "1"}, "0"),  # an explicit choice wins
        (None, True, {}, "1"),  # unset flag: the script's default
        (None, False, {}, "0"),
        (None, True, {FROZEN_WEIGHTS_VARIABLE: "false"}, "false"),  # the environment's choice
        (None, False, {FROZEN_WEIGHTS_VARIABLE: "1"}, "1"),
    ],
)
def test_a_flag_sets_the_choice_and_an_unset_one_keeps_the_environments(
    enabled, default, before, after
):
    environ = dict(before)
    requested = use_frozen_weight_products(enabled, default=default, environ=environ)
    assert environ == {FROZEN_WEIGHTS_VARIABLE: after}
    assert requested is (after in ("1", "true"))


def test_training_refuses_to_start_while_the_environment_asks_for_frozen_weights(
    tmp_path, monkeypatch
):
    runner = make_runner(tmp_path)
    # No product runs while the variable is set (train refuses first), so TensorFlow, which
    # reads it once, never takes it in this test process.
    monkeypatch.setenv(FROZEN_WEIGHTS_VARIABLE, "1")
    examples = synthetic_pretraining_examples(8)
    with pytest.raises(RuntimeError, match=f"{FROZEN_WEIGHTS_VARIABLE}=1 is set.*training"):
        runner.train(dataset_fn_of(examples, 8), 8)
    assert runner.step == 0
    monkeypatch.setenv(FROZEN_WEIGHTS_VARIABLE, "0")
    runner.train(dataset_fn_of(examples, 8), 8)
    assert runner.step == 3


def test_the_optimizer_refuses_to_update_under_frozen_weight_products(monkeypatch):
    # Keras's model.fit (or any loop of the user's) reaches the update through apply_gradients.
    # No matrix product runs here, so TensorFlow cannot take the variable in this process.
    import keras

    from official_bert.training.optimization import AdamWeightDecay

    weight = keras.Variable(1.0)
    optimizer = AdamWeightDecay(learning_rate=0.1)
    # float16's LossScaleOptimizer calls the inner optimizer's apply, not apply_gradients.
    scaled = keras.optimizers.LossScaleOptimizer(AdamWeightDecay(learning_rate=0.1))
    monkeypatch.setenv(FROZEN_WEIGHTS_VARIABLE, "true")
    with pytest.raises(RuntimeError, match=f"{FROZEN_WEIGHTS_VARIABLE}=true.*training"):
        optimizer.apply_gradients([(np.float32(1.0), weight)])
    with pytest.raises(RuntimeError, match=f"{FROZEN_WEIGHTS_VARIABLE}=true.*training"):
        scaled.apply_gradients([(np.float32(1.0), weight)])
    assert float(weight.numpy()) == 1.0
    monkeypatch.delenv(FROZEN_WEIGHTS_VARIABLE)
    optimizer.apply_gradients([(np.float32(1.0), weight)])
    assert float(weight.numpy()) < 1.0


# Run in a process of its own with frozen-weight products on. First TensorFlow's own behaviour,
# which shows that the variable took effect there (and why training must not run so): a product
# keeps the weight of its first call. Then FusedInferenceEncoder (each path of it: few tokens on
# TensorFlow's kernels, oneDNN's, a large batch in two halves) and the Keras encoder (plain and
# fast layers) on inputs of several shapes: any product that kept an activation of an earlier
# call would show as a wrong output.
_FROZEN_PROCESS = """
import sys
import numpy as np
import tensorflow as tf
from tensorflow.python.util import _pywrap_util_port
from official_bert.kernels import FusedInferenceEncoder, fast_kernels
from official_bert.models import BertEncoder
from tests.conftest import tiny_encoder_kwargs

weights_path, inputs_path, outputs_path = sys.argv[1:4]
# Large enough for TensorFlow to hand it to oneDNN (it keeps small products on its own kernels).
kernel, bias = tf.Variable(tf.eye(256)), tf.Variable(tf.ones([256]))
product = tf.function(lambda x: tf.nn.bias_add(tf.matmul(x, kernel), bias))
x = tf.reshape(tf.range(64 * 256, dtype=tf.float32) / 1000.0, [64, 256])
first = product(x).numpy()
kernel.assign(2.0 * tf.eye(256))
kept_first_weight = bool(np.array_equal(product(x).numpy(), first))

encoders = {}
for fast in (False, True):
    with fast_kernels(fast):
        encoders[fast] = BertEncoder(**tiny_encoder_kwargs())
    encoders[fast].build()
    encoders[fast].load_weights(weights_path)
inputs = np.load(inputs_path)
models = {
    "float32": FusedInferenceEncoder(encoders[True], dtype="float32"),
    "bfloat16": FusedInferenceEncoder(encoders[True], dtype="bfloat16"),
    "keras_plain": lambda batch: encoders[False](batch, training=False),
    "keras_fast": lambda batch: encoders[True](batch, training=False),
}
results = {}
for key, model in models.items():
    call = tf.function(lambda batch: model(batch)["sequence_output"], reduce_retracing=True)
    for name in sorted({key.split("/")[0] for key in inputs.files}):
        batch = {part: inputs[f"{name}/{part}"] for part in
                 ("input_word_ids", "input_mask", "input_type_ids")}
        results[f"{key}/{name}"] = tf.cast(call(batch), tf.float32).numpy()
np.savez(outputs_path, **results)
print("onednn", bool(_pywrap_util_port.IsMklEnabled()), "kept", kept_first_weight)
"""

_SHAPES = {"a_48_tokens": (3, 16), "b_8_tokens": (1, 8), "c_halves": (8, 24), "d_80": (2, 40)}


def test_inference_gives_the_same_outputs_with_frozen_weight_products(tmp_path):
    encoder = _encoder()
    weights_path = str(tmp_path / "encoder.weights.h5")
    encoder.save_weights(weights_path)
    inputs = {
        name: random_inputs(batch=batch, seq=seq, seed=index)
        for index, (name, (batch, seq)) in enumerate(_SHAPES.items())
    }
    np.savez(
        tmp_path / "inputs.npz",
        **{
            f"{name}/{part}": value
            for name, batch in inputs.items()
            for part, value in batch.items()
        },
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
    env[FROZEN_WEIGHTS_VARIABLE] = "1"
    outputs_path = tmp_path / "outputs.npz"
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            _FROZEN_PROCESS,
            weights_path,
            str(tmp_path / "inputs.npz"),
            str(outputs_path),
        ],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    onednn, kept = result.stdout.split()[-3], result.stdout.split()[-1]
    # Where TensorFlow runs oneDNN products the switch took effect (the product kept its first
    # weight); elsewhere the variable does nothing and the outputs below are the plain path's.
    assert kept == onednn, result.stdout
    frozen = np.load(outputs_path)
    for name, batch in inputs.items():
        exact = _float32(encoder(batch, training=False)["sequence_output"])
        for key in ("float32", "keras_plain", "keras_fast"):
            np.testing.assert_allclose(frozen[f"{key}/{name}"], exact, atol=2e-5, rtol=1e-5)
        # bfloat16: oneDNN's blocked kernels round at other places than the plain ones; within
        # bfloat16's precision of float32 and of the plain bfloat16 encoder.
        plain_bfloat16 = _float32(
            FusedInferenceEncoder(encoder, dtype="bfloat16")(batch)["sequence_output"]
        )
        np.testing.assert_allclose(frozen[f"bfloat16/{name}"], plain_bfloat16, atol=0.1, rtol=0.05)
        error = np.abs(frozen[f"bfloat16/{name}"] - exact)
        assert error.mean() < 0.02 and error.max() < 0.2, (name, error.mean(), error.max())
