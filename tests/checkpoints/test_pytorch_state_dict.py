"""PyTorch weight files read without PyTorch: files torch.save wrote (tests/fixtures/
hf_weights, made by tests/fixtures/make_hf_weights.py) against the values and model
outputs PyTorch computed from them."""

import io
import json
import os
import pickle
import shutil
import zipfile

import numpy as np
import pytest

from official_bert.checkpoints import (
    detect_checkpoint_format,
    load_bert_weights,
    save_bert_weights,
)
from official_bert.checkpoints.conversion import convert_checkpoint
from official_bert.checkpoints.loading import read_bert_config
from official_bert.checkpoints.pytorch_bert import load_pytorch_arrays
from official_bert.checkpoints.pytorch_state_dict import load_pytorch_state_dict
from official_bert.checkpoints.variable_table import CheckpointMismatchError
from official_bert.config import BertConfig
from official_bert.models import BertEncoder
from tests.checkpoints.hf_weights_reference import (
    HF_WEIGHTS,
    assert_matches_pytorch,
    built_pretrainer,
)

WEIGHTS = HF_WEIGHTS
BERT_ZIP = WEIGHTS / "bert"
BERT_LEGACY = WEIGHTS / "bert_legacy"


def test_every_element_type_and_view_matches_what_torch_saved():
    arrays = load_pytorch_state_dict(str(WEIGHTS / "dtypes.bin"))
    expected = np.load(WEIGHTS / "dtypes.npz")
    assert sorted(arrays) == sorted(expected.files)
    for name in expected.files:
        np.testing.assert_array_equal(arrays[name], expected[name], err_msg=name)
        assert arrays[name].dtype == expected[name].dtype, name
        assert arrays[name].shape == expected[name].shape, name
    # bfloat16 is widened to float32: the values are the bfloat16 roundings of float32 ones.
    assert arrays["bfloat16"].dtype == np.float32
    assert 0 < np.abs(arrays["bfloat16"] - arrays["float32"]).max() < 1e-2
    np.testing.assert_array_equal(arrays["transposed"], arrays["float32"].T)
    np.testing.assert_array_equal(arrays["shared_from_3"], arrays["shared"][3:7])


def test_the_legacy_layout_holds_the_same_tensors():
    zipped = load_pytorch_arrays(str(BERT_ZIP))
    legacy = load_pytorch_arrays(str(BERT_LEGACY))
    assert zipfile.is_zipfile(BERT_ZIP / "pytorch_model.bin")
    assert not zipfile.is_zipfile(BERT_LEGACY / "pytorch_model.bin")
    assert sorted(zipped) == sorted(legacy)
    assert "bert.encoder.layer.1.attention.self.query.weight" in zipped
    for name in zipped:
        np.testing.assert_array_equal(zipped[name], legacy[name], err_msg=name)
    # The decoder shares the word embeddings' storage in the file.
    np.testing.assert_array_equal(
        zipped["cls.predictions.decoder.weight"], zipped["bert.embeddings.word_embeddings.weight"]
    )


@pytest.mark.parametrize("directory", [BERT_ZIP, BERT_LEGACY], ids=["zip", "legacy"])
def test_bert_matches_pytorch_on_its_own_weights(directory):
    # config.json says hidden_act "gelu" (HF: the erf form); read_bert_config maps it.
    model = built_pretrainer(BERT_ZIP)
    assert detect_checkpoint_format(str(directory)) == "pytorch"
    assert load_bert_weights(model, str(directory), require_heads=True) == "pytorch"
    assert_matches_pytorch(model)


def test_a_file_of_another_name_and_shards_listed_by_an_index(tmp_path):
    single = tmp_path / "weights.pt"
    shutil.copy(BERT_ZIP / "pytorch_model.bin", single)
    assert detect_checkpoint_format(str(single)) == "pytorch"
    # Two shards as save_pretrained writes them for large models; each name read from its own.
    names = sorted(load_pytorch_arrays(str(BERT_ZIP)))
    sharded = tmp_path / "sharded"
    sharded.mkdir()
    shutil.copy(BERT_ZIP / "pytorch_model.bin", sharded / "pytorch_model-00001-of-00002.bin")
    shutil.copy(BERT_LEGACY / "pytorch_model.bin", sharded / "pytorch_model-00002-of-00002.bin")
    weight_map = {
        name: f"pytorch_model-0000{1 + (i % 2)}-of-00002.bin" for i, name in enumerate(names)
    }
    (sharded / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": weight_map}))
    shutil.copy(BERT_ZIP / "config.json", sharded / "config.json")
    assert detect_checkpoint_format(str(sharded)) == "pytorch"
    model = built_pretrainer(sharded)
    load_bert_weights(model, str(sharded), require_heads=True)
    reference = built_pretrainer(BERT_ZIP)
    load_bert_weights(reference, str(single), require_heads=True)
    for got, want in zip(model.weights, reference.weights, strict=True):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    os.remove(sharded / "pytorch_model-00002-of-00002.bin")
    with pytest.raises(FileNotFoundError, match="pytorch_model-00002-of-00002.bin, which is not"):
        load_pytorch_arrays(str(sharded))


def test_detection_prefers_a_tf_checkpoint_and_safetensors_beside_it(original_tiny_dir, tmp_path):
    both = tmp_path / "both"
    both.mkdir()
    shutil.copy(BERT_ZIP / "pytorch_model.bin", both)
    assert detect_checkpoint_format(str(both)) == "pytorch"
    (both / "model.safetensors").write_bytes(b"")
    assert detect_checkpoint_format(str(both)) == "safetensors"
    os.remove(both / "model.safetensors")
    for name in ("bert_model.ckpt.index", "bert_model.ckpt.data-00000-of-00001", "checkpoint"):
        shutil.copy(original_tiny_dir / name, both / name)
    assert detect_checkpoint_format(str(both)) == "tf1"


def test_converted_to_safetensors_and_tf1_the_model_is_unchanged(tmp_path):
    model = built_pretrainer(BERT_ZIP)
    load_bert_weights(model, str(BERT_ZIP), require_heads=True)
    for output_format in ("safetensors", "tf1"):
        written = convert_checkpoint(str(BERT_ZIP), str(tmp_path / output_format), output_format)
        assert detect_checkpoint_format(written) == output_format
        converted = built_pretrainer(BERT_ZIP)
        load_bert_weights(converted, written, require_heads=True)
        for got, want in zip(converted.weights, model.weights, strict=True):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(ValueError, match="cannot write checkpoint format 'pytorch'"):
        save_bert_weights(model, str(tmp_path / "out.bin"), "pytorch")


def test_a_model_of_other_sizes_is_told_what_does_not_fit():
    values = read_bert_config(str(BERT_ZIP / "config.json")).to_dict()
    encoder = BertEncoder.from_bert_config(
        BertConfig.from_dict({**values, "intermediate_size": 64})
    )
    encoder.build()
    with pytest.raises(CheckpointMismatchError) as error:
        load_bert_weights(encoder, str(BERT_ZIP))
    message = str(error.value)
    assert f"PyTorch weights {BERT_ZIP / 'pytorch_model.bin'}" in message
    assert "bert.encoder.layer.0.intermediate.dense.weight: file [48, 32]" in message


def test_a_state_dict_nested_in_a_training_checkpoint():
    arrays = load_pytorch_state_dict(str(WEIGHTS / "nested.bin"))
    assert list(arrays) == ["w"]
    np.testing.assert_array_equal(arrays["w"], np.load(WEIGHTS / "dtypes.npz")["float32"][:2])


class _RunsACommand:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_that_would_run_code_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "ran"
    payload = pickle.dumps({"w": _RunsACommand(marker)}, protocol=2)
    zipped = tmp_path / "zip.bin"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("archive/data.pkl", payload)
        archive.writestr("archive/byteorder", "little")
    legacy = tmp_path / "legacy.bin"
    with open(legacy, "wb") as writer:
        for header in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}):
            pickle.dump(header, writer, protocol=2)
        writer.write(payload)
    for path in (zipped, legacy):
        with pytest.raises(ValueError, match=r"refers to (posix|os)\.system.*no code of the file"):
            load_pytorch_state_dict(str(path))
        assert not marker.exists()


def test_broadcast_views_and_tensor_types_it_does_not_read():
    # A broadcast view is copied out whole: a small one is read, one that would take far more
    # memory than its file is refused.
    np.testing.assert_array_equal(
        load_pytorch_state_dict(str(WEIGHTS / "broadcast.bin"))["w"], np.zeros((3, 4), np.float32)
    )
    huge = WEIGHTS / "broadcast_huge.bin"
    with pytest.raises(ValueError, match=rf"{huge}: its tensors would take 536870912 bytes from"):
        load_pytorch_state_dict(str(huge))
    with pytest.raises(
        ValueError, match=r"tensors of a kind .* \(torch._utils._rebuild_tensor_v3\)"
    ):
        load_pytorch_state_dict(str(WEIGHTS / "uint16.bin"))


def test_a_shard_index_naming_files_elsewhere_is_refused(tmp_path):
    sharded = tmp_path / "sharded"
    sharded.mkdir()
    shutil.copy(BERT_ZIP / "pytorch_model.bin", tmp_path / "outside.bin")
    (sharded / "pytorch_model.bin.index.json").write_text(
        json.dumps({"weight_map": {"bert.pooler.dense.bias": "../outside.bin"}})
    )
    with pytest.raises(ValueError, match=r"'../outside.bin', not a file name beside the index"):
        load_pytorch_arrays(str(sharded))


def test_damaged_and_foreign_files_are_named(tmp_path):
    data = (BERT_ZIP / "pytorch_model.bin").read_bytes()
    cut = tmp_path / "cut_zip.bin"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=rf"{cut} \(\d+ bytes\): torch.save's zip layout, but"):
        load_pytorch_state_dict(str(cut))
    legacy = (BERT_LEGACY / "pytorch_model.bin").read_bytes()
    cut_legacy = tmp_path / "cut_legacy.bin"
    cut_legacy.write_bytes(legacy[:-100])
    with pytest.raises(ValueError, match=rf"{cut_legacy}: cut short in storage"):
        load_pytorch_state_dict(str(cut_legacy))
    foreign = tmp_path / "notes.bin"
    foreign.write_bytes(b"\x00\x01 not weights" * 10)
    with pytest.raises(ValueError, match=rf"{foreign}: not a PyTorch weights file"):
        load_pytorch_state_dict(str(foreign))
    not_torch_zip = tmp_path / "other.bin"
    with zipfile.ZipFile(not_torch_zip, "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(ValueError, match="expected one data.pkl, found 0"):
        load_pytorch_state_dict(str(not_torch_zip))
    no_tensors = tmp_path / "list.bin"
    buffer = io.BytesIO()
    pickle.dump([1, 2], buffer, protocol=2)
    with zipfile.ZipFile(no_tensors, "w") as archive:
        archive.writestr("archive/data.pkl", buffer.getvalue())
    with pytest.raises(ValueError, match="holds a list, not a state dict"):
        load_pytorch_state_dict(str(no_tensors))
    # A byte order other than torch's two.
    middle = tmp_path / "middle.bin"
    with zipfile.ZipFile(BERT_ZIP / "pytorch_model.bin") as source:
        with zipfile.ZipFile(middle, "w") as target:
            for member in source.namelist():
                data = source.read(member)
                target.writestr(member, b"middle" if member.endswith("/byteorder") else data)
    with pytest.raises(ValueError, match=rf"{middle}: byte order 'middle', expected"):
        load_pytorch_state_dict(str(middle))
    with pytest.raises(FileNotFoundError, match="PyTorch weights file not found"):
        load_pytorch_state_dict(str(tmp_path / "missing.bin"))
