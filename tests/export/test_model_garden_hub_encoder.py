"""TF Hub encoders that this project did not export: TF Model Garden's layout (the TF2 BERT
encoders of tfhub.dev; tests/fixtures/model_garden_hub_encoder, made by
tests/fixtures/make_model_garden_hub_encoder.py with tf-models-official 2.20), handles given as
URLs (downloaded by tensorflow_hub). (TF1 Hub modules: tests/checkpoints/test_tf1_hub_module.py.)"""

import functools
import http.server
import json
import os
import tarfile
import threading

import numpy as np
import pytest
import tensorflow as tf

from official_bert.checkpoints import detect_checkpoint_format, load_bert_weights
from official_bert.checkpoints.loading import find_lower_case, find_vocab_file, read_bert_config
from official_bert.checkpoints.tf_hub_encoder import (
    encoder_module_config,
    exported_encoder_config,
)
from official_bert.export.exported_bert_encoder import (
    ExportedBertEncoder,
    read_exported_encoder_settings,
)
from official_bert.export.hub_handle import resolve_hub_handle
from official_bert.models import BertEncoder
from tests.conftest import FIXTURES, REPO_ROOT
from tests.tiny_data import write_tiny_task
from tests.warm_interpreter import run_script

MODEL_GARDEN = FIXTURES / "model_garden_hub_encoder"


def test_a_model_garden_encoder_computes_its_own_outputs():
    """Its serving signature names the outputs bert_encoder_1, ... and it has no
    bert_config.json: the layer reads the sizes from the module and gives Model Garden's
    outputs (computed by TensorFlow from the module in Model Garden's own environment)."""
    reference = np.load(MODEL_GARDEN / "outputs.npz")
    encoder = ExportedBertEncoder(str(MODEL_GARDEN / "encoder"))
    assert (encoder.hidden_size, encoder.num_layers) == (32, 2)
    assert encoder.do_lower_case is True
    assert encoder.vocab_file.endswith("vocab.txt")
    inputs = {name: reference[name] for name in ("input_word_ids", "input_mask", "input_type_ids")}
    outputs = encoder(inputs, training=False)
    np.testing.assert_allclose(outputs["pooled_output"], reference["pooled_output"], atol=1e-5)
    np.testing.assert_allclose(outputs["sequence_output"], reference["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(
        np.stack(outputs["encoder_outputs"]), reference["encoder_outputs"], atol=1e-5
    )


def _encoder_outputs(encoder, reference):
    inputs = {name: reference[name] for name in ("input_word_ids", "input_mask", "input_type_ids")}
    return encoder(inputs, training=False)


def test_its_weights_fill_this_projects_encoder(tmp_path):
    """Read as a checkpoint ("tf_hub"), the module's weights in a BertEncoder (the original's
    tanh GELU, as Model Garden's) compute the module's outputs; converted to the original
    layout, the same. (To safetensors it becomes a BertForMaskedLM, which has no pooler: the
    layers' outputs are the same there.)"""
    from official_bert.checkpoints.conversion import convert_checkpoint

    module = str(MODEL_GARDEN / "encoder")
    assert detect_checkpoint_format(module) == "tf_hub"
    assert find_vocab_file(module) == str(MODEL_GARDEN / "encoder" / "assets" / "vocab.txt")
    assert find_lower_case(module) is True
    config = read_bert_config(module)
    assert (config.num_attention_heads, config.hidden_act) == (2, "gelu")
    reference = np.load(MODEL_GARDEN / "outputs.npz")
    sources = {
        "tf_hub": module,
        "tf1": convert_checkpoint(module, str(tmp_path / "tf1"), "tf1"),
        "safetensors": convert_checkpoint(module, str(tmp_path / "st"), "safetensors"),
    }
    for layout, source in sources.items():
        encoder = BertEncoder.from_bert_config(config)
        encoder.build()
        assert load_bert_weights(encoder, source) == layout
        outputs = _encoder_outputs(encoder, reference)
        np.testing.assert_allclose(
            np.stack(outputs["encoder_outputs"]), reference["encoder_outputs"], atol=1e-5
        )
        if layout != "safetensors":
            np.testing.assert_allclose(
                outputs["pooled_output"], reference["pooled_output"], atol=1e-5
            )


def test_pretraining_continues_from_its_masked_lm_head(tmp_path):
    """The module's `mlm` head (Model Garden's bert/cls/predictions/...) is read as the original
    cls/predictions: run_pretraining's model, given only the folder as init_checkpoint, computes
    the module's masked-LM logits."""
    from official_bert.tasks.pretraining import PretrainingOptions, PretrainingTask

    options = PretrainingOptions(
        init_checkpoint=str(MODEL_GARDEN / "encoder"),
        input_file="unused.tfrecord",
        output_dir=str(tmp_path),
        do_train=True,
        use_next_sentence_label=False,
    )
    task = PretrainingTask(options)
    model = task.build_model()
    task.initialize(model)
    reference = np.load(MODEL_GARDEN / "outputs.npz")
    names = ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")
    outputs = model({name: reference[name] for name in names}, training=False)
    np.testing.assert_allclose(outputs["mlm_logits"], reference["mlm_logits"], atol=1e-5)


def test_an_export_of_ours_reads_back_as_its_source(tiny_exports, tiny_checkpoint_dir):
    """This project's own exports (other variable names, a bert_config.json asset; the encoder
    inside a pretrainer with its masked-LM head in model_with_mlm) give the weights of the
    checkpoint they were exported from, exactly."""
    from official_bert.models import BertPretrainer

    source = str(tiny_checkpoint_dir / "bert_model.ckpt")
    config = read_bert_config(tiny_exports["model"])
    expected = read_bert_config(str(tiny_checkpoint_dir / "bert_config.json"))
    assert config.to_dict() == expected.to_dict()
    for export_type, make in (
        ("model", lambda: BertEncoder.from_bert_config(config)),
        (
            "model_with_mlm",
            lambda: BertPretrainer(
                BertEncoder.from_bert_config(config), use_next_sentence_label=False
            ),
        ),
    ):
        from_module, from_source = make(), make()
        for model, path in ((from_module, tiny_exports[export_type]), (from_source, source)):
            model.build()
            load_bert_weights(model, path, require_heads=True)
        for a, b in zip(from_module.weights, from_source.weights, strict=True):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_the_config_is_read_off_the_module(tiny_exports, tiny_checkpoint_dir):
    """The sizes of Model Garden's module, and of one of ours (whose variable names differ),
    as their bert_config.json would give them."""
    settings = read_exported_encoder_settings(str(MODEL_GARDEN / "encoder"))
    assert settings["bert_config_file"] is None
    expected = {
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "vocab_size": 100,
        "max_position_embeddings": 64,
        "type_vocab_size": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
    }
    config = settings["bert_config"].to_dict()
    assert {name: config[name] for name in expected} == expected
    ours = json.loads((tiny_checkpoint_dir / "bert_config.json").read_text())
    values = exported_encoder_config(tf.saved_model.load(tiny_exports["model"]), "ours")
    assert values == {name: ours[name] for name in values}
    assert len(values) == 7


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def served_model_garden_encoder(tmp_path):
    """The Model Garden encoder as a .tar.gz behind http://127.0.0.1:<port>/encoder, as a
    TF Hub URL serves it (tensorflow_hub asks for ?tf-hub-format=compressed)."""
    served = tmp_path / "served"
    served.mkdir()
    with tarfile.open(served / "encoder", "w:gz") as archive:
        for path in sorted((MODEL_GARDEN / "encoder").rglob("*")):
            archive.add(path, arcname=str(path.relative_to(MODEL_GARDEN / "encoder")))
    handler = functools.partial(_QuietHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/encoder"
    server.shutdown()
    server.server_close()


def test_run_classifier_with_tfhub_fine_tunes_a_module_behind_a_url(
    served_model_garden_encoder, tmp_path
):
    """The original script's flag, a URL: the module is downloaded into TFHUB_CACHE_DIR and
    fine-tuned (its vocab and casing used; no config, vocab or checkpoint flag given)."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    write_tiny_task(data_dir)
    output_dir = tmp_path / "output"
    cache = tmp_path / "tfhub_cache"
    ran = run_script(
        [
            str(REPO_ROOT / "run_classifier_with_tfhub.py"),
            "--task_name=generic",
            "--labels=neg,pos",
            f"--data_dir={data_dir}",
            f"--output_dir={output_dir}",
            f"--bert_hub_module_handle={served_model_garden_encoder}",
            "--do_train=true",
            "--do_eval=true",
            "--max_seq_length=16",
            "--train_batch_size=8",
            "--learning_rate=1e-3",
            "--num_train_epochs=16",
            "--steps_per_loop=16",
            "--seed=1",
            "--export_dir=",  # no serving export: the test reads the eval results only
        ],
        env={**os.environ, "TFHUB_CACHE_DIR": str(cache)},
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    results = dict(
        line.split(" = ") for line in (output_dir / "eval_results.txt").read_text().splitlines()
    )
    assert int(results["global_step"]) == 128
    # Chance is 0.5 (P(>= 0.8 of 32) = 4e-4); the module's vocabulary is the tiny task's (no
    # [UNK]). Learning rate 2e-3 for 8 epochs gave 0.5 to 0.94 with seeds 1 to 3, for 12
    # epochs 0.75 to 1.0; 1e-3 for 12 epochs 0.97 to 1.0.
    assert float(results["eval_accuracy"]) >= 0.8, results
    (downloaded,) = [p for p in cache.iterdir() if p.is_dir()]
    assert (downloaded / "saved_model.pb").exists()
    assert (downloaded / "assets" / "vocab.txt").read_text() == (
        MODEL_GARDEN / "encoder" / "assets" / "vocab.txt"
    ).read_text()


def test_a_folder_is_its_own_handle(tmp_path):
    folder = str(MODEL_GARDEN / "encoder")
    assert resolve_hub_handle(folder) == folder
    with pytest.raises(FileNotFoundError, match="no saved_model.pb there"):
        resolve_hub_handle(str(tmp_path))
    for repository in ("hf://google-bert/bert-base-chinese", "https://huggingface.co/org/bert"):
        with pytest.raises(ValueError, match="a Hugging Face model repository.*--init_checkpoint"):
            resolve_hub_handle(repository)


def test_a_url_without_tensorflow_hub_says_what_to_install(monkeypatch):
    """tensorflow_hub imports tf_keras, which a bare install of the package lacks."""
    import sys

    monkeypatch.setitem(sys.modules, "tensorflow_hub", None)  # import -> ImportError
    with pytest.raises(ImportError, match="pip install tf-keras==2.21.0"):
        resolve_hub_handle("https://tfhub.dev/tensorflow/bert_en_uncased_L-12_H-768_A-12/4")


def test_a_classifier_fine_tunes_from_it_as_init_checkpoint(tmp_path):
    """--init_checkpoint=<the folder>: this project's own encoder starts from the module's
    weights (its masked-LM head is not the classifier's and is left out) and learns the tiny
    task, its config, vocab and casing taken from the module."""
    from official_bert.tasks.classification import ClassifierOptions
    from official_bert.tasks.registry import run_classifier

    data_dir = tmp_path / "data"
    data_dir.mkdir()
    write_tiny_task(data_dir)
    options = ClassifierOptions(
        task_name="generic",
        labels=["neg", "pos"],
        data_dir=str(data_dir),
        output_dir=str(tmp_path / "output"),
        init_checkpoint=str(MODEL_GARDEN / "encoder"),
        do_train=True,
        do_eval=True,
        max_seq_length=16,
        train_batch_size=8,
        learning_rate=1e-3,
        num_train_epochs=12,
        steps_per_loop=16,
        seed=1,
        export_dir="",  # no serving export: the test reads the eval results only
    )
    assert options.vocab_file == str(MODEL_GARDEN / "encoder" / "assets" / "vocab.txt")
    results = run_classifier(options)
    # Chance is 0.5; 1.0 with seed 1 here.
    assert results["eval"]["eval_accuracy"] >= 0.8, results["eval"]


def test_an_exports_casing_and_config_are_read_without_loading_it(
    tiny_checkpoint_dir, tmp_path, monkeypatch
):
    """The casing from the module's variables, the config from its bert_config.json asset, or
    for Model Garden's module without one from its variables' names and shapes (the same as
    loading it tells): no tf.saved_model.load, which reads every weight (over the network from
    gs://)."""
    from official_bert.export import export_tfhub

    cased = export_tfhub(
        "model",
        str(tmp_path / "cased"),
        str(tiny_checkpoint_dir / "vocab.txt"),
        model_checkpoint_path=str(tiny_checkpoint_dir / "bert_model.ckpt"),
        do_lower_case=False,
    )

    model_garden = str(MODEL_GARDEN / "encoder")
    loaded_config = encoder_module_config(tf.saved_model.load(model_garden), model_garden)

    def refuse(*args, **kwargs):
        raise AssertionError("tf.saved_model.load called")

    monkeypatch.setattr(tf.saved_model, "load", refuse)
    assert find_lower_case(cased) is False
    assert find_lower_case(str(MODEL_GARDEN / "encoder")) is True
    expected = read_bert_config(str(tiny_checkpoint_dir / "bert_config.json"))
    assert read_bert_config(cased).to_dict() == expected.to_dict()
    config = read_bert_config(model_garden)
    assert config.to_dict() == loaded_config.to_dict()
    assert (config.hidden_size, config.num_hidden_layers, config.vocab_size) == (32, 2, 100)
