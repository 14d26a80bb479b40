"""load_encoder / load_tokenizer: a pre-trained model's folder in any layout, in one call each."""

import shutil

import numpy as np
import pytest

from official_bert.checkpoints import load_encoder, load_tokenizer
from tests.conftest import FIXTURES

ORIGINAL = FIXTURES / "orig_tiny_v1000"
KERAS_HUB = FIXTURES / "keras_hub_presets"


def test_original_release_folder_gives_the_original_outputs_and_tokenizer():
    encoder = load_encoder(str(ORIGINAL))
    reference = np.load(ORIGINAL / "outputs.npz")
    outputs = encoder(
        {
            "input_word_ids": reference["input_ids"],
            "input_mask": reference["input_mask"],
            "input_type_ids": reference["token_type_ids"],
        },
        training=False,
    )
    np.testing.assert_allclose(
        outputs["pooled_output"].numpy(), reference["pooled_output"], atol=1e-5
    )
    tokenizer = load_tokenizer(str(ORIGINAL))
    assert tokenizer.basic_tokenizer.do_lower_case is True  # no capitals in its vocab
    assert tokenizer.vocab == load_tokenizer(str(ORIGINAL / "bert_model.ckpt")).vocab


def test_keras_hub_preset_gives_its_casing_and_vocab():
    preset = KERAS_HUB / "cased_zh"
    encoder = load_encoder(str(preset), dtype="float32")
    assert encoder.num_attention_heads == 2
    tokenizer = load_tokenizer(str(preset))
    assert tokenizer.basic_tokenizer.do_lower_case is False
    assert tokenizer.tokenize("The fox 我们") == ["The", "fox", "我", "们"]
    assert load_tokenizer(str(preset), do_lower_case=True).tokenize("The") == ["the"]


def test_missing_files_are_named(tmp_path):
    weights_only = tmp_path / "weights_only"
    weights_only.mkdir()
    for name in ("bert_model.ckpt.index", "bert_model.ckpt.data-00000-of-00001"):
        shutil.copy(ORIGINAL / name, weights_only / name)
    with pytest.raises(FileNotFoundError, match="no bert_config.json or config.json beside"):
        load_encoder(str(weights_only / "bert_model.ckpt"))
    with pytest.raises(FileNotFoundError, match="no vocab.txt .* beside"):
        load_tokenizer(str(weights_only / "bert_model.ckpt"))


def test_a_path_that_does_not_exist_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing: no such file, folder or checkpoint"):
        load_encoder(str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="missing: no such file, folder or checkpoint"):
        load_tokenizer(str(tmp_path / "missing"))
