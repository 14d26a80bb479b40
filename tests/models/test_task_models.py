"""BertPretrainer, BertClassifier and BertSpanLabeler: outputs and .keras round trips."""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert.models import BertClassifier, BertEncoder, BertPretrainer, BertSpanLabeler
from tests.conftest import assert_gradients_close, random_inputs, tiny_encoder_kwargs


def _encoder():
    return BertEncoder(**tiny_encoder_kwargs())


def _round_trip(model, inputs, tmp_path):
    before = model(inputs)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    after = loaded(inputs)
    assert type(loaded) is type(model)
    assert len(loaded.weights) == len(model.weights)
    for key in before if isinstance(before, dict) else [None]:
        a = before[key] if key else before
        b = after[key] if key else after
        if isinstance(a, list):
            continue
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    return loaded


def test_pretrainer_outputs_and_tied_mlm(tmp_path):
    model = BertPretrainer(_encoder())
    model.build()
    inputs = dict(random_inputs(), masked_lm_positions=np.array([[1, 2], [3, 4], [5, 0]], np.int32))
    outputs = model(inputs)
    assert outputs["mlm_logits"].shape == (3, 2, 100)
    assert outputs["next_sentence_logits"].shape == (3, 2)
    # The MLM output projection is the word-embedding table itself, not a copy.
    assert model.masked_lm.token_embedding.embeddings is model.encoder.token_embedding.embeddings
    assert len(model.weights) == len(model.encoder.weights) + 5 + 2
    loaded = _round_trip(model, inputs, tmp_path)
    assert loaded.masked_lm.token_embedding.embeddings is loaded.encoder.token_embedding.embeddings


def test_pretrainer_without_next_sentence_head():
    model = BertPretrainer(_encoder(), use_next_sentence_label=False)
    model.build()
    inputs = dict(random_inputs(), masked_lm_positions=np.zeros((3, 1), np.int32))
    assert "next_sentence_logits" not in model(inputs)


def test_pretrainer_masked_lm_head_may_run_its_own_activation_and_epsilon(tmp_path):
    """By default the head runs the encoder's activation and epsilon (the original's); a
    config's masked_lm_hidden_act and masked_lm_layer_norm_eps (keras-hub's BertMaskedLM head)
    override them, and the head computes with them (a .keras round trip keeps them)."""
    from official_bert.config import BertConfig

    encoder = _encoder()
    default = BertPretrainer(encoder, use_next_sentence_label=False)
    assert (default.masked_lm.activation, default.masked_lm.layer_norm_epsilon) == ("gelu", 1e-12)
    config = BertConfig(
        vocab_size=100, masked_lm_hidden_act="gelu_exact", masked_lm_layer_norm_eps=1e-5
    )
    model = BertPretrainer.from_bert_config(encoder, config, use_next_sentence_label=False)
    model.build()
    assert (model.masked_lm.activation, model.masked_lm.layer_norm_epsilon) == ("gelu_exact", 1e-5)
    assert model.masked_lm.transform_layer_norm.epsilon == 1e-5
    hidden = np.random.default_rng(3).standard_normal((2, 3, 32)).astype(np.float32)
    dense = model.masked_lm.transform_dense
    transformed = hidden @ dense.kernel.numpy() + dense.bias.numpy()
    np.testing.assert_allclose(
        dense(hidden).numpy(),
        np.asarray(keras.activations.gelu(transformed, approximate=False)),
        atol=1e-6,
    )
    inputs = dict(random_inputs(), masked_lm_positions=np.array([[1, 2], [3, 4], [5, 0]], np.int32))
    loaded = _round_trip(model, inputs, tmp_path)
    assert (loaded.masked_lm.activation, loaded.masked_lm.layer_norm_epsilon) == (
        "gelu_exact",
        1e-5,
    )


@pytest.mark.parametrize("num_classes", [1, 3])
def test_classifier(num_classes, tmp_path):
    model = BertClassifier(_encoder(), num_classes=num_classes)
    model.build()
    inputs = random_inputs()
    assert model(inputs).shape == (3, num_classes)
    _round_trip(model, inputs, tmp_path)


def test_span_labeler(tmp_path):
    model = BertSpanLabeler(_encoder())
    model.build()
    inputs = random_inputs()
    outputs = model(inputs)
    assert outputs["start_logits"].shape == (3, 16) and outputs["end_logits"].shape == (3, 16)
    _round_trip(model, inputs, tmp_path)


def test_left_to_right_pretrainer(tmp_path):
    """objective="ltr": next-token logits at every position from the same tied head, no
    masked_lm_positions read, no next-sentence head; a causal encoder is required."""
    encoder = BertEncoder(**tiny_encoder_kwargs(causal=True))
    model = BertPretrainer(encoder, use_next_sentence_label=False, objective="ltr")
    model.build()
    inputs = random_inputs()
    outputs = model(inputs)
    assert outputs["lm_logits"].shape == (3, 16, 100)
    assert "mlm_logits" not in outputs and "next_sentence_logits" not in outputs
    assert model.masked_lm.token_embedding.embeddings is model.encoder.token_embedding.embeddings
    # The head at all positions is the MLM head gathered at all positions.
    every_position = np.tile(np.arange(16, dtype=np.int32), (3, 1))
    np.testing.assert_allclose(
        outputs["lm_logits"],
        model.masked_lm(outputs["sequence_output"], every_position),
        atol=1e-6,
    )
    loaded = _round_trip(model, inputs, tmp_path)
    assert loaded.objective == "ltr" and loaded.encoder.causal

    with pytest.raises(ValueError, match="needs a causal encoder"):
        BertPretrainer(_encoder(), use_next_sentence_label=False, objective="ltr")
    with pytest.raises(ValueError, match="pass use_next_sentence_label=False"):
        BertPretrainer(BertEncoder(**tiny_encoder_kwargs(causal=True)), objective="ltr")
    with pytest.raises(ValueError, match="objective must be 'mlm' or 'ltr'"):
        BertPretrainer(_encoder(), objective="clm")


def test_multitask_classifier_heads_outputs_and_checkpoint(tmp_path):
    import tensorflow as tf

    from official_bert.models import MultiTaskClassifier

    model = MultiTaskClassifier(_encoder(), {"MRPC": 2, "sts-b": 1, "mnli": 3})
    model.build()
    inputs = random_inputs()
    outputs = model(inputs)
    assert {name: tuple(value.shape) for name, value in outputs.items()} == {
        "MRPC": (3, 2),
        "sts-b": (3, 1),
        "mnli": (3, 3),
    }
    # Every head's kernel and bias exist from the start, each its own.
    assert len(model.weights) == len(model.encoder.weights) + 3 * 2
    # The heads see one pooled output: a head's logits are its own Dense on it.
    pooled = model.encoder(inputs)["pooled_output"]
    np.testing.assert_allclose(outputs["mnli"], model.head("mnli").dense(pooled), atol=1e-6)
    _round_trip(model, inputs, tmp_path)
    # tf.train.Checkpoint sees every head under its task's name (a plain dict would hide them).
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt"))
    names = [name for name, _ in tf.train.list_variables(path)]
    for attribute in ("mrpc_classifier", "sts_b_classifier", "mnli_classifier"):
        assert any(name.startswith(f"model/{attribute}/dense/") for name in names), attribute
    with pytest.raises(ValueError, match="task names must differ"):
        MultiTaskClassifier(_encoder(), {"sts-b": 1, "STS_B": 1})
    with pytest.raises(KeyError, match="no head for task 'cola'"):
        model.head("cola")


@pytest.mark.parametrize("fast", [False, True], ids=["plain", "fast_kernels"])
def test_pretrainer_last_layer_at_predictions_only_gives_the_same_loss_and_gradients(fast):
    import tensorflow as tf

    from official_bert.kernels.switch import fast_kernels
    from official_bert.tasks.pretraining_objective import pretraining_loss

    with fast_kernels(fast):
        keras.utils.set_random_seed(5)
        # No dropout, so that training=True compares the same function in both models.
        encoder = BertEncoder(
            **tiny_encoder_kwargs(num_layers=3), hidden_dropout_rate=0.0, attention_dropout_rate=0.0
        )
        full = BertPretrainer(encoder)
        sparse = BertPretrainer(encoder, last_layer_at_predictions_only=True)
        full.build()
        sparse.build()
    sparse.set_weights(full.get_weights())
    rng = np.random.default_rng(0)
    batch = dict(
        random_inputs(batch=4, seq=16),
        masked_lm_positions=np.array(
            [[3, 5, 0, 0], [1, 2, 9, 0], [15, 4, 7, 8], [2, 0, 0, 0]], np.int32
        ),
        masked_lm_ids=rng.integers(1, 100, (4, 4)).astype(np.int32),
        masked_lm_weights=np.array(
            [[1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1], [1, 0, 0, 0]], np.float32
        ),
        next_sentence_labels=np.array([0, 1, 0, 1], np.int32),
    )
    results = []
    for model in (full, sparse):
        with tf.GradientTape() as tape:
            outputs = model(batch, training=True)
            loss = pretraining_loss(outputs, batch)
        results.append((outputs, loss, tape.gradient(loss, model.trainable_variables)))
    (full_out, full_loss, full_grads), (sparse_out, sparse_loss, sparse_grads) = results
    assert sparse_out["sequence_output"].shape == (4, 4, 32)
    for key in ("mlm_logits", "next_sentence_logits", "pooled_output"):
        np.testing.assert_allclose(
            np.asarray(sparse_out[key]), np.asarray(full_out[key]), rtol=1e-5, atol=1e-5
        )
    np.testing.assert_allclose(float(sparse_loss), float(full_loss), rtol=1e-6)
    assert len(sparse_grads) == len(full_grads) == len(full.trainable_variables)
    assert_gradients_close(full.trainable_variables, full_grads, sparse_grads)
    # The last layer's query and feed-forward weights get their gradient through the few rows.
    by_path = {v.path: g for v, g in zip(sparse.trainable_variables, sparse_grads, strict=True)}
    for name in ("attention/query/kernel", "intermediate/kernel", "output/kernel"):
        (gradient,) = [g for p, g in by_path.items() if p.endswith(f"transformer_layer_2/{name}")]
        assert np.abs(tf.convert_to_tensor(gradient).numpy()).max() > 0, name
    assert sparse.get_config()["last_layer_at_predictions_only"] is True


def test_last_layer_at_predictions_only_needs_the_masked_lm_objective():
    with pytest.raises(ValueError, match="objective='mlm'"):
        BertPretrainer(
            BertEncoder(**tiny_encoder_kwargs(), causal=True),
            use_next_sentence_label=False,
            objective="ltr",
            last_layer_at_predictions_only=True,
        )


@pytest.mark.parametrize("kind", ["classifier", "multitask"])
def test_classifiers_built_with_fast_kernels_run_the_last_layer_at_cls_only(kind):
    """Same logits and gradients as the plain model; the last layer's feed-forward runs on one
    row per example."""
    import tensorflow as tf

    from official_bert.kernels.switch import fast_kernels
    from official_bert.models import MultiTaskClassifier

    models = {}
    for fast in (False, True):
        with fast_kernels(fast):
            encoder = BertEncoder(
                **tiny_encoder_kwargs(), hidden_dropout_rate=0.0, attention_dropout_rate=0.0
            )
            if kind == "classifier":
                models[fast] = BertClassifier(encoder, num_classes=3, dropout_rate=0.0)
            else:
                models[fast] = MultiTaskClassifier(encoder, {"a": 3, "b": 1}, dropout_rate=0.0)
            models[fast].build()
    models[True].set_weights(models[False].get_weights())
    inputs = random_inputs(batch=4, seq=16)
    labels = np.array([0, 2, 1, 2])
    results = {}
    for fast, model in models.items():
        with tf.GradientTape() as tape:
            outputs = model(inputs, training=True)
            logits = outputs if kind == "classifier" else outputs["a"]
            loss = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
            if kind == "multitask":
                loss += tf.reduce_mean(outputs["b"] ** 2)
        results[fast] = (logits.numpy(), tape.gradient(loss, model.trainable_variables))
    np.testing.assert_allclose(results[True][0], results[False][0], atol=1e-5)
    assert_gradients_close(models[False].trainable_variables, results[False][1], results[True][1])
    spec = {name: tf.TensorSpec([4, 16], tf.int32) for name in inputs}
    for fast, rows in ((False, 16), (True, 1)):
        graph = tf.function(models[fast].call).get_concrete_function(spec).graph
        shapes = [
            op.outputs[0].shape.as_list()
            for op in graph.get_operations()
            if re.search(r"transformer_layer_1(_\d+)?/intermediate", op.name)
            # The plain Dense's product: a MatMul on Keras 3.15, a BatchMatMulV2 on 3.12.
            and op.type in ("MatMul", "BatchMatMulV2")
        ]
        assert shapes and all(np.prod(shape[:-1]) == 4 * rows for shape in shapes), shapes


def _encoder_and_pretrainer(causal):
    encoder = BertEncoder(**tiny_encoder_kwargs(), causal=causal)
    model = BertPretrainer(
        encoder,
        use_next_sentence_label=not causal,
        objective="ltr" if causal else "mlm",
        last_layer_at_predictions_only=not causal,
    )
    positions = np.array([[3, 5], [1, 13], [15, 4]], np.int32)

    def loss(inputs):
        total = 0.0
        if not causal:
            outputs = model(dict(inputs, masked_lm_positions=positions), training=True)
            total += tf.reduce_sum(outputs["mlm_logits"])
            total += tf.reduce_sum(outputs["next_sentence_logits"])
        outputs = encoder(inputs, training=True, output_positions=positions)
        return total + tf.reduce_sum(outputs["sequence_output"])

    return model, loss


def _classifier_on_fast_kernels(_):
    from official_bert.kernels.switch import fast_kernels

    with fast_kernels(True):
        model = BertClassifier(BertEncoder(**tiny_encoder_kwargs()), num_classes=2)
    return model, lambda inputs: tf.reduce_sum(model(inputs, training=True))


@pytest.mark.parametrize(
    "make, causal",
    [
        (_encoder_and_pretrainer, False),
        (_encoder_and_pretrainer, True),
        (_classifier_on_fast_kernels, False),
    ],
    ids=["masked_lm", "causal_encoder", "classifier_fast_kernels"],
)
def test_no_transpose_of_an_integer_or_bool_tensor_in_a_training_step(make, causal):
    """TensorFlow's oneDNN build logs a false "DT_INT64 / DT_BOOL only on platforms with
    AVX-512" error for a Transpose of an integer or bool tensor: the gathers at positions and
    the attention masks (also those of output_positions, forward and backward) make none."""
    model, loss = make(causal)
    model.build()
    inputs = random_inputs(batch=3, seq=16)

    @tf.function
    def step(inputs):
        with tf.GradientTape() as tape:
            value = loss(inputs)
        return tape.gradient(value, model.trainable_variables)

    graph = step.get_concrete_function(inputs).graph
    transposed = [
        (op.name, op.inputs[0].dtype.name)
        for op in graph.get_operations()
        if op.type == "Transpose" and not op.inputs[0].dtype.is_floating
    ]
    assert transposed == [], transposed
