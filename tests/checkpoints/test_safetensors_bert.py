"""Real pre-trained weights (all-MiniLM-L6-v2, safetensors with HF names) and the HF layout."""

import json

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from official_bert.checkpoints import detect_checkpoint_format, load_bert_weights
from official_bert.checkpoints.damaged_checkpoint import DamagedCheckpointError
from official_bert.checkpoints.safetensors_bert import (
    bert_config_from_hf,
    hf_config_from_bert_config,
    hf_name,
    load_safetensors_arrays,
    read_hf_config,
    read_safetensors_checkpoint,
    write_safetensors_checkpoint,
)
from official_bert.checkpoints.variable_table import CheckpointMismatchError
from official_bert.config import BertConfig
from official_bert.models import BertEncoder, BertPretrainer
from tests.conftest import MINILM_FIXTURE, tiny_encoder_kwargs


@pytest.fixture(scope="module")
def minilm(minilm_dir):
    config = read_hf_config(str(minilm_dir / "config.json"))
    encoder = BertEncoder.from_bert_config(config)
    encoder.build()
    read_safetensors_checkpoint(str(minilm_dir / "model.safetensors"), encoder)
    return config, encoder


def test_hf_config_maps_gelu_to_the_exact_form(minilm):
    config, _ = minilm
    assert config.hidden_act == "gelu_exact"  # HF "gelu" is erf; the original "gelu" is tanh
    assert (config.num_hidden_layers, config.hidden_size, config.vocab_size) == (6, 384, 30522)
    assert bert_config_from_hf({"vocab_size": 5, "hidden_act": "gelu_new"}).hidden_act == "gelu"
    assert hf_config_from_bert_config(BertConfig(vocab_size=5))["hidden_act"] == "gelu_new"
    with pytest.raises(ValueError, match="position_embedding_type 'relative_key'"):
        bert_config_from_hf({"vocab_size": 5, "position_embedding_type": "relative_key"})


def test_fields_an_hf_config_leaves_out_take_transformers_defaults():
    # transformers writes type_vocab_size 2 and vocab_size 30522 by default; the original
    # bert_config.json's default type_vocab_size is 16 (and its vocab_size has none).
    config = bert_config_from_hf({"hidden_size": 8, "num_attention_heads": 2})
    assert (config.type_vocab_size, config.vocab_size) == (2, 30522)
    assert bert_config_from_hf({"vocab_size": 5, "type_vocab_size": 16}).type_vocab_size == 16


def test_every_activation_of_a_bert_config_round_trips_through_hf_config():
    # "linear" (an activation the original's modeling.py has) made convert_checkpoint.py's
    # safetensors output fail with a KeyError half-way.
    from official_bert.activations import _ACTIVATIONS

    for activation in _ACTIVATIONS:
        hf = hf_config_from_bert_config(BertConfig(vocab_size=5, hidden_act=activation))
        assert bert_config_from_hf(hf).hidden_act == activation


def test_minilm_matches_the_reference_implementation(minilm):
    # Reference: tests/fixtures/minilm_l6_hf, HF transformers BertModel on the same weights.
    _, encoder = minilm
    reference = np.load(MINILM_FIXTURE / "outputs.npz")
    outputs = encoder(
        {
            "input_word_ids": reference["input_ids"],
            "input_mask": reference["input_mask"],
            "input_type_ids": reference["token_type_ids"],
        },
        training=False,
    )
    sequence = outputs["sequence_output"].numpy()
    mask = reference["input_mask"].astype(bool)
    np.testing.assert_allclose(
        sequence[mask], reference["sequence_output"][mask], atol=1e-4, rtol=0
    )
    np.testing.assert_allclose(
        outputs["pooled_output"], reference["pooler_output"], atol=1e-4, rtol=0
    )
    weights = reference["input_mask"][..., None].astype(np.float32)
    pooled = (sequence * weights).sum(1) / weights.sum(1)
    pooled /= np.linalg.norm(pooled, axis=-1, keepdims=True)
    np.testing.assert_allclose(pooled, reference["sentence_embedding"], atol=1e-4, rtol=0)


def test_write_then_read_reproduces_the_file(minilm, minilm_dir, tmp_path):
    config, encoder = minilm
    path = write_safetensors_checkpoint(encoder, str(tmp_path / "model.safetensors"))
    ours, theirs = load_file(path), load_file(str(minilm_dir / "model.safetensors"))
    assert set(theirs) - set(ours) == {"embeddings.position_ids"}
    for name, value in ours.items():
        np.testing.assert_array_equal(value, theirs[name], err_msg=name)


def test_bert_prefix_heads_legacy_names_and_bf16(tmp_path):
    model = BertPretrainer(BertEncoder(**tiny_encoder_kwargs()))
    model.build()
    path = write_safetensors_checkpoint(model, str(tmp_path / "pre.safetensors"))
    tensors = load_file(path)
    assert "bert.encoder.layer.1.attention.self.query.weight" in tensors
    assert "cls.predictions.transform.dense.weight" in tensors
    assert tensors["cls.seq_relationship.weight"].shape == (2, 32)
    # Old conversions spell LayerNorm parameters gamma/beta and store bfloat16.
    legacy = {}
    for name, value in tensors.items():
        if "LayerNorm" in name:
            name = name.replace(".weight", ".gamma").replace(".bias", ".beta")
        legacy[name] = value
    legacy["cls.predictions.decoder.weight"] = tensors["bert.embeddings.word_embeddings.weight"]
    save_file(legacy, str(tmp_path / "legacy.safetensors"))
    other = BertPretrainer(BertEncoder(**tiny_encoder_kwargs()))
    other.build()
    read_safetensors_checkpoint(str(tmp_path / "legacy.safetensors"), other, require_heads=True)
    for a, b in zip(other.weights, model.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())

    # bfloat16: the top 16 bits of float32; write raw BF16 words by hand.
    value = np.array([[1.5, -2.25], [0.0, 3.0]], np.float32)
    header = json.dumps({"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}}).encode()
    raw = (value.view(np.uint32) >> 16).astype("<u2").tobytes()
    bf16 = tmp_path / "bf16.safetensors"
    bf16.write_bytes(len(header).to_bytes(8, "little") + header + raw)
    np.testing.assert_array_equal(load_safetensors_arrays(str(bf16))["w"], value)


def test_missing_and_mis_shaped_tensors_are_listed(tmp_path):
    encoder = BertEncoder(**tiny_encoder_kwargs())
    encoder.build()
    tensors = load_file(write_safetensors_checkpoint(encoder, str(tmp_path / "a.safetensors")))
    del tensors["encoder.layer.1.output.dense.bias"]
    tensors["pooler.dense.weight"] = np.zeros((32, 31), np.float32)
    tensors["encoder.layer.0.surprise"] = np.zeros((2,), np.float32)
    # Both shapes in the file's [out, in] layout: the expectation was in the original's
    # [in, out], so a transposed weight read "file [32, 64], model expects [32, 64]".
    intermediate = "encoder.layer.0.intermediate.dense.weight"
    tensors[intermediate] = tensors[intermediate].T.copy()
    tensors["encoder.layer.1.output.dense.weight"] = np.zeros((32, 48), np.float32)
    save_file(tensors, str(tmp_path / "b.safetensors"))
    with pytest.raises(CheckpointMismatchError) as error:
        read_safetensors_checkpoint(str(tmp_path / "b.safetensors"), encoder)
    message = str(error.value)
    assert (
        "encoder.layer.1.output.dense.bias (original bert/encoder/layer_1/output/dense/bias)"
        in message
    )
    assert "pooler.dense.weight: file [32, 31], model expects [32, 32]" in message
    assert f"{intermediate}: file [32, 64], model expects [64, 32]" in message
    assert "encoder.layer.1.output.dense.weight: file [32, 48], model expects [32, 64]" in message
    assert "encoder.layer.0.surprise [2]" in message
    with pytest.raises(FileNotFoundError, match="safetensors file not found"):
        read_safetensors_checkpoint(str(tmp_path / "none.safetensors"), encoder)
    # A config of other sizes than the file's: first, what differs in config terms.
    other = BertEncoder(**tiny_encoder_kwargs(num_layers=1, intermediate_size=48))
    other.build()
    with pytest.raises(CheckpointMismatchError) as error:
        read_safetensors_checkpoint(str(tmp_path / "a.safetensors"), other)
    assert (
        str(error.value)
        .splitlines()[0]
        .endswith(
            "does not fit BertEncoder: the checkpoint's shapes say num_hidden_layers 2, "
            "intermediate_size 64 (vocab_size 100, hidden_size 32, max_position_embeddings 64, "
            "type_vocab_size 2), but the model's config says num_hidden_layers 1, intermediate_size 48:"
        )
    )


def test_damaged_files_are_one_error_naming_the_file_and_its_size(tmp_path):
    # A Git LFS pointer (a Hub clone without git-lfs) read its "version " as a header length of
    # ~2e18 bytes (MemoryError); an empty file and a cut-short one raised JSONDecodeError and
    # SafetensorError, naming no file.
    whole = tmp_path / "whole.safetensors"
    save_file({"w": np.arange(64, dtype=np.float32)}, str(whole))
    lfs = tmp_path / "lfs" / "model.safetensors"
    lfs.parent.mkdir()
    lfs.write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:53ec2b0b\nsize 90868376\n"
    )
    with pytest.raises(
        DamagedCheckpointError, match=rf"{lfs} \(77 bytes\) is a Git LFS pointer.*git lfs pull"
    ):
        load_safetensors_arrays(str(lfs.parent))
    cases = {
        "empty": (b"", "shorter than its 8-byte header length"),
        "cut_in_header": (whole.read_bytes()[:20], "its header should take"),
        "cut_in_data": (whole.read_bytes()[:-10], "incomplete metadata"),
        "not_json": ((4).to_bytes(8, "little") + b"{{{{", "its header is not JSON"),
    }
    for name, (content, reason) in cases.items():
        path = tmp_path / f"{name}.safetensors"
        path.write_bytes(content)
        with pytest.raises(DamagedCheckpointError) as error:
            load_safetensors_arrays(str(path))
        message = str(error.value)
        assert message.startswith(f"{path} ({len(content)} bytes): not a readable safetensors")
        assert reason in message and "copy or download it again" in message
        assert "\n" not in message


def test_shards_listed_by_an_index_are_read_as_one_checkpoint(tmp_path):
    # transformers splits large models into model-0000N-of-0000M.safetensors with an index.
    model = BertPretrainer(BertEncoder(**tiny_encoder_kwargs()))
    model.build()
    tensors = load_file(write_safetensors_checkpoint(model, str(tmp_path / "one.safetensors")))
    sharded = tmp_path / "sharded"
    sharded.mkdir()
    names = sorted(tensors)
    weight_map = {
        name: f"model-0000{1 + i % 2}-of-00002.safetensors" for i, name in enumerate(names)
    }
    for shard in sorted(set(weight_map.values())):
        part = {name: tensors[name] for name in names if weight_map[name] == shard}
        save_file(part, str(sharded / shard))
    (sharded / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map})
    )
    assert detect_checkpoint_format(str(sharded)) == "safetensors"
    other = BertPretrainer(BertEncoder(**tiny_encoder_kwargs()))
    other.build()
    assert load_bert_weights(other, str(sharded), require_heads=True) == "safetensors"
    for a, b in zip(other.weights, model.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    (sharded / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="model-00002-of-00002.safetensors, which is not"):
        load_bert_weights(other, str(sharded))
    (sharded / "model.safetensors.index.json").write_text('{"shards": []}')
    with pytest.raises(ValueError, match="expected JSON with a 'weight_map'"):
        load_bert_weights(other, str(sharded))


def test_name_table():
    assert hf_name("bert/encoder/layer_11/attention/output/LayerNorm/gamma") == (
        "encoder.layer.11.attention.output.LayerNorm.weight"
    )
    assert hf_name("bert/embeddings/word_embeddings") == "embeddings.word_embeddings.weight"
    assert hf_name("cls/predictions/output_bias") == "cls.predictions.bias"
    assert hf_name("output_weights") == "classifier.weight"
    assert hf_name("cls/squad/output_bias") == "qa_outputs.bias"
