"""BERT modules in the TF1 Hub format (the 2018 tfhub.dev/google/bert_* modules) read as
original checkpoints: tests/fixtures/tf1_hub_module, orig_tiny_v1000's model as such a module,
written by tensorflow_hub 0.12.0's own exporter around the original modeling.py
(tests/fixtures/make_tf1_hub_module.py); its outputs.npz holds what hub.Module computed."""

import json

import numpy as np
import pytest
import tensorflow as tf

from official_bert.checkpoints import detect_checkpoint_format, load_bert_weights
from official_bert.checkpoints.loading import (
    find_bert_config,
    find_lower_case,
    find_vocab_file,
    read_bert_config,
)
from official_bert.checkpoints.tf1_hub_module import is_tf1_hub_module
from official_bert.models import BertEncoder
from tests.conftest import FIXTURES

MODULE = FIXTURES / "tf1_hub_module" / "module"
TINY = FIXTURES / "orig_tiny_v1000"


def _module_outputs():
    return np.load(FIXTURES / "tf1_hub_module" / "outputs.npz")


def _assert_computes_the_modules_outputs(encoder_call):
    reference = _module_outputs()
    mask = reference["input_mask"]
    outputs = encoder_call(
        {
            "input_word_ids": reference["input_ids"],
            "input_mask": mask,
            "input_type_ids": reference["segment_ids"],
        }
    )
    np.testing.assert_allclose(outputs["pooled_output"], reference["pooled_output"], atol=1e-5)
    np.testing.assert_allclose(
        np.asarray(outputs["sequence_output"]) * mask[..., None],
        reference["sequence_output"] * mask[..., None],
        atol=1e-5,
    )


def test_the_module_is_a_checkpoint_with_its_config_vocab_and_casing():
    """Config from the variables and the graph (2 heads of 32: not the 64 per head a guess from
    the width would give), vocab from its assets, casing from tokenization_info."""
    assert is_tf1_hub_module(str(MODULE)) and not is_tf1_hub_module(str(TINY))
    assert detect_checkpoint_format(str(MODULE)) == "tf1"
    assert find_bert_config(str(MODULE)) == str(MODULE)
    config = read_bert_config(str(MODULE))
    original = json.loads((TINY / "bert_config.json").read_text())
    assert config.to_dict() == {**config.to_dict(), **original}
    assert config.num_attention_heads == 2
    vocab = find_vocab_file(str(MODULE))
    assert vocab == str(MODULE / "assets" / "vocab.txt")
    assert open(vocab).read() == (TINY / "vocab.txt").read_text()
    assert find_lower_case(str(MODULE)) is True

    encoder = BertEncoder.from_bert_config(config)
    encoder.build()
    assert load_bert_weights(encoder, str(MODULE)) == "tf1"
    _assert_computes_the_modules_outputs(lambda inputs: encoder(inputs, training=False))


def test_a_hub_handle_to_such_a_module_starts_a_run_from_its_weights(tmp_path):
    """--hub_module_handle (and so run_classifier_with_tfhub.py's --bert_hub_module_handle)
    naming a TF1 Hub module: the run starts from its variables as from a checkpoint, with its
    config, vocab and casing."""
    from official_bert.tasks.classification import ClassifierOptions

    options = ClassifierOptions(
        task_name="generic",
        data_dir=str(tmp_path),
        output_dir=str(tmp_path / "out"),
        hub_module_handle=str(MODULE),
        do_train=True,
    )
    assert options.hub_module_handle is None
    assert options.init_checkpoint == str(MODULE)
    assert options.bert_config.num_attention_heads == 2
    assert options.vocab_file == str(MODULE / "assets" / "vocab.txt")
    assert options.do_lower_case is True


def test_export_tfhub_makes_a_tf2_module_of_it(tmp_path):
    """A TF1 Hub module in, the TF2 encoder SavedModel out: the same outputs."""
    from official_bert.export import export_tfhub

    path = export_tfhub(
        "model",
        str(tmp_path / "encoder"),
        str(MODULE / "assets" / "vocab.txt"),
        model_checkpoint_path=str(MODULE),
        default_seq_length=16,
    )
    module = tf.saved_model.load(path)
    assert bool(module.do_lower_case.numpy()) is True
    _assert_computes_the_modules_outputs(
        lambda inputs: module({k: tf.constant(v) for k, v in inputs.items()}, training=False)
    )


def test_a_module_without_the_bert_variables_is_named(tmp_path):
    module = tmp_path / "module"
    (module / "variables").mkdir(parents=True)
    (module / "tfhub_module.pb").write_bytes(b"\x08\x03")
    checkpoint = tf.train.Checkpoint(v=tf.Variable([1.0]))
    checkpoint.write(str(module / "variables" / "variables"))
    with pytest.raises(ValueError, match="not a BERT module"):
        read_bert_config(str(module))
