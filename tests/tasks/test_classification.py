"""run_classifier end to end on real GLUE MRPC from real pre-trained weights (all-MiniLM-L6-v2),
the raw-text serving export, and the original script's checks."""

import csv
import shutil

import numpy as np
import pytest

from official_bert.checkpoints.loading import read_bert_config
from official_bert.tasks.classification import ClassifierOptions
from official_bert.tasks.classification_objective import mean_batch_loss
from official_bert.tasks.registry import run_classifier
from tests.conftest import ORIGINAL_TINY, REPO_ROOT, SHARED
from tests.export.fresh_process import serve_in_fresh_process
from tests.warm_interpreter import run_script

MRPC = SHARED / "data" / "glue" / "MRPC"


def _options(minilm_dir, output_dir, data_dir, **overrides):
    values = dict(
        bert_config=read_bert_config(str(minilm_dir / "config.json")),
        task_name="MRPC",
        data_dir=str(data_dir),
        vocab_file=str(minilm_dir / "vocab.txt"),
        output_dir=str(output_dir),
        init_checkpoint=str(minilm_dir),
        max_seq_length=64,
        train_batch_size=16,
        eval_batch_size=64,
        predict_batch_size=64,
        learning_rate=5e-5,
        num_train_epochs=1.0,
        max_train_examples=320,  # 20 steps
        steps_per_loop=10,
        log_steps=10,
        seed=3,
    )
    values.update(overrides)
    return ClassifierOptions(**values)


@pytest.fixture(scope="module")
def mrpc_run(minilm_dir, tmp_path_factory):
    if not MRPC.exists():
        pytest.skip(f"not present: {MRPC}")
    # The real files, with the dev and test splits cut to their first 120 rows to keep this
    # test short (training reads the first 320 examples).
    data_dir = tmp_path_factory.mktemp("mrpc_data")
    (data_dir / "train.tsv").write_bytes((MRPC / "train.tsv").read_bytes())
    for name in ("dev.tsv", "test.tsv"):
        lines = (MRPC / name).read_text(encoding="utf-8").splitlines(keepends=True)
        (data_dir / name).write_text("".join(lines[:121]), encoding="utf-8")
    before = run_classifier(
        _options(minilm_dir, tmp_path_factory.mktemp("mrpc_before"), data_dir, do_eval=True)
    )["eval"]
    output_dir = tmp_path_factory.mktemp("mrpc")
    results = run_classifier(
        _options(minilm_dir, output_dir, data_dir, do_train=True, do_eval=True, do_predict=True)
    )
    return before, results, output_dir


def test_a_few_dozen_steps_lower_the_loss_and_write_every_output(mrpc_run):
    before, results, output_dir = mrpc_run
    history = results["history"]
    assert [step for step, _ in history] == [10, 20]
    after = results["eval"]
    assert after["eval_loss"] < before["eval_loss"] - 0.03, (before, after)
    assert history[-1][1] < history[0][1], history

    lines = (output_dir / "eval_results.txt").read_text().splitlines()
    values = dict(line.split(" = ") for line in lines)
    assert set(values) == {"eval_accuracy", "eval_f1", "eval_loss", "global_step", "loss"}
    # The same figures as TensorBoard scalars in eval/, at the trained step, as the original's
    # Estimator wrote them beside train/.
    import tensorflow as tf

    scalars = {}
    for path in (output_dir / "eval").glob("events.out.tfevents.*"):
        for record in tf.data.TFRecordDataset(str(path)):
            event = tf.compat.v1.Event.FromString(record.numpy())
            for value in event.summary.value:
                scalars[value.tag] = (event.step, float(tf.make_ndarray(value.tensor)))
    assert set(scalars) == {"eval_accuracy", "eval_f1", "eval_loss", "loss"}
    assert scalars["eval_loss"][0] == 20
    assert scalars["eval_loss"][1] == pytest.approx(float(values["eval_loss"]), rel=1e-6)
    assert values["global_step"] == "20"
    # The Estimator's `loss` (a mean of batch means) beside eval_loss, as in the original file.
    assert float(values["loss"]) == pytest.approx(after["loss"])
    assert float(values["loss"]) == pytest.approx(after["eval_loss"], rel=0.1)
    assert float(values["eval_accuracy"]) == pytest.approx(after["eval_accuracy"])

    rows = [line.split("\t") for line in (output_dir / "test_results.tsv").read_text().splitlines()]
    assert len(rows) == 120 and all(len(row) == 2 for row in rows)
    np.testing.assert_allclose([sum(map(float, row)) for row in rows], 1.0, atol=1e-6)
    # Each value as the original printed its float32 probabilities (0.33764967, not float64's
    # 0.33764968067218204).
    assert all(value == str(np.float32(value)) for row in rows for value in row)
    for name in (
        "train.tf_record",
        "eval.tf_record",
        "predict.tf_record",
        "checkpoint",
        "ckpt-20.index",
    ):
        assert (output_dir / name).exists(), name
    assert list((output_dir / "train").glob("events.out.tfevents.*"))
    # A glob of the records reads the records alone (their summaries are dot files).
    for split in ("train", "eval", "predict"):
        assert list(output_dir.glob(f"{split}.tf_record*")) == [output_dir / f"{split}.tf_record"]
        assert (output_dir / f".{split}.tf_record.summary.json").exists()
    assert (output_dir / "serving_model" / "saved_model.pb").exists()


def test_serving_model_takes_raw_strings_in_a_fresh_process(mrpc_run):
    _, _, output_dir = mrpc_run
    with open(MRPC / "test.tsv", encoding="utf-8") as f:
        rows = [
            [row[3], row[4]] for row in list(csv.reader(f, delimiter="\t", quotechar=None))[1:21]
        ]
    served = serve_in_fresh_process(
        output_dir / "serving_model",
        {"text_a": [row[0] for row in rows], "text_b": [row[1] for row in rows]},
    )
    # test_results.tsv holds the in-process model's probabilities for the same test rows.
    in_process = [
        list(map(float, line.split("\t")))
        for line in (output_dir / "test_results.tsv").read_text().splitlines()[:20]
    ]
    np.testing.assert_allclose(served["probabilities"], in_process, atol=1e-5)
    assert served["labels"] == [str(int(np.argmax(p))) for p in in_process]


def test_serving_signature_is_visible_with_saved_model_cli(mrpc_run):
    _, _, output_dir = mrpc_run
    result = run_script(
        [
            "-m",
            "tensorflow.python.tools.saved_model_cli",
            "show",
            "--dir",
            str(output_dir / "serving_model"),
            "--tag_set",
            "serve",
            "--signature_def",
            "serving_default",
        ],
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for name in ("text_a", "text_b", "probabilities", "labels", "DT_STRING"):
        assert name in result.stdout, result.stdout


def _bad(minilm_dir, tmp_path, data_dir=MRPC, **overrides):
    values = dict(do_train=True, init_checkpoint=None)
    values.update(overrides)
    return _options(minilm_dir, tmp_path / "out", data_dir, **values)


def test_none_of_train_eval_predict(minilm_dir, tmp_path):
    with pytest.raises(ValueError, match="At least one of `do_train`, `do_eval` or `do_predict'"):
        run_classifier(_bad(minilm_dir, tmp_path, do_train=False))


def test_max_seq_length_beyond_the_position_embeddings(minilm_dir, tmp_path):
    with pytest.raises(ValueError, match="sequence length 1024 .* up to sequence length 512"):
        run_classifier(_bad(minilm_dir, tmp_path, max_seq_length=1024))


def test_lower_casing_that_contradicts_a_released_checkpoint(minilm_dir, tmp_path):
    checkpoint = str(tmp_path / "cased_L-12_H-768_A-12" / "bert_model.ckpt")
    with pytest.raises(ValueError, match="--do_lower_case=False"):
        run_classifier(_bad(minilm_dir, tmp_path, init_checkpoint=checkpoint, do_lower_case=True))


def test_empty_or_missing_data_dir(minilm_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        run_classifier(_bad(minilm_dir, tmp_path, data_dir=str(tmp_path / "missing")))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"empty/train\.tsv not found"):
        run_classifier(_bad(minilm_dir, tmp_path, data_dir=str(tmp_path / "empty")))


def test_script_reports_a_bad_row_with_its_file_and_line(minilm_dir, tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "train.tsv").write_text(
        "sentence\tlabel\ngood\t1\nbad\t1\textra\n", encoding="utf-8"
    )
    result = run_script(
        [
            str(REPO_ROOT / "run_classifier.py"),
            "--task_name=SST-2",
            "--do_train=true",
            f"--data_dir={data_dir}",
            f"--vocab_file={minilm_dir / 'vocab.txt'}",
            f"--bert_config_file={minilm_dir / 'config.json'}",
            f"--output_dir={tmp_path / 'out'}",
        ],
        timeout=300,
    )
    assert result.returncode != 0
    assert "train.tsv, line 3: 3 columns, but the header has 2" in result.stderr


@pytest.mark.slow  # layouts: tests/checkpoints; default suite time
def test_init_checkpoint_in_any_layout_gives_the_same_model(minilm_dir, tmp_path):
    """safetensors (HF names), the original TF1 layout, and a training checkpoint of ours
    (model + optimizer, as run_pretraining.py writes) initialize the same classifier."""
    import keras
    import tensorflow as tf

    from official_bert.checkpoints.conversion import convert_checkpoint
    from official_bert.models import BertEncoder, BertPretrainer

    if not MRPC.exists():
        pytest.skip(f"not present: {MRPC}")
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    dev = (MRPC / "dev.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
    (data_dir / "dev.tsv").write_text("".join(dev[:65]), encoding="utf-8")

    tf1 = convert_checkpoint(str(minilm_dir), str(tmp_path / "tf1"), "tf1")
    config = read_bert_config(str(minilm_dir / "config.json"))
    pretrainer = BertPretrainer(BertEncoder.from_bert_config(config))
    pretrainer.build()
    from official_bert.checkpoints import load_bert_weights

    load_bert_weights(pretrainer, str(minilm_dir))
    optimizer = keras.optimizers.AdamW()
    optimizer.build(pretrainer.trainable_variables)
    ours = tf.train.Checkpoint(model=pretrainer, optimizer=optimizer).write(
        str(tmp_path / "ours" / "ckpt-7")
    )

    losses = {}
    for name, checkpoint in (("safetensors", str(minilm_dir)), ("tf1", tf1), ("object", ours)):
        options = _options(
            minilm_dir, tmp_path / f"run_{name}", data_dir, do_eval=True, init_checkpoint=checkpoint
        )
        losses[name] = run_classifier(options)["eval"]["eval_loss"]
    assert losses["tf1"] == pytest.approx(losses["safetensors"], abs=1e-5), losses
    assert losses["object"] == pytest.approx(losses["safetensors"], abs=1e-5), losses


def test_output_dir_holding_an_original_checkpoint_is_a_clear_error(minilm_dir, tmp_path):
    """The original layout ships a `checkpoint` state file: a pre-trained release folder given
    as output_dir is read as the original's Estimator would (heads required), so its missing
    classifier head is named; a run that trains does not resume one at all."""
    from official_bert.checkpoints.conversion import convert_checkpoint

    if not MRPC.is_dir():
        pytest.skip(f"not present: {MRPC}")

    output_dir = tmp_path / "tf1"
    convert_checkpoint(str(minilm_dir), str(output_dir), "tf1")
    with pytest.raises(
        ValueError, match="original's layout of another model.*missing from the checkpoint: output_"
    ):
        run_classifier(_options(minilm_dir, output_dir, MRPC, do_eval=True))
    with pytest.raises(ValueError, match="a run that trains does not resume"):
        run_classifier(_options(minilm_dir, output_dir, MRPC, do_train=True))


def test_a_cased_release_folder_sets_the_casing(tmp_path):
    """--init_checkpoint=<the unzipped release folder> of a cased model, no --do_lower_case:
    the casing its name says (the original's default True would fail its own check)."""
    folder = tmp_path / "cased_L-2_H-64_A-2"
    folder.mkdir()
    for name in (
        "bert_model.ckpt.index",
        "bert_model.ckpt.data-00000-of-00001",
        "bert_config.json",
    ):
        shutil.copy(ORIGINAL_TINY / name, folder / name)
    shutil.copy(ORIGINAL_TINY / "vocab.txt", folder / "vocab.txt")
    options = ClassifierOptions(
        task_name="generic",
        data_dir=str(tmp_path),
        output_dir=str(tmp_path / "out"),
        init_checkpoint=str(folder),
    )
    assert options.do_lower_case is False
    assert options.vocab_file == str(folder / "vocab.txt")


def test_the_estimators_loss_is_a_mean_of_batch_means():
    per_example = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    assert mean_batch_loss(per_example, 2) == pytest.approx((1.5 + 3.5 + 5.0) / 3)
    assert mean_batch_loss(per_example, 5) == pytest.approx(3.0)  # one batch: eval_loss
    assert mean_batch_loss(per_example, 8) == pytest.approx(3.0)
