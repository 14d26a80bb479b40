import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert.models import BertEncoder
from tests.conftest import random_inputs, tiny_encoder_kwargs
from tests.warm_interpreter import run_script


@pytest.mark.parametrize(
    "name, sizes, expected",
    [
        # Parameter counts of the released models (pooler included, heads excluded).
        (
            "BERT-Tiny",
            dict(hidden_size=128, num_layers=2, num_attention_heads=2, intermediate_size=512),
            4_385_920,
        ),
        ("BERT-Base", dict(), 109_482_240),
        (
            "BERT-Large",
            dict(hidden_size=1024, num_layers=24, num_attention_heads=16, intermediate_size=4096),
            335_141_888,
        ),
    ],
)
def test_parameter_counts_equal_the_originals(name, sizes, expected, monkeypatch):
    # A count needs the weights' shapes, not their values: zeros stand in for the truncated
    # normal draws (BERT's initializer), which are most of the work of building BERT-Large.
    monkeypatch.setattr(
        keras.initializers.TruncatedNormal, "__call__", keras.initializers.Zeros.__call__
    )
    encoder = BertEncoder(vocab_size=30522, type_vocab_size=2, **sizes)
    encoder.build()
    assert encoder.count_params() == expected, name


def test_outputs_dict_shapes_and_layers(tiny_encoder):
    inputs = random_inputs()
    outputs = tiny_encoder(inputs)
    assert outputs["sequence_output"].shape == (3, 16, 32)
    assert outputs["pooled_output"].shape == (3, 32)
    assert len(outputs["encoder_outputs"]) == 2
    np.testing.assert_array_equal(outputs["encoder_outputs"][-1], outputs["sequence_output"])
    cls = outputs["sequence_output"][:, 0, :]
    pooler = tiny_encoder.pooler
    np.testing.assert_allclose(
        outputs["pooled_output"],
        np.tanh(cls @ pooler.kernel.numpy() + pooler.bias.numpy()),
        atol=1e-5,
    )


@pytest.mark.parametrize("causal", [False, True])
def test_padding_does_not_change_real_positions(causal):
    encoder = BertEncoder(**tiny_encoder_kwargs(causal=causal))
    inputs = random_inputs()
    changed = {k: v.copy() for k, v in inputs.items()}
    changed["input_word_ids"][1, 12:] = 7  # row 1 is padded from 12 on
    a = encoder(inputs)["sequence_output"].numpy()
    b = encoder(changed)["sequence_output"].numpy()
    np.testing.assert_allclose(a[1, :12], b[1, :12], atol=1e-6)


def test_training_switches_dropout(tiny_encoder):
    inputs = random_inputs()
    first = tiny_encoder(inputs, training=False)["sequence_output"].numpy()
    np.testing.assert_array_equal(first, tiny_encoder(inputs, training=False)["sequence_output"])
    assert not np.allclose(first, tiny_encoder(inputs, training=True)["sequence_output"])


def test_bad_inputs_are_clear_errors(tiny_encoder):
    with pytest.raises(TypeError, match="takes a dict"):
        tiny_encoder(np.zeros((1, 4), np.int32))
    with pytest.raises(KeyError, match="input_type_ids"):
        tiny_encoder(
            {"input_word_ids": np.zeros((1, 4), np.int32), "input_mask": np.ones((1, 4), np.int32)}
        )
    too_long = random_inputs(batch=1, seq=65, pad_rows=False)
    with pytest.raises(ValueError, match="longer than max_position_embeddings \\(64\\)"):
        tiny_encoder(too_long)


def test_every_weight_survives_a_tf_train_checkpoint_round_trip(tiny_encoder, tmp_path):
    # Keras 3 layers kept only in a Python list are invisible to tf.train.Checkpoint; prove that
    # none of ours is: every weight is written, and every value comes back.
    path = tf.train.Checkpoint(model=tiny_encoder).write(str(tmp_path / "ckpt"))
    stored = [n for n, _ in tf.train.list_variables(path) if n.endswith("VARIABLE_VALUE")]
    assert len(stored) == len(tiny_encoder.weights) == 2 * 16 + 5 + 2
    other = BertEncoder(**tiny_encoder_kwargs())
    other.build()
    assert not all(
        np.array_equal(a, b) for a, b in zip(other.weights, tiny_encoder.weights, strict=True)
    )
    tf.train.Checkpoint(model=other).read(path).assert_consumed()
    for a, b in zip(other.weights, tiny_encoder.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_keras_file_round_trip_in_a_fresh_process(tiny_encoder, tmp_path):
    inputs = random_inputs()
    expected = tiny_encoder(inputs)["sequence_output"].numpy()
    np.savez(tmp_path / "io.npz", expected=expected, **inputs)
    tiny_encoder.save(tmp_path / "encoder.keras")
    script = f"""
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras
import official_bert  # registers the layers
data = np.load({str(tmp_path / "io.npz")!r})
model = keras.saving.load_model({str(tmp_path / "encoder.keras")!r})
out = model({{k: data[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}})
assert type(model).__name__ == "BertEncoder", type(model)
np.testing.assert_array_equal(out["sequence_output"].numpy(), data["expected"])
print("OK", len(model.weights))
"""
    # A fork of a warm interpreter that imported the library but built no model (as here).
    result = run_script(["-c", script], timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"OK {len(tiny_encoder.weights)}" in result.stdout


def test_mixed_bfloat16_policy_runs_in_bfloat16_with_float32_weights():
    encoder = BertEncoder(**tiny_encoder_kwargs(), dtype="mixed_bfloat16")
    encoder.build()
    outputs = encoder(random_inputs())
    assert outputs["sequence_output"].dtype == tf.bfloat16
    assert all(w.dtype == "float32" for w in encoder.weights)
    reference = BertEncoder(**tiny_encoder_kwargs())
    reference.build()
    for a, b in zip(reference.weights, encoder.weights, strict=True):
        a.assign(b)
    full = reference(random_inputs())["sequence_output"].numpy()
    # bfloat16 keeps ~3 significant digits: close to float32, not equal.
    assert np.abs(outputs["sequence_output"].numpy().astype(np.float32) - full).max() < 0.1


def test_from_bert_config_uses_every_field():
    from official_bert.config import BertConfig

    config = BertConfig(
        vocab_size=50,
        hidden_size=24,
        num_hidden_layers=3,
        num_attention_heads=6,
        intermediate_size=40,
        hidden_act="relu",
        hidden_dropout_prob=0.2,
        attention_probs_dropout_prob=0.3,
        max_position_embeddings=20,
        type_vocab_size=3,
        initializer_range=0.05,
        layer_norm_eps=1e-6,
    )
    encoder = BertEncoder.from_bert_config(config)
    assert (encoder.vocab_size, encoder.hidden_size, encoder.num_layers) == (50, 24, 3)
    assert (encoder.num_attention_heads, encoder.intermediate_size) == (6, 40)
    assert (encoder.activation, encoder.hidden_dropout_rate) == ("relu", 0.2)
    assert (encoder.attention_dropout_rate, encoder.max_position_embeddings) == (0.3, 20)
    assert (encoder.type_vocab_size, encoder.initializer_range) == (3, 0.05)
    assert encoder.layer_norm_epsilon == 1e-6
    assert keras.saving.get_registered_name(BertEncoder) == "official_bert>BertEncoder"


@pytest.mark.parametrize("causal", [True, False])
def test_causal_encoder_never_looks_ahead(causal):
    """causal=True (the LTR ablation): changing the tokens after position i leaves the outputs
    at positions <= i unchanged, in every layer, while later outputs change. The bidirectional
    encoder, run on the same inputs, changes the earlier outputs too (so the check can fail)."""
    keras.utils.set_random_seed(0)
    encoder = BertEncoder(**tiny_encoder_kwargs(causal=causal))
    encoder.build()
    inputs = random_inputs(batch=4, seq=16)  # rows 1 and 3 padded from position 12 on
    for i in (0, 5, 10):
        perturbed = {k: v.copy() for k, v in inputs.items()}
        # Every later token becomes another id in [1, 99].
        later_ids = perturbed["input_word_ids"][:, i + 1 :]
        perturbed["input_word_ids"][:, i + 1 :] = (later_ids + 7) % 99 + 1
        before = encoder(inputs, training=False)
        after = encoder(perturbed, training=False)
        for a, b in zip(before["encoder_outputs"], after["encoder_outputs"], strict=True):
            a, b = np.asarray(a), np.asarray(b)
            earlier = np.abs(a[:, : i + 1] - b[:, : i + 1]).max()
            later = np.abs(a[:, i + 1 : 12] - b[:, i + 1 : 12]).max()
            assert later > 1e-3, (i, later)
            if causal:
                assert earlier <= 1e-6, (i, earlier)
            else:
                assert earlier > 1e-3, (i, earlier)


def test_causal_is_in_the_config():
    encoder = BertEncoder(**tiny_encoder_kwargs(causal=True))
    assert encoder.get_config()["causal"] is True
    assert BertEncoder.from_config(encoder.get_config()).causal
    assert BertEncoder(**tiny_encoder_kwargs()).get_config()["causal"] is False


@pytest.mark.parametrize("fast", [False, True], ids=["plain", "fast_kernels"])
@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
def test_output_positions_equal_the_full_output_gathered(fast, causal):
    from official_bert.kernels.switch import fast_kernels

    with fast_kernels(fast):
        keras.utils.set_random_seed(3)
        encoder = BertEncoder(**tiny_encoder_kwargs(num_layers=3), causal=causal)
        encoder.build()
    inputs = random_inputs(batch=3, seq=16)
    # Repeats and padding slots (0) as in a pre-training batch; row 1 points into its padding.
    positions = np.array([[3, 5, 0, 0], [1, 13, 9, 9], [15, 4, 4, 7]], np.int32)
    full = encoder(inputs)
    part = encoder(inputs, output_positions=positions)
    expected = np.take_along_axis(np.asarray(full["sequence_output"]), positions[:, :, None], 1)
    assert part["sequence_output"].shape == (3, 4, 32)
    np.testing.assert_allclose(np.asarray(part["sequence_output"]), expected, atol=2e-6)
    np.testing.assert_allclose(
        np.asarray(part["pooled_output"]), np.asarray(full["pooled_output"]), atol=2e-6
    )
    assert part["encoder_outputs"][-1] is part["sequence_output"]
    for lower, lower_full in zip(
        part["encoder_outputs"][:-1], full["encoder_outputs"][:-1], strict=True
    ):
        np.testing.assert_allclose(np.asarray(lower), np.asarray(lower_full), atol=2e-6)
    # Dropout on: the same shapes, and the outputs do change.
    dropped = encoder(inputs, training=True, output_positions=positions)
    assert dropped["sequence_output"].shape == (3, 4, 32)
    assert not np.allclose(np.asarray(dropped["sequence_output"]), expected, atol=1e-3)


@pytest.mark.parametrize("fast", [False, True])
def test_freezing_before_the_build_freezes_every_weight(fast):
    """Keras's MultiHeadAttention makes its projections when built: a `trainable = False` set
    on the encoder before that must still reach them, so fit changes only the head."""
    from official_bert.kernels.switch import fast_kernels
    from official_bert.models import BertClassifier

    with fast_kernels(fast):
        encoder = BertEncoder(**tiny_encoder_kwargs())
        encoder.trainable = False
        model = BertClassifier(encoder, num_classes=2)
        inputs = random_inputs(batch=4, seq=8)
        model(inputs)
    assert len(model.trainable_weights) == 2  # the head's kernel and bias
    before = [np.asarray(w).copy() for w in encoder.weights]
    model.compile(keras.optimizers.Adam(1e-2), keras.losses.SparseCategoricalCrossentropy(True))
    model.fit(inputs, np.array([0, 1, 0, 1]), epochs=2, verbose=0)
    for weight, value in zip(encoder.weights, before, strict=True):
        np.testing.assert_array_equal(np.asarray(weight), value, err_msg=weight.path)
