"""Multi-task fine-tuning: the task sampler, the loss, run_multitask on two tiny tasks in GLUE
layouts (CoLA: classification of single sentences, STS-B: regression on pairs) with a tiny BERT,
its original-layout outputs, its test predictions, a rerun that resumes, and run_multitask.py."""

import shutil

import numpy as np
import pytest
import tensorflow as tf

from official_bert.checkpoints.loading import read_bert_config
from official_bert.checkpoints.original_tf1 import read_checkpoint_arrays
from official_bert.data.classification.dataset import classifier_dataset
from official_bert.data.classification.multitask_dataset import (
    multitask_dataset,
    task_choice_dataset,
    task_sampling_probabilities,
)
from official_bert.models import BertEncoder, MultiTaskClassifier
from official_bert.tasks import driver
from official_bert.tasks.classification_objective import mean_eval_loss, regression_loss, softmax
from official_bert.tasks.multitask import (
    MultiTaskOptions,
    load_task_classifier,
    run_multitask,
)
from official_bert.tasks.multitask_objective import multitask_loss_fn
from tests.conftest import REPO_ROOT, random_inputs, tiny_encoder_kwargs
from tests.tiny_data import write_tiny_task
from tests.warm_interpreter import run_script

# The training set sizes of GLUE's MRPC, STS-B and CoLA.
GLUE_SIZES = [3668, 5749, 8551]


# === The sampler ===
def test_sampling_probabilities_follow_the_temperature():
    np.testing.assert_allclose(task_sampling_probabilities([100, 300, 600]), [0.1, 0.3, 0.6])
    square_roots = np.sqrt([100, 300, 600])
    np.testing.assert_allclose(
        task_sampling_probabilities([100, 300, 600], 2.0), square_roots / square_roots.sum()
    )
    np.testing.assert_allclose(task_sampling_probabilities(GLUE_SIZES, 1e6), [1 / 3] * 3, atol=1e-6)
    with pytest.raises(ValueError, match="sampling_temperature must be > 0, got 0"):
        task_sampling_probabilities([1, 2], 0.0)
    with pytest.raises(ValueError, match="every task needs training examples"):
        task_sampling_probabilities([10, 0])


@pytest.mark.parametrize("temperature", [1.0, 100.0])
def test_drawn_task_frequencies_match_the_probabilities(temperature):
    probabilities = task_sampling_probabilities(GLUE_SIZES, temperature)
    draws = np.array(
        list(task_choice_dataset(probabilities, seed=5).take(2000).as_numpy_iterator())
    )
    frequencies = np.bincount(draws, minlength=3) / len(draws)
    # Four standard deviations of a binomial frequency over 2000 draws (at most 0.045).
    tolerance = 4 * np.sqrt(probabilities * (1 - probabilities) / len(draws))
    assert np.all(np.abs(frequencies - probabilities) < tolerance), (frequencies, probabilities)
    if temperature == 1.0:  # proportional: CoLA more than twice as often as MRPC
        assert frequencies[2] > 2 * frequencies[0]
    else:  # nearly uniform
        assert np.all(np.abs(frequencies - 1 / 3) < 0.045), frequencies


def test_task_sequence_is_fixed_by_the_seed_and_repeated_per_replica():
    probabilities = [0.5, 0.5]

    def draws(seed, repeats=1, count=200):
        dataset = task_choice_dataset(probabilities, seed=seed, repeats=repeats)
        return list(dataset.take(count).as_numpy_iterator())

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)
    # Two replicas per pipeline: each draw twice in a row, the same draws.
    twice = draws(7, repeats=2, count=400)
    assert twice[0::2] == twice[1::2] == draws(7)


_MIRRORED = r"""
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from official_bert.data.classification.multitask_dataset import multitask_dataset

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])

def task_dataset(task, context):
    # Labels 10 * task + k: which task a batch came from, read off its labels.
    labels = np.arange(64, dtype=np.int32) % 5 + 10 * task
    data = tf.data.Dataset.from_tensor_slices({"label_ids": labels}).shard(
        context.num_input_pipelines, context.input_pipeline_id)
    return data.repeat().batch(context.get_per_replica_batch_size(8), drop_remainder=True)

def dataset_fn(context):
    return multitask_dataset([task_dataset(0, context), task_dataset(1, context)],
                             [0.5, 0.5], 11, context)

steps = []
for _, batch in zip(range(30), strategy.distribute_datasets_from_function(dataset_fn)):
    steps.append([[int(part["task_id"][0]), sorted({int(l) // 10 for l in part["label_ids"]})]
                  for part in strategy.experimental_local_results(batch)])
print(json.dumps(steps))
"""


def test_all_replicas_of_a_step_train_the_same_task(tmp_path):
    """MirroredStrategy over 2 logical CPUs: each step's two per-replica batches come from one
    task, the task of draw k of the sequence (the sequence of one device)."""
    import json

    result = run_script(
        ["-c", _MIRRORED],
        timeout=300,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    steps = json.loads(result.stdout.strip().splitlines()[-1])
    expected = list(task_choice_dataset([0.5, 0.5], seed=11).take(30).as_numpy_iterator())
    assert [[part[0] for part in step] for step in steps] == [[task, task] for task in expected]
    # The batches hold that task's examples only.
    assert all(part[1] == [part[0]] for step in steps for part in step)


# === The loss ===
def test_loss_is_the_sampled_tasks_and_the_other_head_gets_zero_gradients():
    model = MultiTaskClassifier(BertEncoder(**tiny_encoder_kwargs()), {"cola": 2, "sts-b": 1})
    model.build()
    loss_fn = multitask_loss_fn(["cola", "sts-b"], [False, True])
    # STS-B scores as labels: cross-entropy of a 2-class head on them would be an error (class
    # ids 3 and 4) or NaN; the switch never evaluates it.
    batch = dict(
        random_inputs(),
        label_ids=np.array([3.8, 0.0, 4.6], np.float32),
        task_id=np.array([1, 1, 1], np.int32),
    )
    variables = [
        model.head("cola").dense.kernel,
        model.head("sts-b").dense.kernel,
        model.encoder.pooler.kernel,
    ]

    @tf.function
    def loss_and_gradients(batch):
        with tf.GradientTape() as tape:
            outputs = model(batch, training=False)
            loss = loss_fn(outputs, batch)
        return loss, outputs, tape.gradient(loss, variables)

    loss, outputs, (cola, stsb, pooler) = loss_and_gradients(batch)
    assert float(loss) == pytest.approx(
        float(regression_loss(outputs["sts-b"], batch["label_ids"]))
    )
    assert np.all(cola.numpy() == 0.0)
    assert np.abs(stsb.numpy()).max() > 0 and np.abs(pooler.numpy()).max() > 0


# === run_multitask on tiny tasks ===
@pytest.fixture(scope="module")
def tiny_glue(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_glue")
    # Test sets of 20 and 12: at predict_batch_size 16, CoLA's last batch is partial.
    write_tiny_task(root / "CoLA", "cola", seed=0, counts=(48, 32, 20))
    write_tiny_task(root / "STS-B", "sts-b", seed=1, counts=(32, 32, 12))
    return root


def _options(tiny_checkpoint_dir, tiny_glue, output_dir, **overrides):
    values = dict(
        bert_config=read_bert_config(str(tiny_checkpoint_dir / "bert_config.json")),
        vocab_file=str(tiny_checkpoint_dir / "vocab.txt"),
        output_dir=str(output_dir),
        init_checkpoint=str(tiny_checkpoint_dir / "bert_model.ckpt"),
        task_names=["cola", "sts-b"],
        data_dirs=[str(tiny_glue / "CoLA"), str(tiny_glue / "STS-B")],
        max_seq_length=16,
        do_train=True,
        do_eval=True,
        train_batch_size=8,
        eval_batch_size=16,
        learning_rate=1e-3,
        num_train_steps=20,
        steps_per_loop=5,
        save_checkpoints_steps=5,
        log_steps=5,
        seed=2,
    )
    values.update(overrides)
    return MultiTaskOptions(**values)


@pytest.fixture(scope="module")
def multitask_run(tiny_checkpoint_dir, tiny_glue, tmp_path_factory):
    output_dir = tmp_path_factory.mktemp("multitask")
    results = run_multitask(
        _options(tiny_checkpoint_dir, tiny_glue, output_dir, do_predict=True, predict_batch_size=16)
    )
    return results, output_dir


def _key_values(path):
    return dict(line.split(" = ") for line in path.read_text().splitlines())


def test_training_moves_the_shared_encoder_and_every_head(multitask_run, tiny_checkpoint_dir):
    results, output_dir = multitask_run
    assert results["num_train_steps"] == 20
    assert [step for step, _ in results["history"]] == [5, 10, 15, 20]
    np.testing.assert_allclose(list(results["probabilities"].values()), [0.6, 0.4])

    # The encoder, written in the original layout, moved away from init_checkpoint everywhere.
    before = read_checkpoint_arrays(str(tiny_checkpoint_dir / "bert_model.ckpt"))
    after = read_checkpoint_arrays(str(output_dir / "bert_model.ckpt"))
    assert sorted(after) == sorted(name for name in before if name.startswith("bert/"))
    for name, value in after.items():
        if name.endswith("/attention/self/key/bias"):
            # It adds the same q.b to every score of a query, which the softmax ignores: its
            # gradient is zero up to rounding, in any BERT.
            continue
        assert np.abs(value - before[name]).max() > 1e-5, name

    # Each head: original names and shapes; its bias (initialized to exactly 0) and kernel
    # moved, also between the runner's checkpoints at steps 5 and 20.
    at_step_5 = MultiTaskClassifier(
        BertEncoder.from_bert_config(read_bert_config(str(output_dir / "bert_config.json"))),
        {"cola": 2, "sts-b": 1},
    )
    at_step_5.build()
    tf.train.Checkpoint(model=at_step_5).read(str(output_dir / "ckpt-5")).expect_partial()
    for task, num_classes in (("cola", 2), ("sts-b", 1)):
        head = read_checkpoint_arrays(str(output_dir / task / "classifier_head.ckpt"))
        assert {name: value.shape for name, value in head.items()} == {
            "output_weights": (num_classes, 32),
            "output_bias": (num_classes,),
        }
        assert np.abs(head["output_bias"]).min() > 0, task
        dense = at_step_5.head(task).dense
        assert np.abs(head["output_weights"].T - dense.kernel.numpy()).max() > 1e-5, task
        assert np.abs(head["output_bias"] - dense.bias.numpy()).max() > 1e-5, task


def test_each_task_is_evaluated_with_its_own_metric(multitask_run):
    results, output_dir = multitask_run
    cola = _key_values(output_dir / "cola" / "eval_results.txt")
    stsb = _key_values(output_dir / "sts-b" / "eval_results.txt")
    assert set(cola) == {"eval_accuracy", "eval_mcc", "eval_loss", "global_step", "loss"}
    assert set(stsb) == {"eval_pearson", "eval_spearman", "eval_loss", "global_step", "loss"}
    assert cola["global_step"] == stsb["global_step"] == "20"
    summary = _key_values(output_dir / "eval_results.txt")
    assert summary.pop("global_step") == "20"
    expected = {
        f"{task}/{key}": value
        for task, values in results["eval"].items()
        for key, value in values.items()
    }
    assert summary.keys() == expected.keys()
    for key, value in expected.items():
        assert float(summary[key]) == pytest.approx(value), key
    assert float(cola["eval_mcc"]) == pytest.approx(results["eval"]["cola"]["eval_mcc"])


def _task_classifier_outputs(output_dir, task, records_file):
    """(logits, label_ids) of the task's classifier rebuilt by load_task_classifier on the
    task's records `records_file` ("eval.tf_record", "predict.tf_record"), in file order."""
    model = load_task_classifier(str(output_dir), task)
    logits, labels = [], []
    for batch in classifier_dataset(
        str(output_dir / task / records_file), 16, 16, is_training=False
    ):
        logits.append(model(batch, training=False).numpy())
        labels.append(batch["label_ids"].numpy())
    return np.concatenate(logits), np.concatenate(labels)


def test_the_original_layout_outputs_rebuild_each_tasks_classifier(multitask_run):
    """bert_model.ckpt + <task>/classifier_head.ckpt in a single-task BertClassifier give the
    eval loss the multi-task model had on that task's dev set."""
    results, output_dir = multitask_run
    for task, is_regression in (("cola", False), ("sts-b", True)):
        logits, labels = _task_classifier_outputs(output_dir, task, "eval.tf_record")
        loss = mean_eval_loss(logits, labels, np.ones(32), is_regression)
        assert loss == pytest.approx(results["eval"][task]["eval_loss"], abs=1e-5), task


def test_each_task_predicts_its_test_set_into_its_folder(multitask_run):
    """<task>/test_results.tsv as run_classifier.py writes it: a row per test example in file
    order, CoLA's 2 class probabilities or STS-B's score, the predictions of the task's
    classifier rebuilt from the original-layout outputs."""
    results, output_dir = multitask_run
    assert not (output_dir / "test_results.tsv").exists()
    for task, num_examples, num_columns in (("cola", 20, 2), ("sts-b", 12, 1)):
        lines = (output_dir / task / "test_results.tsv").read_text().splitlines()
        rows = np.array([[float(value) for value in line.split("\t")] for line in lines])
        assert rows.shape == (num_examples, num_columns), task
        np.testing.assert_allclose(rows, results["predictions"][task], rtol=1e-6)
        logits, _ = _task_classifier_outputs(output_dir, task, "predict.tf_record")
        expected = logits if num_columns == 1 else softmax(logits)
        # The tiny model after 20 steps is nearly unsure (CoLA's rows span about 2e-4), but
        # its rows differ by more than the rounding (1e-8): the order is checked too.
        assert np.ptp(rows[:, 0]) > 1e-5, task
        np.testing.assert_allclose(rows, expected, rtol=0, atol=1e-6, err_msg=task)
    cola = results["predictions"]["cola"]
    np.testing.assert_allclose(cola.sum(axis=1), 1.0, atol=1e-6)
    assert np.all(cola >= 0)


def test_a_rerun_resumes_where_the_first_run_stopped(
    multitask_run, tiny_checkpoint_dir, tiny_glue, tmp_path, monkeypatch
):
    """A rerun on (a copy of) the first run's output_dir, 20 steps with a checkpoint every 5,
    asked for 30 steps: it restores step 20, the 20 batches read (so the task sequence goes on
    rather than starting over) and the first run's final weights, the encoder and both heads as
    the first run wrote them in the original layout; then it trains steps 21 to 30 only."""
    _, first_dir = multitask_run
    output_dir = tmp_path / "rerun"
    shutil.copytree(first_dir, output_dir)
    final = {task: load_task_classifier(str(first_dir), task) for task in ("cola", "sts-b")}

    at_start = {}
    make_runner = driver.create_runner

    def recording_runner(*args, **kwargs):
        runner = make_runner(*args, **kwargs)
        train = runner.train

        def train_after_recording(*train_args):
            at_start["step"] = runner.step
            at_start["batches_read"] = int(runner.checkpoint.train_batches_read.numpy())
            at_start["encoder"] = [v.numpy() for v in runner.model.encoder.trainable_weights]
            at_start["heads"] = {
                task: [v.numpy() for v in runner.model.head(task).trainable_weights]
                for task in final
            }
            return train(*train_args)

        runner.train = train_after_recording
        return runner

    monkeypatch.setattr(driver, "create_runner", recording_runner)
    results = run_multitask(
        _options(tiny_checkpoint_dir, tiny_glue, output_dir, num_train_steps=30, do_eval=False)
    )

    assert at_start["step"] == at_start["batches_read"] == 20
    assert [step for step, _ in results["history"]] == [25, 30]
    assert (output_dir / "ckpt-30.index").exists()
    encoder = final["cola"].encoder.trainable_weights
    assert len(at_start["encoder"]) == len(encoder)
    for value, expected in zip(at_start["encoder"], encoder, strict=True):
        np.testing.assert_array_equal(value, expected.numpy(), err_msg=expected.path)
    for task, model in final.items():
        head = model.classifier.trainable_weights
        for value, expected in zip(at_start["heads"][task], head, strict=True):
            np.testing.assert_array_equal(
                value, expected.numpy(), err_msg=f"{task} {expected.path}"
            )


def test_a_rerun_naming_the_tasks_in_another_order_is_refused(
    multitask_run, tiny_checkpoint_dir, tiny_glue, tmp_path
):
    """The checkpoint's heads are read by position: the tasks named in another order would
    read each task with another's head (silently, where their shapes agree), so the rerun is
    refused before the restore, naming the trained order."""
    _, first_dir = multitask_run
    output_dir = tmp_path / "rerun"
    shutil.copytree(first_dir, output_dir)
    reordered = _options(
        tiny_checkpoint_dir,
        tiny_glue,
        output_dir,
        task_names=["sts-b", "cola"],
        data_dirs=[str(tiny_glue / "STS-B"), str(tiny_glue / "CoLA")],
        do_train=False,
    )
    with pytest.raises(ValueError, match=r"trained with --task_names=cola,sts-b, whose heads"):
        run_multitask(reordered)


def test_mixed_batches_are_single_task(multitask_run):
    _, output_dir = multitask_run
    datasets = [
        classifier_dataset(
            str(output_dir / task / "train.tf_record"), 8, 16, is_training=True, seed=1
        )
        for task in ("cola", "sts-b")
    ]
    mixed = multitask_dataset(datasets, [0.5, 0.5], seed=3)
    expected_tasks = list(task_choice_dataset([0.5, 0.5], seed=3).take(40).as_numpy_iterator())
    for batch, expected in zip(mixed.take(40), expected_tasks, strict=True):
        task_ids = batch["task_id"].numpy()
        assert batch["label_ids"].dtype == tf.float32
        assert np.all(task_ids == expected)
        labels = set(batch["label_ids"].numpy().tolist())
        if expected == 0:  # CoLA: classes, single sentences (segment 0 only)
            assert labels <= {0.0, 1.0} and batch["input_type_ids"].numpy().max() == 0
        else:  # STS-B: scores, pairs
            assert labels <= {0.5, 4.5} and batch["input_type_ids"].numpy().max() == 1


def test_mismatched_or_unknown_tasks_are_clear_errors(tiny_checkpoint_dir, tiny_glue, tmp_path):
    def options(**overrides):
        return _options(tiny_checkpoint_dir, tiny_glue, tmp_path / "out", **overrides)

    with pytest.raises(
        ValueError, match=r"--task_names has 2 tasks \(cola,sts-b\) but --data_dirs has 1"
    ):
        run_multitask(options(data_dirs=[str(tiny_glue / "CoLA")]))
    with pytest.raises(
        ValueError, match=r"--task_names: unknown task 'colaa'; expected one of \["
    ) as error:
        run_multitask(options(task_names=["colaa", "sts-b"]))
    assert "'cola'" in str(error.value) and "'swag'" not in str(error.value)  # this script's tasks
    with pytest.raises(ValueError, match="names a task twice"):
        run_multitask(options(task_names=["sts-b", "STS-B"]))
    with pytest.raises(ValueError, match="--sampling_temperature must be > 0"):
        run_multitask(options(sampling_temperature=0.0))
    with pytest.raises(ValueError, match="'conll' is a token tagging task; run_multitask.py"):
        run_multitask(options(task_names=["cola", "conll"]))
    with pytest.raises(ValueError, match="At least one of `do_train`, `do_eval` or `do_predict'"):
        run_multitask(options(do_train=False, do_eval=False))
    assert not (tmp_path / "out").exists()


def test_a_missing_test_split_fails_before_training(tiny_checkpoint_dir, tiny_glue, tmp_path):
    """--do_predict reads every task's test.tsv before training, as run_classifier.py does."""
    cola = tmp_path / "CoLA"
    shutil.copytree(tiny_glue / "CoLA", cola)
    (cola / "test.tsv").unlink()
    options = _options(
        tiny_checkpoint_dir,
        tiny_glue,
        tmp_path / "out",
        data_dirs=[str(cola), str(tiny_glue / "STS-B")],
        do_predict=True,
    )
    with pytest.raises(FileNotFoundError, match=r"CoLA/test.tsv not found: .* the test split"):
        run_multitask(options)
    assert not list((tmp_path / "out").glob("ckpt-*"))


@pytest.mark.slow  # README's run_multitask.py command runs the script
def test_run_multitask_script_end_to_end(tiny_checkpoint_dir, tiny_glue, tmp_path):
    output_dir = tmp_path / "out"
    # No --bert_config_file or --vocab_file: found beside the checkpoint. 1 epoch over the
    # 48 + 32 examples at batch 8: 10 steps.
    result = run_script(
        [
            str(REPO_ROOT / "run_multitask.py"),
            "--task_names=cola,sts-b",
            f"--data_dirs={tiny_glue / 'CoLA'},{tiny_glue / 'STS-B'}",
            f"--init_checkpoint={tiny_checkpoint_dir / 'bert_model.ckpt'}",
            f"--output_dir={output_dir}",
            "--do_train=true",
            "--do_eval=true",
            "--max_seq_length=16",
            "--train_batch_size=8",
            "--eval_batch_size=32",
            "--num_train_epochs=1",
            "--sampling_temperature=3",
            "--iterations_per_loop=5",
            "--seed=4",
        ],
        timeout=600,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    summary = _key_values(output_dir / "eval_results.txt")
    assert summary["global_step"] == "10"
    assert {"cola/eval_mcc", "sts-b/eval_pearson", "sts-b/eval_spearman"} <= set(summary)
    for name in (
        "ckpt-10.index",
        "bert_model.ckpt.index",
        "bert_config.json",
        "cola/classifier_head.ckpt.index",
        "sts-b/classifier_head.ckpt.index",
        "cola/eval_results.txt",
    ):
        assert (output_dir / name).exists(), name
    # 48 ** (1/3) / (48 ** (1/3) + 32 ** (1/3)) = 0.5337
    assert "Task cola: 48 training examples, probability 0.5337" in result.stderr
