"""Layout detection, object checkpoints and conversion between all three layouts."""

import json

import numpy as np
import pytest

from official_bert.checkpoints import detect_checkpoint_format, load_bert_weights, save_bert_weights
from official_bert.checkpoints.conversion import convert_checkpoint
from official_bert.checkpoints.loading import read_bert_config
from official_bert.checkpoints.original_tf1 import read_checkpoint_arrays
from official_bert.checkpoints.variable_table import CheckpointMismatchError
from official_bert.config import BertConfig
from official_bert.models import (
    BertClassifier,
    BertEncoder,
    BertPretrainer,
    FeatureBasedClassifier,
)
from tests.conftest import REPO_ROOT, tiny_encoder_kwargs
from tests.warm_interpreter import run_script


def test_tf1_to_safetensors_to_object_to_tf1_is_lossless(original_tiny_dir, tmp_path):
    source = str(original_tiny_dir / "bert_model.ckpt")
    as_safetensors = convert_checkpoint(source, str(tmp_path / "st"), "safetensors")
    assert detect_checkpoint_format(as_safetensors) == "safetensors"
    assert read_bert_config(str(tmp_path / "st" / "config.json")).hidden_act == "gelu"
    as_object = convert_checkpoint(str(tmp_path / "st"), str(tmp_path / "obj"), "object")
    assert detect_checkpoint_format(str(tmp_path / "obj")) == "object"
    back = convert_checkpoint(str(tmp_path / "obj"), str(tmp_path / "tf1"), "tf1")
    assert as_object.endswith("model.ckpt") and back.endswith("bert_model.ckpt")
    original, converted = read_checkpoint_arrays(source), read_checkpoint_arrays(back)
    assert set(original) == set(converted)  # the MLM and NSP heads travelled too
    for name, value in original.items():
        np.testing.assert_array_equal(converted[name], value, err_msg=name)
    for folder in ("st", "obj", "tf1"):
        assert (tmp_path / folder / "vocab.txt").read_bytes() == (
            original_tiny_dir / "vocab.txt"
        ).read_bytes()
        assert BertConfig.from_json_file(str(tmp_path / folder / "bert_config.json")) == (
            BertConfig.from_json_file(str(original_tiny_dir / "bert_config.json"))
        )


def test_object_checkpoints_move_between_model_types(tmp_path):
    pretrainer = BertPretrainer(BertEncoder(**tiny_encoder_kwargs()))
    pretrainer.build()
    save_bert_weights(pretrainer, str(tmp_path / "pre" / "model.ckpt"), "object")
    classifier = BertClassifier(BertEncoder(**tiny_encoder_kwargs()), num_classes=2)
    classifier.build()
    assert load_bert_weights(classifier, str(tmp_path / "pre")) == "object"
    for a, b in zip(classifier.encoder.weights, pretrainer.encoder.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # An encoder-only checkpoint fills a pre-training model's encoder; heads need require_heads.
    encoder_only = BertEncoder(**tiny_encoder_kwargs())
    encoder_only.build()
    save_bert_weights(encoder_only, str(tmp_path / "enc" / "model.ckpt"), "object")
    load_bert_weights(pretrainer, str(tmp_path / "enc"))
    np.testing.assert_array_equal(
        pretrainer.encoder.pooler.kernel.numpy(), encoder_only.pooler.kernel.numpy()
    )
    with pytest.raises(CheckpointMismatchError, match="no 'masked_lm' weights"):
        load_bert_weights(pretrainer, str(tmp_path / "enc"), require_heads=True)
    deeper = BertEncoder(**tiny_encoder_kwargs(num_layers=3))
    deeper.build()
    with pytest.raises(CheckpointMismatchError, match="does not fit the model"):
        load_bert_weights(deeper, str(tmp_path / "enc"))


def test_detection_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        detect_checkpoint_format(str(tmp_path / "missing.ckpt"))


def test_other_frameworks_weights_say_how_to_convert_them(original_tiny_dir, tmp_path):
    # A Hub download with only Flax weights (PyTorch's and TensorFlow 2's are read:
    # test_pytorch_state_dict.py, test_keras_h5_bert.py).
    hub = tmp_path / "flax-bert"
    hub.mkdir()
    for name in ("flax_model.msgpack", "config.json", "vocab.txt"):
        (hub / name).write_bytes(b"\0" * 64)
    with pytest.raises(ValueError) as error:
        load_bert_weights(BertEncoder(**tiny_encoder_kwargs()), str(hub))
    message = str(error.value)
    assert f"{hub}: Flax weights (flax_model.msgpack) are not read here" in message
    assert (
        f"transformers.BertModel.from_pretrained('{hub}', from_flax=True)"
        f".save_pretrained('{hub}-safetensors')"
    ) in message
    with pytest.raises(ValueError, match=r"from_pretrained\('.*', from_flax=True\)"):
        detect_checkpoint_format(str(hub / "flax_model.msgpack"))
    # Beside a TF checkpoint, such files are left alone: the checkpoint is read.
    for name in ("bert_model.ckpt.index", "bert_model.ckpt.data-00000-of-00001", "checkpoint"):
        (hub / name).write_bytes((original_tiny_dir / name).read_bytes())
    assert detect_checkpoint_format(str(hub)) == "tf1"


def test_hf_config_json_is_read_as_hf(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "bert", "vocab_size": 10, "hidden_act": "gelu"}')
    assert read_bert_config(str(path)).hidden_act == "gelu_exact"
    path.write_text('{"vocab_size": 10, "hidden_act": "gelu"}')
    assert read_bert_config(str(path)).hidden_act == "gelu"
    # A bert_config.json is the original's, whatever other keys it holds (the original ignores
    # them): its "gelu" stays the tanh form.
    original = tmp_path / "bert_config.json"
    original.write_text('{"model_type": "bert", "vocab_size": 10, "hidden_act": "gelu"}')
    assert read_bert_config(str(original)).hidden_act == "gelu"


def test_convert_checkpoint_script(original_tiny_dir, tmp_path):
    result = run_script(
        [
            str(REPO_ROOT / "convert_checkpoint.py"),
            f"--input_checkpoint={original_tiny_dir / 'bert_model.ckpt'}",
            f"--output_dir={tmp_path / 'out'}",
            "--output_format=safetensors",
        ],
        timeout=300,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "bert_config.json",
        "config.json",
        "model.safetensors",
        "tokenizer_config.json",
        "vocab.txt",
    ]


def test_a_bert_decoders_config_is_refused(tmp_path):
    """A causal (is_decoder) or cross-attending BERT computes other outputs than the encoder
    built from its config here: refused, naming the field."""
    path = tmp_path / "config.json"
    for field in ("is_decoder", "add_cross_attention"):
        path.write_text(json.dumps({"model_type": "bert", "vocab_size": 10, field: True}))
        with pytest.raises(ValueError, match=f"{field} is true"):
            read_bert_config(str(path))
    path.write_text(json.dumps({"model_type": "bert", "vocab_size": 10, "is_decoder": False}))
    assert read_bert_config(str(path)).vocab_size == 10


def test_weights_load_into_a_model_not_built_yet(original_tiny_dir):
    """The README's recipe: a model from the config, then load_bert_weights (which builds it)."""
    config = BertConfig.from_json_file(str(original_tiny_dir / "bert_config.json"))
    encoder = BertEncoder.from_bert_config(config)
    assert not encoder.built
    assert load_bert_weights(encoder, str(original_tiny_dir / "bert_model.ckpt")) == "tf1"
    reference = np.load(original_tiny_dir / "outputs.npz")
    inputs = {
        "input_word_ids": reference["input_ids"],
        "input_mask": reference["input_mask"],
        "input_type_ids": reference["token_type_ids"],
    }
    np.testing.assert_allclose(
        encoder(inputs)["pooled_output"], reference["pooled_output"], atol=1e-5
    )
    with pytest.raises(TypeError, match=r"its encoder \(model.encoder\) has one"):
        load_bert_weights(
            FeatureBasedClassifier(BertEncoder.from_bert_config(config), num_classes=2),
            str(original_tiny_dir / "bert_model.ckpt"),
        )


def test_a_tf_checkpoint_folder_is_read_before_safetensors_beside_it(original_tiny_dir, tmp_path):
    """A run's output folder that also got a model.safetensors (an export, then more training):
    its `checkpoint` state file names what the folder holds, as for the other layouts."""
    folder = tmp_path / "run"
    convert_checkpoint(str(original_tiny_dir / "bert_model.ckpt"), str(folder), "safetensors")
    config = BertConfig.from_json_file(str(original_tiny_dir / "bert_config.json"))
    trained = BertEncoder.from_bert_config(config)
    trained.build()
    load_bert_weights(trained, str(folder / "model.safetensors"))
    trained.token_embedding.embeddings.assign(trained.token_embedding.embeddings * 2.0)
    save_bert_weights(trained, str(folder / "model.ckpt-7"), "object")
    assert detect_checkpoint_format(str(folder)) == "object"
    reader = BertEncoder.from_bert_config(config)
    reader.build()
    load_bert_weights(reader, str(folder))
    np.testing.assert_array_equal(
        reader.token_embedding.embeddings.numpy(), trained.token_embedding.embeddings.numpy()
    )


def test_safetensors_written_under_any_name_read_back(tmp_path):
    encoder = BertEncoder(**tiny_encoder_kwargs())
    encoder.build()
    written = save_bert_weights(encoder, str(tmp_path / "weights"), "safetensors")
    assert detect_checkpoint_format(written) == "safetensors"
    reader = BertEncoder(**tiny_encoder_kwargs())
    reader.build()
    assert load_bert_weights(reader, written) == "safetensors"
    for a, b in zip(reader.weights, encoder.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
