"""transformers' TensorFlow 2 weights (tf_model.h5): a file transformers 4.57 wrote (tests/fixtures/
hf_weights/bert_tf2, made by tests/fixtures/make_hf_weights.py --part=tf2) from the same weights
as the PyTorch fixture, against the outputs PyTorch computed."""

import numpy as np
import pytest

from official_bert.checkpoints import detect_checkpoint_format, load_bert_weights
from official_bert.checkpoints.conversion import convert_checkpoint
from official_bert.checkpoints.keras_h5_bert import load_h5_arrays, tf1_name
from tests.checkpoints.hf_weights_reference import (
    HF_WEIGHTS,
    assert_matches_pytorch,
    built_pretrainer,
)

WEIGHTS = HF_WEIGHTS
BERT_TF2 = WEIGHTS / "bert_tf2"


def test_bert_matches_pytorch_on_the_same_weights():
    model = built_pretrainer()
    assert detect_checkpoint_format(str(BERT_TF2)) == "h5"
    assert detect_checkpoint_format(str(BERT_TF2 / "tf_model.h5")) == "h5"
    assert load_bert_weights(model, str(BERT_TF2), require_heads=True) == "h5"
    assert_matches_pytorch(model)
    # The same values as the PyTorch file of the same weights, variable by variable.
    from_pytorch = built_pretrainer()
    load_bert_weights(from_pytorch, str(WEIGHTS / "bert"), require_heads=True)
    for got, want in zip(model.weights, from_pytorch.weights, strict=True):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_names_map_to_the_original_layout():
    assert (
        tf1_name("tf_bert_model/bert/encoder/layer_._11/attention/self/query/kernel:0")
        == "bert/encoder/layer_11/attention/self/query/kernel"
    )
    assert (
        tf1_name("tf_bert_for_pre_training/bert/embeddings/word_embeddings/weight:0")
        == "bert/embeddings/word_embeddings"
    )
    assert tf1_name("m/mlm___cls/predictions/bias:0") == "cls/predictions/output_bias"
    assert tf1_name("m/classifier/kernel:0") == "output_weights"
    arrays = load_h5_arrays(str(BERT_TF2))
    # The original stores the NSP weights [2, hidden]; transformers' Dense kernel is [hidden, 2].
    assert arrays["cls/seq_relationship/output_weights"].shape == (2, 32)
    assert arrays["bert/encoder/layer_1/intermediate/dense/kernel"].shape == (32, 48)


def test_converted_to_the_original_layout(tmp_path):
    model = built_pretrainer()
    load_bert_weights(model, str(BERT_TF2), require_heads=True)
    written = convert_checkpoint(str(BERT_TF2), str(tmp_path / "tf1"), "tf1")
    converted = built_pretrainer()
    load_bert_weights(converted, written, require_heads=True)
    for got, want in zip(converted.weights, model.weights, strict=True):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_files_that_are_not_its_weights_are_named(tmp_path):
    junk = tmp_path / "tf_model.h5"
    junk.write_bytes(b"\0" * 64)
    with pytest.raises(ValueError, match=rf"{junk}: not a readable HDF5 file"):
        load_bert_weights(built_pretrainer(), str(tmp_path))
    import h5py

    keras3 = tmp_path / "keras3" / "tf_model.h5"
    keras3.parent.mkdir()
    with h5py.File(keras3, "w") as file:
        file.create_dataset("vars/0", data=np.zeros(2))
    with pytest.raises(ValueError, match="not Keras 2 save_weights HDF5"):
        load_bert_weights(built_pretrainer(), str(keras3))


def _classifier_head_h5(directory, architecture, model_name, outputs, with_pooler):
    """The tf_model.h5 of a transformers TF 2 model whose head is a `classifier` Dense of
    `outputs` outputs (TFBertForTokenClassification, TFBertForMultipleChoice, ...) made from
    the fixture's encoder, with or without its pooler, and a config.json naming
    `architecture`; returns the head's kernel [hidden, outputs] and bias."""
    import json

    import h5py

    directory.mkdir()
    config = json.loads((BERT_TF2 / "config.json").read_text(encoding="utf-8"))
    config["architectures"] = [architecture]
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    rng = np.random.default_rng(0)
    head = {
        "kernel": rng.normal(size=(config["hidden_size"], outputs)).astype(np.float32),
        "bias": rng.normal(size=(outputs,)).astype(np.float32),
    }
    with (
        h5py.File(BERT_TF2 / "tf_model.h5", "r") as source,
        h5py.File(directory / "tf_model.h5", "w") as target,
    ):
        for key, value in source.attrs.items():
            target.attrs[key] = value
        target.attrs["layer_names"] = np.array([b"bert", b"classifier"], dtype=object)
        bert, names = target.create_group("bert"), []
        for weight in source["bert"].attrs["weight_names"]:
            weight = weight.decode() if isinstance(weight, bytes) else weight
            if with_pooler or "/pooler/" not in weight:
                name = model_name + "/" + weight.split("/", 1)[1]
                bert.create_dataset(name, data=source["bert"][weight][()])
                names.append(name.encode())
        bert.attrs["weight_names"] = np.array(names, dtype=object)
        classifier, names = target.create_group("classifier"), []
        for key, value in head.items():
            name = f"{model_name}/classifier/{key}:0"
            classifier.create_dataset(name, data=value)
            names.append(name.encode())
        classifier.attrs["weight_names"] = np.array(names, dtype=object)
    return head


def test_a_token_classifiers_head_is_read_by_a_tagger(tmp_path):
    """TFBertForTokenClassification names its head `classifier`, as a sentence classifier's: a
    tagger reads it (rather than starting from a random head), and the converter, told the
    class by config.json, keeps it as a tagger's."""
    from official_bert.checkpoints.conversion import load_model_with_available_heads
    from official_bert.checkpoints.loading import read_bert_config
    from official_bert.models import BertEncoder, BertTokenTagger

    directory = tmp_path / "ner"
    head = _classifier_head_h5(
        directory,
        "BertForTokenClassification",
        "tf_bert_for_token_classification",
        outputs=5,
        with_pooler=False,
    )
    config = read_bert_config(str(directory / "config.json"))
    tagger = BertTokenTagger(BertEncoder.from_bert_config(config), num_tags=5)
    tagger.build()
    load_bert_weights(tagger, str(directory), require_heads=True)
    np.testing.assert_array_equal(tagger.tagger.dense.kernel.numpy(), head["kernel"])
    np.testing.assert_array_equal(tagger.tagger.dense.bias.numpy(), head["bias"])

    model = load_model_with_available_heads(
        config, str(directory), "h5", ["BertForTokenClassification"]
    )
    assert type(model) is BertTokenTagger and model.num_tags == 5
    np.testing.assert_array_equal(model.tagger.dense.kernel.numpy(), head["kernel"])


def test_a_multiple_choice_models_head_is_read_by_one(tmp_path):
    """TFBertForMultipleChoice names its head `classifier` too ([hidden, 1], on the pooled
    output): a BertMultipleChoice reads it, and the converter, told the class by config.json,
    keeps it as one. Each choice's score is PyTorch's pooled output of its row times the head."""
    from official_bert.checkpoints.conversion import load_model_with_available_heads
    from official_bert.checkpoints.loading import read_bert_config
    from official_bert.models import BertMultipleChoice

    directory = tmp_path / "swag"
    head = _classifier_head_h5(
        directory,
        "BertForMultipleChoice",
        "tf_bert_for_multiple_choice",
        outputs=1,
        with_pooler=True,
    )
    model = load_model_with_available_heads(
        read_bert_config(str(directory / "config.json")),
        str(directory),
        "h5",
        ["BertForMultipleChoice"],
    )
    assert type(model) is BertMultipleChoice
    np.testing.assert_array_equal(model.multiple_choice.dense.kernel.numpy(), head["kernel"])
    # The fixture's two rows as one example's two choices: logits [1, 2].
    reference = np.load(WEIGHTS / "bert" / "outputs.npz")
    inputs = {
        name: reference[key][None]
        for name, key in (
            ("input_word_ids", "input_ids"),
            ("input_mask", "input_mask"),
            ("input_type_ids", "token_type_ids"),
        )
    }
    expected = (reference["pooler_output"] @ head["kernel"] + head["bias"]).reshape(1, 2)
    np.testing.assert_allclose(model(inputs), expected, atol=2e-5)
