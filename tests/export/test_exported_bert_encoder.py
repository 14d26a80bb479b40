"""Loading the exported encoder: our Keras 3 layer (fine-tunes in fit), tensorflow_hub.KerasLayer
in tf_keras (fine-tunes), keras.layers.TFSMLayer (loads)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert.export import ExportedBertEncoder
from official_bert.models import BertClassifier
from tests.conftest import random_inputs

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


def _labels(batch):
    return np.arange(batch, dtype=np.int32) % 2


def test_keras3_layer_equals_the_module_and_fine_tunes_in_fit(tiny_exports):
    layer = ExportedBertEncoder(tiny_exports["model"])
    module = tf.saved_model.load(tiny_exports["model"])
    assert (layer.hidden_size, layer.num_layers, layer.do_lower_case) == (32, 2, True)
    assert layer.vocab_file.endswith("vocab.txt")
    assert len(layer.trainable_weights) == len(module.trainable_variables)
    assert all(":" not in weight.path for weight in layer.weights)
    inputs = random_inputs(batch=8, seq=16)
    np.testing.assert_array_equal(
        layer(inputs)["sequence_output"], module(inputs, training=False)["sequence_output"]
    )

    symbolic = {name: keras.Input((16,), dtype="int32", name=name) for name in INPUT_NAMES}
    outputs = layer(symbolic)
    assert tuple(outputs["sequence_output"].shape) == (None, 16, 32)
    assert tuple(outputs["pooled_output"].shape) == (None, 32)
    assert len(outputs["encoder_outputs"]) == 2
    model = keras.Model(symbolic, keras.layers.Dense(2)(outputs["pooled_output"]))
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    before = [weight.numpy().copy() for weight in layer.trainable_weights]
    history = model.fit(inputs, _labels(8), batch_size=4, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    changed = [
        not np.array_equal(old, weight.numpy())
        for old, weight in zip(before, layer.trainable_weights, strict=True)
    ]
    assert all(changed)


def test_frozen_layer_keeps_its_weights_and_its_dropout_off(tiny_exports):
    layer = ExportedBertEncoder(tiny_exports["model"], trainable=False)
    assert layer.trainable_weights == []
    inputs = random_inputs(batch=2, seq=16)
    np.testing.assert_array_equal(
        layer(inputs, training=True)["pooled_output"],
        layer(inputs, training=False)["pooled_output"],
    )


def test_bert_classifier_on_the_exported_encoder(tiny_exports):
    classifier = BertClassifier(ExportedBertEncoder(tiny_exports["model"]), num_classes=3)
    classifier.build()
    logits = classifier(random_inputs(batch=4, seq=16), training=False)
    assert logits.shape == (4, 3)
    # Encoder weights, then the head's kernel and bias.
    assert len(classifier.trainable_variables) == len(classifier.encoder.trainable_weights) + 2


def test_not_an_encoder_is_refused(tiny_exports):
    with pytest.raises(ValueError, match="not an exported BERT encoder"):
        ExportedBertEncoder(tiny_exports["preprocessing"])
    layer = ExportedBertEncoder(tiny_exports["model"])
    with pytest.raises(ValueError, match="takes a dict with"):
        layer({"input_word_ids": np.zeros((1, 4), np.int32)})


def test_hub_keras_layer_fine_tunes_in_tf_keras(tiny_exports):
    import tensorflow_hub as hub
    import tf_keras

    layer = hub.KerasLayer(tiny_exports["model"], trainable=True)
    symbolic = {name: tf_keras.Input((16,), dtype=tf.int32, name=name) for name in INPUT_NAMES}
    outputs = layer(symbolic)
    assert outputs["sequence_output"].shape.as_list() == [None, 16, 32]
    model = tf_keras.Model(symbolic, tf_keras.layers.Dense(2)(outputs["pooled_output"]))
    model.compile(
        optimizer=tf_keras.optimizers.Adam(1e-3),
        loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    before = [weight.numpy().copy() for weight in layer.trainable_weights]
    assert len(before) == len(tf.saved_model.load(tiny_exports["model"]).trainable_variables)
    model.fit(random_inputs(batch=8, seq=16), _labels(8), batch_size=4, epochs=2, verbose=0)
    assert all(
        not np.array_equal(old, weight.numpy())
        for old, weight in zip(before, layer.trainable_weights, strict=True)
    )


def test_tfsm_layer_loads_the_module(tiny_exports):
    # Keras 3's generic loader: the root call takes the input dict as the Hub API says.
    layer = keras.layers.TFSMLayer(tiny_exports["model"], call_endpoint="__call__")
    inputs = random_inputs(batch=2, seq=16)
    outputs = layer(inputs)
    expected = tf.saved_model.load(tiny_exports["model"])(inputs, training=False)
    np.testing.assert_array_equal(outputs["pooled_output"], expected["pooled_output"])
    np.testing.assert_array_equal(outputs["encoder_outputs"][1], expected["encoder_outputs"][1])
    # The serving signature takes the same tensors as keyword arguments.
    serving = keras.layers.TFSMLayer(tiny_exports["model"], call_endpoint="serving_default")
    flat = serving.call_endpoint_fn(**{name: tf.constant(value) for name, value in inputs.items()})
    np.testing.assert_array_equal(flat["encoder_outputs_1"], expected["encoder_outputs"][1])
