"""BertMultipleChoice: one score per (context, choice) row, absent choices masked, the same
scores as BertClassifier-style scoring of each row alone, .keras round trip, fast kernels."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert.kernels.switch import fast_kernels
from official_bert.models import BertEncoder, BertMultipleChoice
from official_bert.models.bert_multiple_choice import ABSENT_CHOICE_LOGIT
from tests.conftest import assert_gradients_close, random_inputs, tiny_encoder_kwargs


def _choice_inputs(batch=2, choices=3, seq=16, choice_mask=None):
    """Encoder inputs [batch, choices, seq]: random_inputs rows reshaped."""
    flat = random_inputs(batch=batch * choices, seq=seq, seed=3)
    inputs = {name: value.reshape(batch, choices, seq) for name, value in flat.items()}
    if choice_mask is not None:
        inputs["choice_mask"] = np.asarray(choice_mask, np.int32)
    return inputs, flat


def _model(fast=False):
    with fast_kernels(fast):
        encoder = BertEncoder(
            **tiny_encoder_kwargs(), hidden_dropout_rate=0.0, attention_dropout_rate=0.0
        )
        model = BertMultipleChoice(encoder, dropout_rate=0.0)
        model.build()
    return model


def test_each_choice_scored_alone_from_its_pooled_output():
    model = _model()
    inputs, flat = _choice_inputs()
    logits = model(inputs).numpy()
    assert logits.shape == (2, 3) and logits.dtype == np.float32
    pooled = model.encoder(flat)["pooled_output"].numpy()
    kernel, bias = (w.numpy() for w in model.multiple_choice.dense.weights)
    expected = (pooled @ kernel + bias).reshape(2, 3)
    np.testing.assert_allclose(logits, expected, atol=1e-6)
    # A row's score does not depend on the other choices of its example.
    alone = model({name: value[:1, 1:2] for name, value in inputs.items()}).numpy()
    np.testing.assert_allclose(alone[0, 0], logits[0, 1], atol=1e-6)


def test_absent_choices_get_no_probability_and_the_loss_stays_finite():
    model = _model()
    inputs, _ = _choice_inputs(choice_mask=[[1, 1, 1], [1, 1, 0]])
    with tf.GradientTape() as tape:
        logits = model(inputs, training=True)
        loss = keras.losses.sparse_categorical_crossentropy(
            np.array([2, 1]), logits, from_logits=True
        )
    gradients = tape.gradient(loss, model.trainable_variables)
    assert logits.numpy()[1, 2] == ABSENT_CHOICE_LOGIT
    assert tf.nn.softmax(logits).numpy()[1, 2] == 0.0
    assert np.isfinite(loss.numpy()).all()
    assert all(np.isfinite(tf.convert_to_tensor(g).numpy()).all() for g in gradients)
    unmasked = model({k: v for k, v in inputs.items() if k != "choice_mask"}).numpy()
    np.testing.assert_array_equal(unmasked[0], logits.numpy()[0])
    assert unmasked[1, 2] != ABSENT_CHOICE_LOGIT


def test_keras_round_trip(tmp_path):
    model = _model()
    inputs, _ = _choice_inputs(choice_mask=[[1, 1, 1], [1, 0, 1]])
    before = model(inputs).numpy()
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert type(loaded) is BertMultipleChoice
    np.testing.assert_array_equal(loaded(inputs).numpy(), before)


@pytest.mark.parametrize("trimmed_length", [16, 8])
def test_fast_kernels_give_the_same_logits_and_gradients(trimmed_length):
    """Built with the fast kernels on, the last layer runs at [CLS] only: the same logits and
    gradients as the plain model (also on batches cut to a shorter length)."""
    models = {fast: _model(fast) for fast in (False, True)}
    models[True].set_weights(models[False].get_weights())
    inputs, _ = _choice_inputs(batch=2, choices=4)
    inputs = {name: value[..., :trimmed_length] for name, value in inputs.items()}
    results = {}
    for fast, model in models.items():
        with tf.GradientTape() as tape:
            logits = model(inputs, training=True)
            loss = keras.losses.sparse_categorical_crossentropy(
                np.array([3, 0]), logits, from_logits=True
            )
        results[fast] = (logits.numpy(), tape.gradient(loss, model.trainable_variables))
    np.testing.assert_allclose(results[True][0], results[False][0], atol=1e-5)
    assert_gradients_close(models[False].trainable_variables, results[False][1], results[True][1])
