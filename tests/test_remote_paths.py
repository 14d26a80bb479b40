"""The scripts take paths on any file system TensorFlow reads, as the original's tf.gfile did: a
Cloud TPU's host reads and writes `gs://` only.

Every path below is a `file://` URI. TensorFlow reads those as local files; Python's os and open
do not (`os.path.exists("file:///x")` is False, `os.makedirs("file:///x")` makes a local folder
named `file:`). So a path that goes through os, open, or a library that opens files itself by
name (safetensors, h5py) fails here as a `gs://` path would on a TPU host, or leaves a folder
named `file:` in the working directory, which each test checks for.
"""

import json

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import FIXTURES, REPO_ROOT
from tests.tiny_data import write_tiny_sentiment_setup
from tests.warm_interpreter import run_script


def _uri(path) -> str:
    return f"file://{path}"


def _run(script: str, *flags, cwd):
    ran = run_script([str(REPO_ROOT / script), *flags], cwd=cwd, timeout=300)
    assert ran.returncode == 0, ran.stderr[-4000:]
    assert not (cwd / "file:").exists(), f"{script} wrote a local folder named 'file:'"
    return ran


def _convert(source: str, output_dir: str, output_format: str, cwd):
    _run(
        "convert_checkpoint.py",
        f"--input_checkpoint={source}",
        f"--output_dir={output_dir}",
        f"--output_format={output_format}",
        cwd=cwd,
    )


def _checkpoint_arrays(prefix) -> dict:
    reader = tf.train.load_checkpoint(str(prefix))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


@pytest.fixture(scope="module")
def tiny_setup(tmp_path_factory):
    """(bert_dir, data_dir): the tiny checkpoint (config and vocab beside it) and sentiment task."""
    return write_tiny_sentiment_setup(tmp_path_factory.mktemp("remote"), counts=(64, 32, 16))


def test_pretraining_data_then_pretraining(tiny_setup, tmp_path):
    bert_dir, _ = tiny_setup
    corpus = tmp_path / "corpus.txt"
    corpus.write_text((REPO_ROOT / "samples" / "pretraining_corpus.txt").read_text("utf-8"))
    records = tmp_path / "records" / "examples.tfrecord"
    _run(
        "create_pretraining_data.py",
        f"--input_file={_uri(corpus)}",
        f"--output_file={_uri(records)}",
        f"--vocab_file={_uri(bert_dir / 'vocab.txt')}",
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
        "--dupe_factor=2",
        cwd=tmp_path,
    )
    assert sum(1 for _ in tf.data.TFRecordDataset(str(records))) > 20
    output_dir, export_dir = tmp_path / "pretraining", tmp_path / "fill_mask"
    # No --bert_config_file or --vocab_file: both are found beside the checkpoint.
    _run(
        "run_pretraining.py",
        f"--input_file={_uri(records)}",
        f"--output_dir={_uri(output_dir)}",
        f"--init_checkpoint={_uri(bert_dir / 'bert_model.ckpt')}",
        f"--export_dir={_uri(export_dir)}",
        "--do_train=True",
        "--do_eval=True",
        "--train_batch_size=8",
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
        "--num_train_steps=4",
        "--num_warmup_steps=1",
        "--max_eval_steps=2",
        cwd=tmp_path,
    )
    trained = _checkpoint_arrays(output_dir / "bert_model.ckpt")
    start = _checkpoint_arrays(bert_dir / "bert_model.ckpt")
    assert set(trained) == set(start)
    assert not np.array_equal(
        trained["bert/encoder/layer_0/attention/self/query/kernel"],
        start["bert/encoder/layer_0/attention/self/query/kernel"],
    )
    assert "masked_lm_loss" in (output_dir / "eval_results.txt").read_text()
    # The vocab found beside --init_checkpoint is copied beside the trained model: the folder
    # is a whole model for --init_checkpoint alone.
    assert (output_dir / "vocab.txt").read_text() == (bert_dir / "vocab.txt").read_text()
    import tensorflow_text  # noqa: F401  (the ops of the export's tokenizer)

    fill = tf.saved_model.load(str(export_dir)).signatures["serving_default"]
    tokens = fill(text=tf.constant(["the movie was [MASK] ."]))["tokens"].numpy()
    assert tokens.shape == (1, 1, 5)  # one mask, --fill_mask_top_k's default 5
    vocabulary = set((bert_dir / "vocab.txt").read_text().split())
    assert {token.decode() for token in tokens.ravel()} <= vocabulary


@pytest.mark.parametrize("output_format", ["safetensors", "keras_hub", "object"])
def test_conversions_there_and_back(tiny_setup, tmp_path, output_format):
    bert_dir, _ = tiny_setup
    converted, back = tmp_path / output_format, tmp_path / "back"
    _convert(_uri(bert_dir / "bert_model.ckpt"), _uri(converted), output_format, tmp_path)
    assert (converted / "vocab.txt").exists() or (
        converted / "assets" / "tokenizer" / "vocabulary.txt"
    ).exists()
    _convert(_uri(converted), _uri(back), "tf1", tmp_path)
    start = _checkpoint_arrays(bert_dir / "bert_model.ckpt")
    returned = _checkpoint_arrays(back / "bert_model.ckpt")
    # A keras-hub preset holds the encoder only (a BertBackbone).
    assert set(returned) <= set(start) and len(returned) >= 30
    for name, value in returned.items():
        np.testing.assert_array_equal(value, start[name], err_msg=name)


@pytest.mark.parametrize(
    "fixture",
    ["hf_weights/bert", "hf_weights/bert_tf2", "hf_finetuned_heads/sequence_classification"],
)
def test_other_frameworks_weights_read_through_a_local_copy(tmp_path, fixture):
    """PyTorch's pytorch_model.bin, transformers' tf_model.h5 and safetensors (the readers open
    a local file): the same weights as from the local folder."""
    source = FIXTURES / fixture
    for name, path in (("local", str(source)), ("remote", _uri(source))):
        _convert(path, str(tmp_path / name), "tf1", tmp_path)
    local = _checkpoint_arrays(tmp_path / "local" / "bert_model.ckpt")
    remote = _checkpoint_arrays(tmp_path / "remote" / "bert_model.ckpt")
    assert set(remote) == set(local) and len(local) >= 30
    for name, value in local.items():
        np.testing.assert_array_equal(remote[name], value, err_msg=name)


def test_classifier_fine_tunes_from_safetensors(tiny_setup, tmp_path):
    bert_dir, data_dir = tiny_setup
    weights = tmp_path / "safetensors"
    _convert(_uri(bert_dir / "bert_model.ckpt"), _uri(weights), "safetensors", tmp_path)
    output_dir = tmp_path / "classifier"
    ran = _run(
        "run_classifier.py",
        "--task_name=generic",
        f"--data_dir={_uri(data_dir)}",
        f"--init_checkpoint={_uri(weights)}",
        f"--output_dir={_uri(output_dir)}",
        "--do_train=true",
        "--do_eval=true",
        "--do_predict=true",
        "--max_seq_length=16",
        "--train_batch_size=8",
        "--num_train_epochs=2",
        "--seed=1",
        cwd=tmp_path,
    )
    # The encoder came from the safetensors folder (its weights: the conversion tests above).
    assert f"Initialized from {_uri(weights)} (safetensors)" in ran.stderr, ran.stderr[-3000:]
    results = dict(
        line.split(" = ") for line in (output_dir / "eval_results.txt").read_text().splitlines()
    )
    assert int(results["global_step"]) == 16 and "eval_accuracy" in results
    assert len((output_dir / "test_results.tsv").read_text().splitlines()) == 16
    assert (output_dir / "serving_model" / "saved_model.pb").exists()


def test_features_from_a_keras_hub_preset_with_its_vocabulary(tiny_setup, tmp_path):
    """extract_features.py with --init_checkpoint alone: config and vocabulary from the preset."""
    bert_dir, _ = tiny_setup
    preset = tmp_path / "preset"
    _convert(_uri(bert_dir / "bert_model.ckpt"), _uri(preset), "keras_hub", tmp_path)
    lines = tmp_path / "lines.txt"
    lines.write_text("the movie was great\nthe plot was dull ||| it was boring\n")
    outputs = {}
    for name, checkpoint, text in (
        ("remote", _uri(preset), _uri(lines)),
        (
            "local",
            str(bert_dir / "bert_model.ckpt"),
            str(lines),
        ),
    ):
        output = tmp_path / f"{name}.jsonl"
        _run(
            "extract_features.py",
            f"--input_file={text}",
            f"--output_file={_uri(output) if name == 'remote' else output}",
            f"--init_checkpoint={checkpoint}",
            "--max_seq_length=16",
            "--layers=-1",
            cwd=tmp_path,
        )
        outputs[name] = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(outputs["remote"]) == 2
    for remote, local in zip(outputs["remote"], outputs["local"], strict=True):
        assert [t["token"] for t in remote["features"]] == [t["token"] for t in local["features"]]
        np.testing.assert_allclose(
            [t["layers"][0]["values"] for t in remote["features"]],
            [t["layers"][0]["values"] for t in local["features"]],
            atol=1e-5,
        )


def test_squad_trains_and_predicts(tmp_path):
    zh = REPO_ROOT / "samples" / "zh"
    output_dir = tmp_path / "squad"
    _run(
        "run_squad.py",
        f"--vocab_file={_uri(zh / 'vocab.txt')}",
        f"--bert_config_file={_uri(zh / 'bert_config.json')}",
        f"--train_file={_uri(zh / 'reading' / 'train.json')}",
        f"--predict_file={_uri(zh / 'reading' / 'dev.json')}",
        f"--output_dir={_uri(output_dir)}",
        "--do_train=True",
        "--do_predict=True",
        "--train_batch_size=8",
        "--num_train_epochs=1",
        "--max_seq_length=96",
        "--doc_stride=48",
        "--max_query_length=24",
        cwd=tmp_path,
    )
    dev = json.loads((zh / "reading" / "dev.json").read_text("utf-8"))
    question_ids = {q["id"] for a in dev["data"] for p in a["paragraphs"] for q in p["qas"]}
    predictions = json.loads((output_dir / "predictions.json").read_text("utf-8"))
    assert set(predictions) == question_ids
    assert "exact_match" in json.loads((output_dir / "eval_results.json").read_text())
