"""run_classifier.py --task_name=generic --multi_label: label sets read and checked, multi-hot
records, the binary cross-entropy loss, and a tiny run end to end (train, eval, predict,
export) whose serving model gives the label sets of the in-Python predict path."""

import json
import re

import numpy as np
import pytest
import tensorflow as tf

from official_bert.checkpoints.loading import read_bert_config
from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.classification.data_processor import ClassifierDataError
from official_bert.data.classification.dataset import classifier_dataset
from official_bert.data.classification.features import prepare_classifier_records
from official_bert.data.classification.glue_processors import GenericProcessor
from official_bert.data.classification.multi_label_features import (
    multi_hot_labels,
    multi_label_encoder,
)
from official_bert.evaluation.multi_label_metrics import predict_label_sets
from official_bert.side_file_names import label_thresholds_path, side_file_kind
from official_bert.tasks.classification import ClassifierOptions
from official_bert.tasks.classification_objective import (
    classifier_loss_fn,
    mean_multi_label_eval_loss,
)
from official_bert.tasks.multi_label_classification import (
    read_label_thresholds,
    write_label_thresholds,
)
from official_bert.tasks.registry import create_classifier_task, run_classifier
from tests.conftest import REPO_ROOT
from tests.tiny_data import (
    tiny_bert_config,
    write_tiny_checkpoint,
    write_tiny_multi_label_task,
    write_tiny_vocab,
)
from tests.warm_interpreter import run_script


def _write(directory, files: dict[str, str]):
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    return directory


def _processor(data_dir, **kwargs):
    values = dict(text_a_column="sentence", label_column="labels", multi_label=True)
    values.update(kwargs)
    return GenericProcessor(str(data_dir), **values)


# === Reading label sets ===
def test_label_sets_their_separator_and_the_empty_set(tmp_path):
    data_dir = _write(
        tmp_path / "data",
        {
            "train.tsv": "sentence\tlabels\na fox\tanimal\na good dog\tpos, animal\nthe movie\t\n",
            "dev.tsv": "sentence\tlabels\nbad\tneg\n",
        },
    )
    processor = _processor(data_dir)
    # Every label named in train, sorted; "pos, animal" splits at "," with spaces stripped.
    assert processor.get_labels() == ["animal", "pos"]
    with pytest.raises(ClassifierDataError, match=r"dev\.tsv, line 2: label 'neg'"):
        processor.get_examples("dev")
    examples = processor.get_examples("train")
    assert [processor.label_set(e.label) for e in examples] == [("animal",), ("pos", "animal"), ()]
    semicolons = _processor(data_dir, label_separator=";", labels=["a", "b"])
    assert semicolons.label_set("a; b") == ("a", "b")
    assert semicolons.label_set("a,b") == ("a,b",)


def test_an_unknown_label_names_the_file_the_line_and_the_label_set(tmp_path):
    data_dir = _write(
        tmp_path / "data", {"train.tsv": "sentence\tlabels\nfox\tanimal\ngood\tpos,animals\n"}
    )
    processor = _processor(data_dir, labels=["animal", "pos"])
    with pytest.raises(ClassifierDataError) as error:
        processor.get_examples("train")
    message = str(error.value)
    assert "train.tsv, line 3" in message and "'animals'" in message
    assert "--labels" in message and "['animal', 'pos']" in message


def test_multi_hot_labels():
    np.testing.assert_array_equal(
        multi_hot_labels([("b",), ("c", "a"), ()], ["a", "b", "c"]),
        [[0, 1, 0], [1, 0, 1], [0, 0, 0]],
    )
    with pytest.raises(ValueError, match="'d' is not one of"):
        multi_hot_labels([("d",)], ["a", "b", "c"])


def test_records_keep_the_label_sets_when_batches_are_trimmed(tmp_path):
    data_dir = _write(
        tmp_path / "data",
        {"train.tsv": "sentence\tlabels\ngood dog\tanimal,pos\nthe movie\t\nbad\tneg\n"},
    )
    vocab = tmp_path / "vocab.txt"
    write_tiny_vocab(vocab)
    processor = _processor(data_dir)
    packer = BertInputPacker(str(vocab), max_seq_length=24)
    records = prepare_classifier_records(
        processor,
        "train",
        packer,
        str(tmp_path / "train.tf_record"),
        str(vocab),
        encode_examples=multi_label_encoder(processor.label_set),
    )
    dataset = classifier_dataset(records.path, 3, 24, is_training=False, trim_padding=True)
    batch = next(iter(dataset))
    assert batch["input_word_ids"].shape == (3, 8)  # cut to 8 (the longest is 4 pieces)
    # Labels sorted: animal, neg, pos. Three labels wide, untouched by the cut.
    np.testing.assert_array_equal(batch["label_ids"], [[1, 0, 1], [0, 0, 0], [0, 1, 0]])


# === The loss ===
def test_loss_is_binary_cross_entropy_by_hand():
    logits = np.array([[2.0, -1.0, 0.0], [-3.0, 0.5, 1.5]], np.float32)
    labels = np.array([[1, 0, 1], [0, 0, 1]])
    # -[z log s(x) + (1 - z) log(1 - s(x))], averaged over the 6 (example, label) pairs.
    probabilities = 1 / (1 + np.exp(-logits.astype(np.float64)))
    by_hand = -np.mean(labels * np.log(probabilities) + (1 - labels) * np.log(1 - probabilities))
    loss = classifier_loss_fn(is_regression=False, multi_label=True)(
        tf.constant(logits), {"label_ids": tf.constant(labels, tf.int32)}
    )
    assert float(loss) == pytest.approx(by_hand, rel=1e-6)
    assert mean_multi_label_eval_loss(logits, labels) == pytest.approx(by_hand, rel=1e-6)
    # A single label arrives as a [batch] vector (the reader squeezes width 1).
    single = classifier_loss_fn(False, multi_label=True)(
        tf.constant(logits[:, :1]), {"label_ids": tf.constant(labels[:, 0], tf.int32)}
    )
    column = -np.mean(
        labels[:, 0] * np.log(probabilities[:, 0])
        + (1 - labels[:, 0]) * np.log(1 - probabilities[:, 0])
    )
    assert float(single) == pytest.approx(column, rel=1e-6)


def test_thresholds_saved_for_other_labels_are_refused(tmp_path):
    path = label_thresholds_path(str(tmp_path))
    assert path == str(tmp_path / ".checkpoint.label_thresholds.json")
    assert read_label_thresholds(path, ["a", "b"]) is None  # none yet
    write_label_thresholds(path, ["a", "b"], np.array([0.25, 0.75]), None, ",", 7)
    np.testing.assert_array_equal(read_label_thresholds(path, ["a", "b"]), [0.25, 0.75])
    with pytest.raises(ValueError, match=r"labels \['a', 'b'\], but the task's labels are"):
        read_label_thresholds(path, ["a", "c"])


# === The options ===
def test_multi_label_is_for_the_generic_task(tmp_path):
    write_tiny_vocab(tmp_path / "vocab.txt")
    common = dict(
        bert_config=tiny_bert_config(),
        vocab_file=str(tmp_path / "vocab.txt"),
        max_seq_length=16,
        output_dir=str(tmp_path / "out"),
        data_dir=str(tmp_path),
        do_train=True,
        multi_label=True,
    )
    with pytest.raises(ValueError, match="`multi_label` is for --task_name=generic"):
        create_classifier_task(ClassifierOptions(task_name="SST-2", **common))
    with pytest.raises(ValueError, match="exclude each other"):
        create_classifier_task(ClassifierOptions(task_name="generic", is_regression=True, **common))


# === A tiny run end to end ===
_SERVE = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
assert not any(name.startswith("official_bert") for name in sys.modules)
served = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
out = served(text_a=tf.constant(json.loads(sys.argv[2])))
print(json.dumps({"probabilities": out["probabilities"].numpy().tolist(),
                  "label_indicators": out["label_indicators"].numpy().tolist(),
                  "labels": [l.decode() for l in out["labels"].numpy()]}))
"""


@pytest.fixture(scope="module")
def multi_label_run(tmp_path_factory):
    """(output_dir, the script's stderr, data_dir, bert_dir) of run_classifier.py --multi_label
    trained, evaluated, predicted and exported from a random tiny BERT."""
    root = tmp_path_factory.mktemp("multi_label")
    bert_dir = write_tiny_checkpoint(root / "bert")
    data_dir = root / "data"
    write_tiny_multi_label_task(data_dir)
    output_dir = root / "output"
    ran = run_script(
        [
            str(REPO_ROOT / "run_classifier.py"),
            "--task_name=generic",
            "--multi_label=true",
            "--text_a_column=sentence",
            "--label_column=labels",
            f"--data_dir={data_dir}",
            f"--output_dir={output_dir}",
            f"--init_checkpoint={bert_dir / 'bert_model.ckpt'}",
            "--do_train=true",
            "--do_eval=true",
            "--do_predict=true",
            "--max_seq_length=16",
            "--train_batch_size=8",
            "--eval_batch_size=16",
            "--predict_batch_size=16",
            "--learning_rate=1e-3",
            "--num_train_epochs=20",
            "--steps_per_loop=48",
            "--log_steps=48",
            "--seed=1",
        ],
        cwd=root,
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    return output_dir, ran.stderr, data_dir, bert_dir


def test_training_lowers_the_loss_and_writes_every_output(multi_label_run):
    output_dir, stderr, _, _ = multi_label_run
    losses = [float(loss) for loss in re.findall(r"step \d+/240: loss ([0-9.]+)", stderr)]
    assert len(losses) == 5, stderr[-3000:]
    # Binary cross-entropy starts near log 2 = 0.69 (logits near 0). The random tiny BERT
    # needs about 100 steps to break its symmetry here; 0.69 -> 0.43 at seed 1.
    assert losses[0] > 0.6 and losses[-1] < 0.75 * losses[0], losses

    results = dict(
        line.split(" = ") for line in (output_dir / "eval_results.txt").read_text().splitlines()
    )
    assert set(results) == {
        "eval_micro_f1",
        "eval_macro_f1",
        "eval_exact_match",
        "eval_loss",
        "global_step",
    }
    assert results["global_step"] == "240"
    # Predicting every label for every example (the best a constant does) gives micro F1
    # 2/3 and exact match 1/8; each set of labels is equally common. 0.83 and 0.5 at seed 1.
    assert float(results["eval_micro_f1"]) > 0.75, results
    assert float(results["eval_exact_match"]) > 0.3, results

    thresholds = json.loads(open(label_thresholds_path(str(output_dir))).read())
    assert thresholds["labels"] == ["animal", "neg", "pos"]
    assert thresholds["global_step"] == 240 and len(thresholds["dev_f1"]) == 3
    assert all(0 < value < 1 for value in thresholds["thresholds"])
    assert side_file_kind(label_thresholds_path(str(output_dir)))  # no glob reads it as data
    exported = json.loads(
        (output_dir / "serving_model" / "assets.extra" / "label_thresholds.json").read_text()
    )
    assert exported["thresholds"] == thresholds["thresholds"]

    lines = (output_dir / "test_results.tsv").read_text().splitlines()
    assert lines[0].split("\t") == ["animal", "neg", "pos"]
    probabilities = np.array([[float(v) for v in line.split("\t")] for line in lines[1:]])
    assert probabilities.shape == (24, 3)
    assert ((probabilities > 0) & (probabilities < 1)).all()


def test_serving_model_gives_the_label_sets_of_the_python_predict_path(multi_label_run):
    output_dir, _, data_dir, bert_dir = multi_label_run
    # The in-Python path: predict again from the trained checkpoint and the saved thresholds.
    options = ClassifierOptions(
        bert_config=read_bert_config(str(bert_dir / "bert_config.json")),
        vocab_file=str(bert_dir / "vocab.txt"),
        task_name="generic",
        multi_label=True,
        text_a_column="sentence",
        label_column="labels",
        data_dir=str(data_dir),
        output_dir=str(output_dir),
        do_predict=True,
        max_seq_length=16,
        predict_batch_size=16,
    )
    predicted = run_classifier(options)
    label_sets = [",".join(labels) for labels in predicted["predicted_labels"]]
    thresholds = json.loads(open(label_thresholds_path(str(output_dir))).read())["thresholds"]
    np.testing.assert_array_equal(
        predict_label_sets(predicted["predictions"], thresholds),
        [[name in labels for name in ("animal", "neg", "pos")] for labels in label_sets],
    )
    assert len(set(label_sets)) >= 4  # the sets differ from row to row (empty ones too)

    texts = [
        line.split("\t")[0]
        for line in (data_dir / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]
    ]
    # A process that imported only tensorflow and tensorflow_text (tests/export/fresh_process.py).
    served = run_script(
        ["-c", _SERVE, str(output_dir / "serving_model"), json.dumps(texts)],
        timeout=300,
        cwd="/",
        preload="serving",
    )
    assert served.returncode == 0, served.stderr[-3000:]
    out = json.loads(served.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(out["probabilities"], predicted["predictions"], atol=1e-5)
    assert out["labels"] == label_sets
    np.testing.assert_array_equal(
        out["label_indicators"], predict_label_sets(predicted["predictions"], thresholds)
    )
