"""The training runner on one device: gradient accumulation, NaN stop, mixed precision, XLA."""

import logging
import os
import re
import shutil
import signal

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert.models import BertClassifier, BertEncoder, BertPretrainer, BertSpanLabeler
from official_bert.tasks.pretraining_objective import (
    pretraining_loss,
    pretraining_loss_denominators,
)
from official_bert.training.optimization import create_optimizer
from official_bert.training.runner import Runner, TrainingStopped, steps_in_next_loop
from official_bert.training.training_options import TrainingOptions
from tests.conftest import synthetic_pretraining_examples

SEQ, PREDICTIONS, VOCAB = 16, 4, 50


def dataset_fn_of(examples: dict, batch_size: int):
    """A train_dataset_fn giving `examples` in order, batch_size (global) at a time, repeated.
    Input pipeline i of n takes examples i, i + n, ...: n pipelines' first batches together
    are the first global batch of one pipeline."""

    def dataset_fn(input_context):
        dataset = tf.data.Dataset.from_tensor_slices(examples)
        size = batch_size
        if input_context is not None:
            dataset = dataset.shard(
                input_context.num_input_pipelines, input_context.input_pipeline_id
            )
            size = input_context.get_per_replica_batch_size(batch_size)
        return dataset.batch(size).repeat()

    return dataset_fn


def make_runner(
    output_dir,
    dtype="float32",
    optimizer_fn=None,
    denominators=True,
    strategy=None,
    use_next_sentence_label=True,
    intermediate_size=32,
    model_with_heads=None,
    dropout_rate=0.0,
    **settings,
):
    """A Runner of a tiny BertPretrainer (H16, 1 layer, no dropout, seed 1) and the original
    optimizer (lr 0.01, no warm-up, clip 1.0); settings override TrainingOptions (3 steps, a loop
    and a checkpoint per step: loops longer than one step need save_checkpoints_steps too). use_next_sentence_label=False: MLM only (the pooler unused). model_with_heads(encoder): another
    model than the pretrainer."""
    keras.utils.set_random_seed(1)

    def model_fn():
        encoder = BertEncoder(
            vocab_size=VOCAB,
            hidden_size=16,
            num_layers=1,
            num_attention_heads=2,
            intermediate_size=intermediate_size,
            hidden_dropout_rate=dropout_rate,
            attention_dropout_rate=dropout_rate,
            max_position_embeddings=SEQ,
            type_vocab_size=2,
            dtype=dtype,
        )
        if model_with_heads is None:
            model = BertPretrainer(encoder, use_next_sentence_label=use_next_sentence_label)
        else:
            model = model_with_heads(encoder)
        model.build()
        return model

    values = dict(num_train_steps=3, steps_per_loop=1, save_checkpoints_steps=1, log_steps=100)
    values.update(settings)
    num_train_steps = values.pop("num_train_steps")
    return Runner(
        strategy or tf.distribute.OneDeviceStrategy("/cpu:0"),
        model_fn,
        optimizer_fn or (lambda: create_optimizer(0.01, 100, 0, clip_norm=1.0)),
        pretraining_loss,
        TrainingOptions(output_dir=str(output_dir), **values),
        num_train_steps=num_train_steps,
        loss_denominators_fn=pretraining_loss_denominators if denominators else None,
    )


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    """make_runner's default run (3 steps of 8 of synthetic_pretraining_examples(24), a
    checkpoint per step), shared by the tests that train exactly it: (output_dir, trained
    weights). A test that writes to the output_dir takes a copy (copy_of)."""
    output_dir = tmp_path_factory.mktemp("default_run")
    runner = make_runner(output_dir)
    return output_dir, trained_weights(runner, synthetic_pretraining_examples(24), 8)


def copy_of(output_dir, tmp_path):
    """A copy of a shared run's output_dir in this test's tmp_path."""
    return shutil.copytree(output_dir, tmp_path / output_dir.name)


def test_a_checkpoint_of_other_dropout_settings_is_read_with_fresh_masks(tmp_path, default_run):
    """A config with dropout 0 makes no dropout random states: its run's checkpoint, read by a
    model whose config has dropout (the README's predict command with the released
    bert_config.json), was refused as "another model"; the weights are what matter."""
    no_dropout, trained = default_run
    with_dropout = make_runner(copy_of(no_dropout, tmp_path), dropout_rate=0.1)
    assert with_dropout.restore_or_initialize() and with_dropout.step == 3
    for read, written in zip(with_dropout.model.trainable_variables, trained, strict=True):
        np.testing.assert_array_equal(read.numpy(), written)
    # And the other way: a run with dropout, read by a model without.
    runner = make_runner(tmp_path / "dropout", dropout_rate=0.1)
    runner.train(dataset_fn_of(synthetic_pretraining_examples(24), 8), 8)
    without = make_runner(tmp_path / "dropout")
    assert without.restore_or_initialize() and without.step == 3


def test_a_save_cut_short_by_a_kill_leaves_nothing_after_the_rerun(tmp_path, default_run):
    output_dir = copy_of(default_run[0], tmp_path)
    # What tf.train.CheckpointManager stages a save in, as a SIGKILL mid-save leaves it.
    staged = output_dir / "ckpt-4_temp"
    staged.mkdir()
    (staged / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"\0" * 1000)
    again = make_runner(output_dir, num_train_steps=4)
    assert again.restore_or_initialize() and again.step == 3
    assert not staged.exists()


def test_the_learning_rate_logged_is_the_one_the_step_applied(tmp_path, caplog):
    # Warm-up over 4 steps from 0: the first update applies 0, the second 0.0025 (Keras's
    # optimizer.learning_rate gives the next step's: 0.0025 and 0.005).
    runner = make_runner(
        tmp_path,
        num_train_steps=2,
        log_steps=1,
        optimizer_fn=lambda: create_optimizer(0.01, 8, 4, clip_norm=1.0),
    )
    with caplog.at_level(logging.INFO, logger="absl"):
        runner.train(dataset_fn_of(synthetic_pretraining_examples(16), 8), 8)
    rates = re.findall(r"step \d+/2: loss [\d.]+, lr ([\d.e-]+)", caplog.text)
    assert [float(rate) for rate in rates] == [0.0, 0.0025], caplog.text


def checkpoint_steps(output_dir) -> list[int]:
    """The steps of the ckpt-N checkpoints in output_dir, in order."""
    return sorted(int(p.name.split("-")[1].split(".")[0]) for p in output_dir.glob("ckpt-*.index"))


def trained_weights(runner, examples, batch_size):
    runner.train(dataset_fn_of(examples, batch_size), batch_size)
    return [v.numpy() for v in runner.model.trainable_variables]


# === Gradient accumulation ===
def test_accumulated_micro_batches_equal_one_large_batch(tmp_path, default_run):
    examples = synthetic_pretraining_examples(24)
    one_batch = default_run[1]  # make_runner's default run: batches of 8 of these examples
    accumulated = make_runner(tmp_path / "four", gradient_accumulation_steps=4)
    four_micro = trained_weights(accumulated, examples, 8)
    # The optimizer and the learning-rate schedule count updates, not micro-batches.
    assert accumulated.step == 3
    for a, b in zip(four_micro, one_batch, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    # The test can fail: micro-batch means averaged (each normalized by its own weights) give
    # another update, because the micro-batches hold different numbers of predictions.
    naive = make_runner(tmp_path / "naive", gradient_accumulation_steps=4, denominators=False)
    naive_weights = trained_weights(naive, examples, 8)
    assert max(np.abs(a - b).max() for a, b in zip(naive_weights, one_batch, strict=True)) > 1e-4


def test_variables_without_gradients_accumulate_and_train_quietly(tmp_path, recwarn):
    # MLM only: the pooler is in the model but not in the loss, so it has no gradient. The
    # runner leaves such variables out (no None to add up, no Keras "Gradients do not exist").
    examples = synthetic_pretraining_examples(24)
    one_batch = make_runner(tmp_path / "one", use_next_sentence_label=False)
    pooler = [v.numpy() for v in one_batch.model.encoder.pooler.weights]
    one_batch_weights = trained_weights(one_batch, examples, 8)
    accumulated = make_runner(
        tmp_path / "two", use_next_sentence_label=False, gradient_accumulation_steps=2
    )
    for a, b in zip(trained_weights(accumulated, examples, 8), one_batch_weights, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    for before, after in zip(pooler, accumulated.model.encoder.pooler.weights, strict=True):
        np.testing.assert_array_equal(before, after.numpy())
    assert not [w for w in recwarn if "Gradients do not exist" in str(w.message)]


def test_batch_must_split_into_micro_batches(tmp_path):
    runner = make_runner(tmp_path, gradient_accumulation_steps=3)
    message = (
        r"--train_batch_size=8 does not split into 1 replicas x "
        r"--gradient_accumulation_steps=3 micro-batches"
    )
    with pytest.raises(ValueError, match=message):
        runner.train(dataset_fn_of(synthetic_pretraining_examples(8), 8), 8)


# === Non-finite loss ===
def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path):
    examples = synthetic_pretraining_examples(32)
    examples["masked_lm_weights"][24:] = np.nan  # the 4th batch of 8
    runner = make_runner(tmp_path, num_train_steps=6)
    with pytest.raises(FloatingPointError, match=r"loss is nan at step 4.*ckpt-3"):
        runner.train(dataset_fn_of(examples, 8), 8)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-3")
    assert not tf.io.gfile.glob(str(tmp_path / "ckpt-4*"))
    resumed = make_runner(tmp_path, num_train_steps=6)
    assert resumed.restore_or_initialize()
    assert resumed.step == 3
    assert all(np.isfinite(v.numpy()).all() for v in resumed.model.trainable_variables)


@pytest.fixture(scope="module")
def mlm_only_one_step_run(tmp_path_factory):
    """The output_dir of one step of an MLM-only pretrainer (no next-sentence head): ckpt-1."""
    output_dir = tmp_path_factory.mktemp("mlm_only_one_step")
    first = make_runner(output_dir, num_train_steps=1, use_next_sentence_label=False)
    first.train(dataset_fn_of(synthetic_pretraining_examples(16), 8), 8)
    return output_dir


@pytest.mark.parametrize(
    "other",
    [{"intermediate_size": 48}, {"use_next_sentence_label": True}, {"dtype": "mixed_float16"}],
    ids=["shape", "head", "loss_scale"],
)
def test_an_output_dir_of_another_model_is_named_instead_of_resumed(
    tmp_path, other, mlm_only_one_step_run
):
    """A checkpoint in output_dir whose variables have other shapes, or that lacks some of
    this model's, or whose optimizer is another's (mixed_float16 adds a loss scale: TensorFlow's
    RestoreV2 dtype error), is an error naming output_dir and the checkpoint (not TensorFlow's
    restore traceback)."""
    output_dir = copy_of(mlm_only_one_step_run, tmp_path)
    settings = {"use_next_sentence_label": False, **other}
    with pytest.raises(
        ValueError, match=r"holds a checkpoint of another model or settings.*ckpt-1"
    ):
        make_runner(output_dir, **settings).restore_or_initialize()


def test_an_output_dir_of_another_task_with_a_head_of_the_same_shapes_is_refused(tmp_path):
    """A classifier's 2-label head has a span head's shapes ([hidden, 2], [2]); the runner's
    checkpoint restores variables through the optimizer's list of them, by position, so it
    filled the span head silently (run_squad.py predicted with run_classifier.py's model)."""

    classifier = make_runner(tmp_path, model_with_heads=lambda e: BertClassifier(e, num_classes=2))
    classifier.manager.save()
    with pytest.raises(
        ValueError,
        match=r"ckpt-1 \(its model has classifier, encoder; this run's BertSpanLabeler needs span",
    ):
        make_runner(tmp_path, model_with_heads=BertSpanLabeler).restore_or_initialize()


def test_a_signal_stops_training_at_a_checkpoint_and_the_run_is_not_finished(tmp_path):
    """SIGTERM (a scheduler's preemption) or Ctrl-C: the loop ends, a checkpoint is saved, and
    train() raises TrainingStopped (a script exits 143 / 130), so nothing that follows training
    (export, evaluation) takes the model for a finished one. A rerun resumes."""
    examples = synthetic_pretraining_examples(64)
    runner = make_runner(tmp_path, num_train_steps=8)
    save = runner._save

    def save_then_signal(force=False):
        save(force=force)
        if runner.step == 2 and not force:
            os.kill(os.getpid(), signal.SIGTERM)  # handled in this (the main) thread

    runner._save = save_then_signal
    handler = signal.getsignal(signal.SIGTERM)
    with pytest.raises(
        TrainingStopped, match=r"^stopped by SIGTERM at step 2 of 8, checkpoint .*ckpt-2 saved"
    ) as stopped:
        runner.train(dataset_fn_of(examples, 8), 8)
    assert stopped.value.exit_status == 143
    assert signal.getsignal(signal.SIGTERM) is handler  # the process's handler is back
    resumed = make_runner(tmp_path, num_train_steps=8)
    assert resumed.restore_or_initialize() and resumed.step == 2
    resumed.train(dataset_fn_of(examples, 8), 8)
    assert resumed.step == 8


def test_a_signal_during_a_long_loop_stops_it_after_the_step_under_way(tmp_path, caplog):
    """Python runs a signal handler only between bytecodes of the main thread, which waits in
    the loop's tf.function for the whole loop: the StopSignalWatcher stops the loop at the
    next step instead of at its end (a scheduler's SIGKILL would otherwise lose the loop)."""
    examples = synthetic_pretraining_examples(64)
    runner = make_runner(tmp_path, num_train_steps=60, steps_per_loop=60, save_checkpoints_steps=0)

    def send_sigterm_at_the_fifth_batch(index):
        if int(index) == 4:
            os.kill(os.getpid(), signal.SIGTERM)  # from a tf.data thread, mid-loop
        return index

    def with_signal(index, batch):
        index = tf.py_function(send_sigterm_at_the_fifth_batch, [index], tf.int64)
        index.set_shape([])
        ids = batch["input_word_ids"]
        return {**batch, "input_word_ids": ids + tf.cast(index * 0, ids.dtype)}

    def dataset_fn(input_context):
        return dataset_fn_of(examples, 8)(input_context).enumerate().map(with_signal)

    with (
        caplog.at_level(logging.WARNING, logger="absl"),
        pytest.raises(TrainingStopped, match=r"^stopped by SIGTERM at step \d+ of 60"),
    ):
        runner.train(dataset_fn, 8)
    # The signal handler and the watcher's thread both see the one signal: said once.
    assert caplog.text.count("SIGTERM: saving a checkpoint and stopping") == 1, caplog.text
    # tf.data reads batches ahead of the steps, so the fifth batch is read during step 1 or a
    # little later; the loop of 60 steps ends soon after it.
    assert 1 <= runner.step < 20, runner.step
    assert checkpoint_steps(tmp_path) == [runner.step]


def test_checkpoints_fall_on_multiples_of_save_checkpoints_steps(tmp_path):
    # Loops of 2 steps, a checkpoint every 4: at 4 and 8 (not at the first loop's 2), then the
    # last step.
    runner = make_runner(
        tmp_path,
        num_train_steps=9,
        steps_per_loop=2,
        save_checkpoints_steps=4,
        keep_checkpoint_max=10,
    )
    runner.train(dataset_fn_of(synthetic_pretraining_examples(16), 8), 8)
    assert checkpoint_steps(tmp_path) == [4, 8, 9]


# 7 steps in loops of up to 10, a checkpoint every 3: loops of 3, 3 and 1 step.
EARLY_CHECKPOINTS = dict(num_train_steps=7, steps_per_loop=10, save_checkpoints_steps=3)


@pytest.fixture(scope="module")
def early_checkpoints_run(tmp_path_factory):
    """An uninterrupted run of EARLY_CHECKPOINTS on synthetic_pretraining_examples(16), batch 8,
    shared by the test of its loops and the test that resumes a killed twin of it. Returns
    (output_dir, history, the train loops it made, the values of its final model and
    optimizer variables)."""
    output_dir = tmp_path_factory.mktemp("early_checkpoints")
    runner = make_runner(output_dir, **EARLY_CHECKPOINTS)
    make_train_loop, train_loops = runner._train_loop_fn, []
    runner._train_loop_fn = lambda: train_loops.append(make_train_loop()) or train_loops[-1]
    history = runner.train(dataset_fn_of(synthetic_pretraining_examples(16), 8), 8)
    final = [v.numpy() for v in runner.model.variables + runner.optimizer.variables]
    return output_dir, history, train_loops, final


def test_loops_end_at_checkpoints_closer_than_steps_per_loop(early_checkpoints_run):
    """--save_checkpoints_steps below --iterations_per_loop: a checkpoint still at every
    multiple, as the original saved on CPU/GPU (it kept only the last when loops ran their full
    length, so a run killed before its first loop's end resumed from nothing)."""
    output_dir, history, train_loops, _ = early_checkpoints_run
    assert [step for step, _ in history] == [3, 6, 7]
    assert checkpoint_steps(output_dir) == [3, 6, 7]
    # Loops of 3 and of 1 step run one trace: the step count is a tensor argument.
    assert train_loops[0].experimental_get_tracing_count() == 1


def test_progress_is_reported_every_log_steps_within_long_loops(tmp_path, caplog):
    """--log_steps below --iterations_per_loop: a progress line (and a TensorBoard point) at
    every multiple, as the original's Estimator logged on CPU/GPU; a 1000-step loop reported
    once per 1000 steps."""
    import logging

    runner = make_runner(
        tmp_path, num_train_steps=7, steps_per_loop=10, save_checkpoints_steps=0, log_steps=2
    )
    # The absl logger's own level (other tests set absl's verbosity) as well as the root's.
    with caplog.at_level(logging.INFO), caplog.at_level(logging.INFO, logger="absl"):
        history = runner.train(dataset_fn_of(synthetic_pretraining_examples(16), 8), 8)
    assert [step for step, _ in history] == [2, 4, 6, 7]
    reported = [r.getMessage().split(":")[0] for r in caplog.records if "ETA" in r.getMessage()]
    assert reported == ["step 2/7", "step 4/7", "step 6/7", "step 7/7"]
    assert checkpoint_steps(tmp_path) == [7]
    assert steps_in_next_loop(6, 10, 10, 4, 3) == 2  # the nearer of the two multiples (8, 9)


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (dict(keep_checkpoint_max=0), [1, 2, 3, 4, 5, 6]),
        (dict(save_checkpoints_steps=0, steps_per_loop=2), [6]),
    ],
    ids=["keep-all", "only-the-last"],
)
def test_zero_keeps_every_checkpoint_or_saves_only_the_last(tmp_path, settings, expected):
    """0 as in the original's RunConfig: keep_checkpoint_max=0 keeps all (TensorFlow's
    CheckpointManager refuses a 0), save_checkpoints_steps=0 saves at the end only."""
    runner = make_runner(tmp_path, num_train_steps=6, **settings)
    runner.train(dataset_fn_of(synthetic_pretraining_examples(16), 8), 8)
    assert checkpoint_steps(tmp_path) == expected


def test_a_run_killed_after_an_early_checkpoint_resumes_to_the_uninterrupted_weights(
    tmp_path, early_checkpoints_run
):
    """Killed right after the checkpoint at 3 (before its loop of 10 would have ended), then
    rerun: the final weights and optimizer state equal those of a run never interrupted."""
    examples = synthetic_pretraining_examples(16)
    *_, uninterrupted = early_checkpoints_run

    class Killed(Exception):
        pass

    killed = make_runner(tmp_path / "killed", **EARLY_CHECKPOINTS)
    save = killed._save

    def save_then_die(force=False):
        save(force=force)
        if killed.step == 3:
            raise Killed

    killed._save = save_then_die
    with pytest.raises(Killed):
        killed.train(dataset_fn_of(examples, 8), 8)
    assert checkpoint_steps(tmp_path / "killed") == [3]
    resumed = make_runner(tmp_path / "killed", **EARLY_CHECKPOINTS)
    assert resumed.restore_or_initialize() and resumed.step == 3
    resumed.train(dataset_fn_of(examples, 8), 8)
    final = resumed.model.variables + resumed.optimizer.variables
    for a, value in zip(final, uninterrupted, strict=True):
        np.testing.assert_array_equal(a.numpy(), value, err_msg=a.path)


@pytest.mark.parametrize(
    ("step", "steps_per_loop", "save_checkpoints_steps", "expected"),
    [
        (0, 10, 3, 3),  # to the first checkpoint
        (4, 10, 3, 2),  # from between two checkpoints to the next
        (9, 10, 3, 1),  # to the last step (10), before the checkpoint at 12
        (0, 2, 3, 2),  # loops shorter than the checkpoints' interval run whole
        (0, 20, 0, 10),  # no checkpoints before the last step: to it
    ],
)
def test_a_loop_ends_at_the_next_checkpoint_or_the_last_step(
    step, steps_per_loop, save_checkpoints_steps, expected
):
    assert steps_in_next_loop(step, 10, steps_per_loop, save_checkpoints_steps) == expected


# === Mixed precision and XLA ===
# Loops of 10 steps need a checkpoint every 10 at most (a loop ends at each).
LOOPS_OF_10 = dict(steps_per_loop=10, save_checkpoints_steps=10)


def _overfit_losses(runner, steps):
    examples = synthetic_pretraining_examples(8)
    history = runner.train(dataset_fn_of(examples, 8), 8)
    assert len(history) == steps
    return [loss for _, loss in history]


def test_mixed_bfloat16_trains_float32_variables(tmp_path):
    runner = make_runner(tmp_path, dtype="mixed_bfloat16", num_train_steps=30, **LOOPS_OF_10)
    assert runner.model.encoder.compute_dtype == "bfloat16"
    assert {v.dtype for v in runner.model.trainable_variables} == {"float32"}
    losses = _overfit_losses(runner, 3)
    assert losses[-1] < 0.8 * losses[0], losses


def test_mixed_float16_scales_the_loss_and_trains(tmp_path):
    runner = make_runner(tmp_path, dtype="mixed_float16", num_train_steps=30, **LOOPS_OF_10)
    assert isinstance(runner.optimizer, keras.optimizers.LossScaleOptimizer)
    assert {v.dtype for v in runner.model.trainable_variables} == {"float32"}
    losses = _overfit_losses(runner, 3)
    assert losses[-1] < 0.8 * losses[0], losses
    assert all(np.isfinite(v.numpy()).all() for v in runner.model.trainable_variables)
    # The loss scale is part of the checkpoint.
    resumed = make_runner(tmp_path, dtype="mixed_float16", num_train_steps=30)
    resumed.restore_or_initialize()
    assert float(resumed.optimizer.dynamic_scale) == float(runner.optimizer.dynamic_scale)


def test_mixed_float16_clips_the_unscaled_gradient(tmp_path):
    """With plain SGD the update is lr * clipped gradient: clipping the scaled gradient at 1e-3
    would make the float16 update 2**15 times smaller than the float32 one."""

    def sgd():
        return keras.optimizers.SGD(learning_rate=1.0, global_clipnorm=1e-3)

    examples = synthetic_pretraining_examples(8)
    updates = {}
    for dtype in ("float32", "mixed_float16"):
        runner = make_runner(tmp_path / dtype, dtype=dtype, optimizer_fn=sgd, num_train_steps=1)
        before = [v.numpy() for v in runner.model.trainable_variables]
        after = trained_weights(runner, examples, 8)
        updates[dtype] = np.concatenate(
            [(a - b).ravel() for a, b in zip(after, before, strict=True)]
        )
    norm = np.linalg.norm(updates["float32"])
    np.testing.assert_allclose(norm, 1e-3, rtol=1e-3)
    np.testing.assert_allclose(np.linalg.norm(updates["mixed_float16"]), norm, rtol=2e-2)
    assert np.dot(updates["mixed_float16"], updates["float32"]) / norm**2 > 0.98


def test_xla_step_trains(tmp_path):
    runner = make_runner(tmp_path, num_train_steps=20, enable_xla=True, **LOOPS_OF_10)
    losses = _overfit_losses(runner, 2)
    assert losses[-1] < 0.9 * losses[0], losses
    assert runner.step == 20
