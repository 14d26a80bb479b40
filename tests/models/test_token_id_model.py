"""The models' inputs are int32 token tensors whatever the dtype policy, and Keras's SavedModel
export (model.export) takes them at any batch size and sequence length."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert.models import BertClassifier, BertEncoder, BertPretrainer
from tests.conftest import random_inputs, tiny_encoder_kwargs


@pytest.fixture
def policy(request):
    keras.mixed_precision.set_global_policy(request.param)
    yield request.param
    keras.mixed_precision.set_global_policy("float32")


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"], indirect=True)
def test_the_export_takes_int32_ids_of_any_size(policy, tmp_path):
    # vocab 1000: ids above 256, which bfloat16 does not hold exactly (257 -> 256).
    encoder = BertEncoder(**tiny_encoder_kwargs(vocab_size=1000))
    model = BertClassifier(encoder, num_classes=3)
    model(random_inputs(batch=2, seq=8, vocab=1000))  # the first call: batch 2, length 8
    assert model.input_dtype == encoder.input_dtype == "int32"
    model.export(str(tmp_path / "export"), verbose=False)
    served = tf.saved_model.load(str(tmp_path / "export"))
    (specs,), _ = served.serve.concrete_functions[0].structured_input_signature
    assert {name: (spec.shape.as_list(), spec.dtype) for name, spec in specs.items()} == {
        name: ([None, None], tf.int32)
        for name in ("input_word_ids", "input_mask", "input_type_ids")
    }
    inputs = random_inputs(batch=3, seq=12, vocab=1000, seed=1)
    inputs["input_word_ids"][:, 1:4] = [257, 259, 999]
    direct = np.asarray(model(inputs, training=False), np.float32)
    exported = served.serve({k: tf.constant(v) for k, v in inputs.items()}).numpy()
    np.testing.assert_allclose(
        exported.astype(np.float32), direct, atol=1e-6 if policy == "float32" else 2e-2
    )


def test_a_float_tensor_of_ids_is_cast_to_int32():
    model = BertPretrainer(BertEncoder(**tiny_encoder_kwargs()))
    inputs = dict(random_inputs(), masked_lm_positions=np.array([[1, 2]] * 3, np.int32))
    as_floats = {k: v.astype(np.float32) for k, v in inputs.items()}
    expected = model(inputs, training=False)["mlm_logits"]
    np.testing.assert_array_equal(model(as_floats, training=False)["mlm_logits"], expected)


def test_every_model_exports_with_named_inputs_even_before_a_call(tmp_path):
    """The encoder (a list among its outputs) and the pre-trainer (masked_lm_positions) export
    too, built without a call as load_encoder builds them; the signature's inputs carry their
    names (Keras's args_0, args_0_1, ... took them in sorted order, so the natural order ran
    the wrong ids without an error)."""
    from official_bert.models import BertMultipleChoice

    positions = np.array([[1, 2]] * 3, np.int32)
    for name, model, inputs in (
        ("encoder", BertEncoder(**tiny_encoder_kwargs()), random_inputs()),
        (
            "pretrainer",
            BertPretrainer(BertEncoder(**tiny_encoder_kwargs())),
            dict(random_inputs(), masked_lm_positions=positions),
        ),
        (
            "choices",
            BertMultipleChoice(BertEncoder(**tiny_encoder_kwargs())),
            {k: np.stack([v, v[::-1]], axis=1) for k, v in random_inputs().items()},
        ),
    ):
        if name != "encoder":
            model.build()  # built, never called (as load_encoder leaves a model)
        # The encoder neither built nor called, as made from a config: export builds it.
        model.export(str(tmp_path / name), verbose=False)
        signature = tf.saved_model.load(str(tmp_path / name)).signatures["serving_default"]
        specs = signature.structured_input_signature[1]
        assert set(specs) == set(inputs), name
        served = signature(**{key: tf.constant(value) for key, value in inputs.items()})
        direct = model(inputs, training=False)
        if isinstance(direct, dict):
            assert served.keys() >= {"sequence_output", "pooled_output"} or "mlm_logits" in served
            for key, value in direct.items():
                if isinstance(value, list):
                    for index, layer in enumerate(value):
                        np.testing.assert_allclose(served[f"{key}_{index}"], layer, atol=1e-5)
                else:
                    np.testing.assert_allclose(served[key], value, atol=1e-5, err_msg=key)
        else:
            (only,) = served.values()
            np.testing.assert_allclose(only, direct, atol=1e-5)
