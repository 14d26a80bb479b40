"""The one driver: runs any Task's train / evaluate / predict / export on the runner."""

from __future__ import annotations

import contextlib
import os
import time

import keras
import tensorflow as tf
from absl import logging

from official_bert.checkpoints.loading import load_bert_weights
from official_bert.checkpoints.variable_table import CheckpointMismatchError
from official_bert.file_system import check_folder_can_be_made, is_local
from official_bert.kernels import fast_kernels
from official_bert.tasks.task import Task
from official_bert.tasks.trained_on import (
    check_resumed_labels,
    check_resumed_task_order,
    record_training,
    warn_if_resumed_on_other_data,
)
from official_bert.training.distribution import create_strategy
from official_bert.training.output_dir_lock import hold_output_dir
from official_bert.training.runner import Runner


def start_run(options, tpu_paths: dict[str, str | None]) -> tf.distribute.Strategy:
    """Creates the strategy (the TPU's host paths checked first), output_dir, and seeds Keras
    (initialization, dropout, input order)."""
    strategy = create_strategy(
        options.distribution_strategy,
        options.tpu,
        tpu_paths,
        zone=options.tpu_zone,
        project=options.gcp_project,
        job_name=options.tpu_job_name,
    )
    tf.io.gfile.makedirs(options.output_dir)
    if options.seed is not None:
        keras.utils.set_random_seed(options.seed)
    return strategy


def create_runner(task: Task) -> Runner:
    """The task's Runner: its model, optimizer and loss under the task's strategy, with the
    options' runner settings as they are."""
    return Runner(
        task.strategy,
        task.build_model,
        task.create_optimizer,
        task.loss_fn(),
        task.options,
        num_train_steps=task.num_train_steps,
        loss_denominators_fn=task.loss_denominators_fn(),
    )


def run_task(task: Task) -> dict:
    """Runs `task` as its options ask: prepare the data, build (or resume) the model, train,
    then export, evaluate and predict.

    Returns:
      {"history": [(step, loss)], "train_seconds", the task's after_training entries,
       "export_dir", "eval", "predictions"} (the keys that apply).
    """
    output_dir = task.options.output_dir
    # Local only: a gs:// output_dir is checked where the run starts (a TPU's paths first).
    if output_dir and is_local(output_dir):
        check_local_output_dir(output_dir)
    task.validate()
    # run_multitask.py's tasks named in another order than the checkpoints were trained with:
    # said before any work (heads of the same shapes would restore silently, those of other
    # shapes as "another model").
    latest = tf.train.latest_checkpoint(output_dir) if output_dir else None
    if latest:
        check_resumed_task_order(output_dir, latest, task.options)
    # One run at a time writes output_dir; the workers of a multi-worker run share it.
    shared = task.options.distribution_strategy == "multi_worker_mirrored"
    lock = contextlib.nullcontext() if shared or not output_dir else hold_output_dir(output_dir)
    # The layers and losses built in this run take the speed paths when the options say so.
    with lock, fast_kernels(task.options.fast_kernels):
        return _run(task)


def check_local_output_dir(output_dir: str) -> None:
    """Raises NotADirectoryError / PermissionError / OSError naming --output_dir where a local one
    is a file, is a folder this user may not write, or cannot be made."""
    if os.path.isfile(output_dir):
        raise NotADirectoryError(f"--output_dir={output_dir} is a file; expected a folder")
    if os.path.isdir(output_dir) and not os.access(output_dir, os.W_OK | os.X_OK):
        raise PermissionError(f"--output_dir={output_dir}: this user may not write there")
    # A folder still to make (or the folder a symbolic link names): in the nearest one that
    # exists (a read-only file system, a folder of another user's, /proc), makedirs would fail
    # with a traceback.
    check_folder_can_be_made(os.path.realpath(output_dir), f"--output_dir={output_dir}")


def read_original_fine_tuned(model: keras.Model, path: str) -> None:
    """Reads a checkpoint the original's Estimator wrote (TF1 name-based layout: bert/...,
    output_weights or cls/squad/..., its optimizer's slots left aside) into `model`, heads
    included: one the checkpoint lacks (another task's) is a CheckpointMismatchError, as the
    original's restore fails on a key not found, said in one line."""
    try:
        load_bert_weights(model, path, require_heads=True)
    except CheckpointMismatchError as error:
        raise CheckpointMismatchError(
            f"--output_dir holds {path}, a checkpoint in the original's layout of another model, "
            f"which this run would restore: {' '.join(str(error).split())}; use another "
            "--output_dir"
        ) from None


def _run(task: Task) -> dict:
    task.prepare(start_run(task.options, task.tpu_paths()))
    runner = create_runner(task)
    output_dir = task.options.output_dir
    # As the original's Estimator, a run that does not train restores output_dir's checkpoint
    # even where that run trained into it (the original's README's predict commands).
    read_original_layout = None if task.do_train else read_original_fine_tuned
    resumed = runner.restore_or_initialize(task.initialize, read_original_layout)
    # Only a run that trains on: evaluating or predicting with the trained model on other data
    # is meant (the original's MNLI-MM eval on MNLI's output_dir).
    labels = getattr(task, "labels", None)
    if resumed:
        check_resumed_labels(output_dir, runner.last_finite_checkpoint, labels)
    if resumed and task.do_train:
        warn_if_resumed_on_other_data(output_dir, runner.last_finite_checkpoint, task.options)
    results: dict = {"history": []}
    if task.do_train:
        if runner.is_chief:
            record_training(output_dir, task.options, resumed=resumed, labels=labels)
        start = time.time()
        results["history"] = runner.train(task.train_dataset, task.train_batch_size)
        results["train_seconds"] = time.time() - start
        results.update(task.after_training(runner))
    # Without training, only an export folder the options name explicitly is written: the
    # model restored from output_dir's checkpoint, or from --init_checkpoint.
    if task.do_train or task.export_requested:
        export_dir = task.export(runner)
        if export_dir:
            results["export_dir"] = export_dir
            logging.info("Exported the serving SavedModel to %s", export_dir)
    # Evaluation and prediction run outside the strategy on the whole data (prediction.predict,
    # Runner.evaluate): under multi-worker the chief alone does them and writes their files.
    if not runner.is_chief and (task.do_eval or task.do_predict):
        logging.info("Not the chief worker: the chief evaluates, predicts and writes the results")
    else:
        if task.do_eval:
            results.update(task.evaluate(runner))
        if task.do_predict:
            start = time.time()
            results.update(task.predict(runner))
            results["predict_seconds"] = time.time() - start
    keras.backend.clear_session()
    return results
