"""The training runner every training script uses: a custom loop under a tf.distribute strategy.

Custom rather than `model.fit`: Keras 3.15's fit fails under MirroredStrategy with
steps_per_execution > 1 (keras-team/keras#19246) and under MultiWorkerMirroredStrategy
(keras#20585), while `strategy.run` works for both.
"""

from __future__ import annotations

import contextlib
import glob
import logging as logging_module
import numbers
import os
import re
import shutil
import signal
import threading
import time
from collections.abc import Callable

import keras
import tensorflow as tf
from absl import logging

from official_bert.checkpoints.damaged_checkpoint import (
    DamagedCheckpointError,
    damaged_checkpoint_named,
)
from official_bert.checkpoints.object_checkpoint import (
    checkpoint_model_parts,
    is_object_checkpoint,
    model_parts,
)
from official_bert.data.record_files import records_named_on_error
from official_bert.kernels.frozen_weights import refuse_frozen_weight_products
from official_bert.training.optimization import AdamWeightDecay
from official_bert.training.stop_signal_watcher import StopSignalWatcher
from official_bert.training.training_options import TrainingOptions


def _is_chief(strategy: tf.distribute.Strategy) -> bool:
    """Whether this process writes the checkpoints and summaries (always, but in multi-worker
    training only the "chief", or worker 0 of a cluster without one)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    if resolver.task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief


@tf.autograph.experimental.do_not_convert  # straight-line code
def _global_norm_clip_factor(gradients: list, clip_norm: float) -> tf.Tensor:
    """The scalar tf.clip_by_global_norm(gradients, clip_norm) multiplies every gradient by:
    clip_norm / max(global norm, clip_norm), and NaN where the norm is not finite (so that a
    step with an inf or NaN gradient gives NaN weights, as the clipped gradients would).
    Computed here because TensorFlow returns only the clipped gradients, not the factor."""
    norm = tf.linalg.global_norm(gradients)
    factor = clip_norm * tf.minimum(1.0 / norm, 1.0 / clip_norm)
    return factor + (norm - norm)


def steps_in_next_loop(
    step: int, num_train_steps: int, steps_per_loop: int, *intervals: int
) -> int:
    """The number of steps the loop starting after `step` runs: steps_per_loop, cut short so
    that it ends at the next multiple of each of `intervals` (save_checkpoints_steps, where
    the runner saves; log_steps, where it reports) and at num_train_steps. An interval < 1
    sets no multiples."""
    steps = min(steps_per_loop, num_train_steps - step)
    for interval in intervals:
        if interval >= 1:
            steps = min(steps, interval - step % interval)
    return steps


def _uses_float16(model: keras.Model) -> bool:
    """Whether any layer computes in float16 (then the loss needs scaling)."""
    return any(layer.dtype_policy.compute_dtype == "float16" for layer in model._flatten_layers())


class TrainingStopped(Exception):
    """Training stopped early at a signal (SIGTERM from a scheduler, Ctrl-C), after saving a
    checkpoint: the run is not finished, so nothing after training (export, evaluation,
    prediction) runs, and a script exits with 128 + the signal's number, as a process killed
    by it would. The same command resumes from the checkpoint."""

    def __init__(self, signum: int, step: int, num_train_steps: int, checkpoint: str | None):
        self.exit_status = 128 + signum
        super().__init__(
            f"stopped by {signal.Signals(signum).name} at step {step} of {num_train_steps}, "
            f"checkpoint {checkpoint} saved; run the same command again to resume"
        )


class Runner:
    """Trains and evaluates a Keras model with a custom loop.

    model_fn() -> keras.Model, optimizer_fn() -> keras optimizer: built under the strategy scope.
    loss_fn(outputs, batch) -> float32 scalar: the loss of one (micro-)batch on one replica, a
      mean over it. The runner averages such losses over replicas and micro-batches.
    loss_denominators_fn(batch) -> {name: float32 scalar}, optional: for a loss that is a sum of
      ratios `numerator / denominator` whose denominators depend on the batch alone (the MLM
      loss divides by the sum of masked_lm_weights). The runner sums them over the whole update
      batch (all micro-batches, all replicas) and calls `loss_fn(outputs, batch, denominators=...)`,
      which must then return this (micro-)batch's share of the whole batch's loss; the shares are
      summed. Only that makes k micro-batches or n replicas give exactly the update of one
      device on the whole batch when the normalization varies between parts.
    train_dataset_fn(input_context) / eval_dataset_fn(input_context) -> tf.data.Dataset of dict
      batches (the model's inputs and labels); a training batch is one update's batch.
    settings: the script's options as they are (a TrainingOptions): output_dir, steps_per_loop,
      save_checkpoints_steps, keep_checkpoint_max, log_steps, gradient_accumulation_steps (an
      update's batch split into k micro-batches whose gradients are summed: the memory of one
      micro-batch, the update of the whole batch), enable_xla (the train step compiled with XLA).
    num_train_steps: optimizer updates to train (a task computes it, e.g. from epochs).

    Checkpoints (model, optimizer and its step, dropout random states, the number of training
    batches read) go to output_dir at every multiple of save_checkpoints_steps and at the end
    (save_checkpoints_steps < 1: at the end only), keep_checkpoint_max of them (0: all); a loop
    of steps_per_loop ends early at each multiple (steps_in_next_loop), as the original saved
    on CPU/GPU whatever iterations_per_loop was (on a TPU it saved at loop ends only; here a
    TPU too ends a loop at each checkpoint, a host round trip beside the checkpoint's own). A
    new Runner on the same output_dir resumes from the latest one, skipping the batches already
    read. SIGTERM/SIGINT end training after the step under way (StopSignalWatcher: the loop
    reads a stop flag before each step) with a checkpoint. A progress line
    (loss, learning rate, rate, ETA) every log_steps, where loops end too (on a TPU: at the
    loop ends past each multiple). TensorBoard summaries (one point per loop) go to
    output_dir/train. A non-finite loss, or non-finite weights or optimizer slots at a save,
    raise FloatingPointError before anything of that loop is saved: no checkpoint holds
    non-finite values, and a resumed run passes over any (of an older version) that does. A
    record error while reading names the file (data.record_files.records_named_on_error). Under
    a float16 policy the optimizer is wrapped in keras.optimizers.LossScaleOptimizer (dynamic
    loss scaling).

    Multi-worker: every worker must save (saving is collective); only the chief writes to
    output_dir, the others to a temporary folder that is removed again (the tf.distribute
    pattern), and only the chief writes summaries.
    """

    def __init__(
        self,
        strategy: tf.distribute.Strategy,
        model_fn: Callable,
        optimizer_fn: Callable,
        loss_fn: Callable,
        settings: TrainingOptions,
        *,
        num_train_steps: int,
        loss_denominators_fn: Callable | None = None,
    ):
        self.strategy = strategy
        self.settings = settings
        self.num_train_steps = num_train_steps
        self.loss_fn = loss_fn
        self.loss_denominators_fn = loss_denominators_fn
        self.is_chief = _is_chief(strategy)
        with strategy.scope():
            self.model = model_fn()
            optimizer = optimizer_fn()
            # The runner clips the global gradient itself (see _train_loop_fn).
            self.clip_norm = optimizer.global_clipnorm
            optimizer.global_clipnorm = None
            if _uses_float16(self.model):
                optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
            self.optimizer = optimizer
            self.optimizer.build(self.model.trainable_variables)
        self.loss_scaled = isinstance(self.optimizer, keras.optimizers.LossScaleOptimizer)
        # Keras leaves the dropout layers' random-generator states out of the model's checkpoint
        # dependencies; saved beside it, a resumed run draws the masks the interrupted one would.
        self._random_states = [
            v.value for v in self.model.variables if v.path.endswith("seed_generator_state")
        ]
        # Batches read from each input pipeline; more than the step when a float16 update was
        # skipped for a non-finite gradient.
        self._batches_read = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.checkpoint = tf.train.Checkpoint(
            model=self.model,
            optimizer=self.optimizer,
            random_states=self._random_states,
            train_batches_read=self._batches_read,
        )
        # Restores read the chief's checkpoints on every worker.
        self.manager = tf.train.CheckpointManager(
            self.checkpoint,
            settings.output_dir,
            # 0 keeps all, as the original's RunConfig (CheckpointManager wants None for it).
            max_to_keep=settings.keep_checkpoint_max or None,
            step_counter=self.optimizer.iterations,
        )
        self._write_manager = self.manager
        if not self.is_chief:
            resolver = strategy.cluster_resolver
            self._write_manager = tf.train.CheckpointManager(
                self.checkpoint,
                os.path.join(settings.output_dir, f".tmp_{resolver.task_type}_{resolver.task_id}"),
                max_to_keep=1,
                step_counter=self.optimizer.iterations,
            )
        self._stop_requested = 0  # the number of the signal that asked training to stop
        # The signal handler and the StopSignalWatcher's thread both note one signal: the first
        # to take the lock says so. Reentrant: the handler runs in the main thread, maybe while
        # that thread holds it.
        self._stop_lock = threading.RLock()
        self._previous_handlers: dict = {}
        # Read by the training loop before each step: a signal sets it (StopSignalWatcher), so
        # a loop of many steps ends at the next one instead of at its last.
        self._stop_flag = tf.Variable(False, trainable=False, name="stop_requested")

    # The newest checkpoint known to hold only finite values (where a failed run points to).
    last_finite_checkpoint: str | None = None
    _finite_flags: Callable | None = None

    @property
    def step(self) -> int:
        """Optimizer updates done (micro-batches are not counted)."""
        return int(self.optimizer.iterations.numpy())

    def non_finite_variables(self) -> list[str]:
        """Paths of the model's and optimizer's float variables holding NaN or Inf (one device
        read for all of them)."""
        if self._finite_flags is None:
            variables = [
                v
                for v in self.model.variables + self.optimizer.variables
                if tf.as_dtype(v.dtype).is_floating
            ]
            self._checked_variables = variables
            self._finite_flags = tf.function(
                lambda: tf.stack([tf.reduce_all(tf.math.is_finite(v)) for v in variables]),
                autograph=False,  # a Python loop over variables: nothing to convert
            )
        flags = self._finite_flags().numpy()
        return [v.path for v, ok in zip(self._checked_variables, flags, strict=True) if not ok]

    def _last_good(self) -> str:
        if self.last_finite_checkpoint is None:
            return "none: no checkpoint was written before"
        return f"{self.last_finite_checkpoint} (a rerun resumes from it)"

    def _another_model(self, path: str, detail: str) -> ValueError:
        return ValueError(
            f"--output_dir {self.settings.output_dir} holds a checkpoint of another model or "
            f"settings, which this run would resume from: {path} ({detail}); use another "
            "--output_dir, or delete its checkpoints"
        )

    def _read_checkpoint(self, path: str) -> None:
        # Checked before reading: the model's variables are restored through the optimizer's
        # list of them, by position, so another task's head of the same shapes would fill it.
        saved_parts = checkpoint_model_parts(path)
        missing = model_parts(self.model) - saved_parts
        if missing:
            raise self._another_model(
                path,
                f"its model has {', '.join(sorted(saved_parts))}; this run's "
                f"{type(self.model).__name__} needs {', '.join(sorted(missing))} too: another "
                "task's?",
            )
        checkpoint = self.checkpoint
        saved_states = sum(
            name.startswith("random_states/") for name, _ in tf.train.list_variables(path)
        )
        if saved_states != len(self._random_states):
            # Other dropout settings (a config with dropout 0 makes no dropout layers, so no
            # random states): the weights and the optimizer are read, the masks start afresh.
            logging.info(
                "%s holds %d dropout random states, this model has %d (other dropout "
                "settings): the dropout masks start afresh",
                path,
                saved_states,
                len(self._random_states),
            )
            checkpoint = tf.train.Checkpoint(
                model=self.model,
                optimizer=self.optimizer,
                train_batches_read=self._batches_read,
            )
        mismatch = None
        try:
            with damaged_checkpoint_named(path):
                checkpoint.read(path).assert_existing_objects_matched().expect_partial()
        except DamagedCheckpointError:
            raise
        # AssertionError: a variable the checkpoint lacks; ValueError: one of another shape
        # (another number of labels, another model size), TensorFlow's "Received incompatible
        # tensor with shape ...".
        except (AssertionError, ValueError) as error:
            mismatch = f"first mismatch: {str(error)[:300]}"
        # RestoreV2's "expected dtype int64 does not equal original dtype float": the optimizer's
        # variables, read by position, are another optimizer's (mixed_float16's loss scale adds
        # some: a float32 run resumed with --dtype=mixed_float16, or the reverse).
        except tf.errors.InvalidArgumentError as error:
            # Without TensorFlow's "{{function_node ...}}" prefix.
            first_line = " ".join(re.sub(r"\{\{.*?\}\}", "", error.message).split())[:300]
            mismatch = (
                f"first mismatch: {first_line}; another --dtype (mixed_float16's loss scale) or "
                "optimizer than the run that wrote it?"
            )
        if mismatch:
            # The failed read left restorations pending on the model's and optimizer's objects,
            # which log a warning per value when they are freed (a hundred lines after the one
            # that says why): this run's objects are done with, so those warnings are dropped.
            _drop_unrestored_value_warnings()
            raise self._another_model(path, mismatch)

    def _applied_learning_rate(self) -> float:
        """The learning rate of the last update. Keras's optimizer.learning_rate evaluates a
        schedule at the update counter, which the update already moved on: the next step's
        rate (at the end of warm-up or decay, another number than the one applied)."""
        optimizer = getattr(self.optimizer, "inner_optimizer", self.optimizer)
        # Keras keeps the schedule itself only as this attribute (the property evaluates it).
        schedule = getattr(optimizer, "_learning_rate", None)
        if isinstance(schedule, keras.optimizers.schedules.LearningRateSchedule):
            return float(schedule(optimizer.iterations - 1))
        return float(optimizer.learning_rate)

    def _remove_cut_short_saves(self) -> None:
        output_dir = self.settings.output_dir
        # The chief alone writes output_dir's checkpoints, and none is being saved at the start;
        # on scheme:// paths a folder is a prefix, left alone.
        if not self.is_chief or "://" in output_dir:
            return
        staged = glob.glob(os.path.join(glob.escape(output_dir), "ckpt-*_temp"))
        for folder in staged:
            shutil.rmtree(folder, ignore_errors=True)
        if staged:
            logging.info("Removed what a save cut short by a kill left: %s", ", ".join(staged))

    def _located(self, path: str) -> str | None:
        """`path`, a checkpoint the state file of output_dir names, where its files are: there,
        or in output_dir under the same name when the state file names another folder (an
        output_dir copied or moved from where it was written: TF1's Saver wrote absolute paths,
        as the original's runs hold them); None, with a warning, when neither has them (deleted
        files), so that the run goes on from the checkpoints that remain."""
        if tf.io.gfile.exists(path + ".index"):
            return path
        here = os.path.join(self.settings.output_dir, os.path.basename(path))
        if tf.io.gfile.exists(here + ".index"):
            logging.info(
                "The checkpoint state of %s names %s; reading %s",
                self.settings.output_dir,
                path,
                here,
            )
            return here
        logging.warning(
            "The checkpoint state of %s names %s, whose files are gone; passed over",
            self.settings.output_dir,
            path,
        )
        return None

    def _read_original_layout(self, path: str, read_original_layout: Callable | None) -> None:
        """Reads `path`, a checkpoint of the original's layout (TF1 name-based, as its Estimator
        wrote into model_dir), with read_original_layout(model, path); the step from its
        global_step. Without a reader (a run that trains: the checkpoint has none of this
        runner's optimizer state), ValueError."""
        if read_original_layout is None:
            raise ValueError(
                f"--output_dir {self.settings.output_dir} holds {path}, a checkpoint in the "
                "original's layout (TF1, name-based), which a run that trains does not resume "
                "(it holds no optimizer state of this runner); evaluate or predict with it "
                f"without --do_train, or train in another --output_dir with --init_checkpoint={path}"
            )
        read_original_layout(self.model, path)
        reader = tf.train.load_checkpoint(path)
        if reader.has_tensor("global_step"):
            self.optimizer.iterations.assign(int(reader.get_tensor("global_step")))
        logging.info(
            "Restored %s from %s, a checkpoint in the original's layout (TF1 Estimator, "
            "name-based) at step %d; --init_checkpoint is not read",
            type(self.model).__name__,
            path,
            self.step,
        )

    def restore_or_initialize(
        self, initialize: Callable | None = None, read_original_layout: Callable | None = None
    ) -> bool:
        """Restores the latest checkpoint of output_dir holding only finite values (True), or
        calls initialize(model).

        A checkpoint of another model (one that lacks a part of this one: another task's head)
        is a ValueError. One in the original's layout (TF1, name-based: the original's Estimator
        trained into this output_dir) is read by read_original_layout(model, path) (True), as
        the original restores model_dir's checkpoint; without that reader, ValueError.

        A checkpoint with NaN or Inf (written before saves were guarded) is passed over, with a
        warning naming it and the one resumed from; when every checkpoint has them,
        FloatingPointError. train() then skips the training batches that the restored run had
        read.

        The staging folders (`ckpt-N_temp`) of a save that a kill cut short are removed first:
        tf.train.CheckpointManager never reads or removes them, and each may hold a whole
        checkpoint with its optimizer slots.
        """
        self._remove_cut_short_saves()
        candidates = list(reversed(self.manager.checkpoints))
        latest = self.manager.latest_checkpoint
        if latest and latest not in candidates:
            candidates.insert(0, latest)
        candidates = [located for path in candidates if (located := self._located(path))]
        poisoned = []
        for path in candidates:
            if not is_object_checkpoint(path):
                self._read_original_layout(path, read_original_layout)
                self.last_finite_checkpoint = path
                return True
            self._read_checkpoint(path)
            bad = self.non_finite_variables()
            if not bad:
                if poisoned:
                    logging.warning(
                        "Passed over %s (non-finite values); resuming from %s, the last "
                        "checkpoint with finite values",
                        ", ".join(poisoned),
                        path,
                    )
                self.last_finite_checkpoint = path
                logging.info("Resumed from %s at step %d", path, self.step)
                return True
            logging.warning(
                "%s holds non-finite values in %d of %d variables (first: %s)",
                path,
                len(bad),
                len(self._checked_variables),
                bad[0],
            )
            poisoned.append(path)
        if poisoned:
            raise FloatingPointError(
                f"every checkpoint in {self.settings.output_dir} holds non-finite values "
                f"({', '.join(poisoned)}): the run diverged before its first checkpoint; use "
                "another output_dir (or delete them) and lower --learning_rate"
            )
        if initialize is not None:
            initialize(self.model)
        return False

    def _save(self, force: bool = False) -> None:
        # Checked on every process before the (collective) save, so none of them writes.
        bad = self.non_finite_variables()
        if bad:
            raise FloatingPointError(
                f"non-finite values after step {self.step} in {len(bad)} of "
                f"{len(self._checked_variables)} variables (first: {bad[0]}); not saved. The "
                f"last good checkpoint: {self._last_good()}; lower --learning_rate"
            )
        # At each multiple of save_checkpoints_steps, where loops end (steps_in_next_loop), as
        # the original's saver; CheckpointManager's own interval would count from its first save.
        interval = self.settings.save_checkpoints_steps
        if force:
            # At the end of training, unless that step's checkpoint was just written.
            if self._saved_in_this_run and self._last_saved_step == self.step:
                return
        elif interval < 1 or self.step // interval <= self._last_saved_step // interval:
            return
        saved = self._write_manager.save(
            checkpoint_number=self.optimizer.iterations, check_interval=False
        )
        self._last_saved_step = self.step
        self._saved_in_this_run = True
        if saved and self.is_chief:
            self.last_finite_checkpoint = saved
        if saved and not self.is_chief:
            tf.io.gfile.rmtree(self._write_manager.directory)

    # === Training ===
    def _train_loop_fn(self):
        strategy, model, optimizer = self.strategy, self.model, self.optimizer
        loss_fn, denominators_fn = self.loss_fn, self.loss_denominators_fn
        clip_norm, loss_scaled = self.clip_norm, self.loss_scaled
        replicas = strategy.num_replicas_in_sync
        micro_batches = self.settings.gradient_accumulation_steps
        variables = model.trainable_variables
        # AdamWeightDecay takes the clip as a factor on the gradients it applies (one replica:
        # it holds the factor while Keras merges the replicas' calls).
        fold_clip = isinstance(optimizer, AdamWeightDecay) and replicas == 1
        # Filled while tracing: the indices of variables the loss does not reach (the pooler
        # when there is no next-sentence head, for SQuAD or tagging). They are left out of the
        # update, as the original optimizer skips None gradients (no weight decay on them).
        unreached: set[int] = set()

        # Python branches on static things only: not converted by AutoGraph (faster tracing).
        @tf.autograph.experimental.do_not_convert
        def gradients_of(batch, denominators):
            """(gradients, loss share) of one micro-batch; the shares of all micro-batches and
            replicas sum to the update's loss, their gradients to its gradient. Unreached
            variables get zeros (sums need tensors), dropped before the update."""
            with tf.GradientTape() as tape:
                outputs = model(batch, training=True)
                if denominators is None:
                    share = loss_fn(outputs, batch) / (replicas * micro_batches)
                else:
                    share = loss_fn(outputs, batch, denominators=denominators)
                # Under float16 the loss is scaled so small gradients do not flush to zero.
                scaled = optimizer.scale_loss(share) if loss_scaled else share
            gradients = []
            for index, gradient in enumerate(tape.gradient(scaled, variables)):
                if gradient is None:
                    unreached.add(index)
                    gradient = tf.zeros(variables[index].shape, variables[index].dtype)
                elif isinstance(gradient, tf.IndexedSlices):
                    # Embedding gradients; sums and updates want dense tensors.
                    gradient = tf.convert_to_tensor(gradient)
                gradients.append(gradient)
            return gradients, share

        def step_fn(batch):
            denominators = None
            if denominators_fn is not None:
                denominators = denominators_fn(batch)
                if replicas > 1:
                    context = tf.distribute.get_replica_context()
                    denominators = context.all_reduce(tf.distribute.ReduceOp.SUM, denominators)
            if micro_batches == 1:
                gradients, loss = gradients_of(batch, denominators)
            else:
                # [batch, ...] -> [k, batch / k, ...]; micro-batch j is row j.
                split = tf.nest.map_structure(
                    lambda t: tf.reshape(t, tf.concat([[micro_batches, -1], tf.shape(t)[1:]], 0)),
                    batch,
                )
                gradients = [tf.zeros(v.shape, v.dtype) for v in variables]
                loss = tf.constant(0.0)
                for j in tf.range(micro_batches):
                    micro = tf.nest.map_structure(lambda t, j=j: t[j], split)
                    micro_gradients, share = gradients_of(micro, denominators)
                    gradients = [a + g for a, g in zip(gradients, micro_gradients, strict=True)]
                    loss += share
            reached = [i for i in range(len(variables)) if i not in unreached]
            gradients = [gradients[i] for i in reached]
            if replicas > 1:
                # Keras clips each replica's part before summing them; clip the global
                # gradient instead, as one device would, then hand Keras parts that sum to it.
                context = tf.distribute.get_replica_context()
                gradients = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)
            updated = [variables[i] for i in reached]
            if clip_norm and fold_clip:
                # The clip's factor goes to the optimizer, which multiplies each gradient by it
                # as it applies it: one pass over the gradients fewer.
                scale = _global_norm_clip_factor(gradients, clip_norm)
                optimizer.apply_gradients(zip(gradients, updated, strict=True), scale)
                return loss
            if clip_norm:
                # Scaled gradients clipped at clip_norm * scale = unscaled ones clipped at
                # clip_norm (the LossScaleOptimizer divides by the scale when it applies them).
                limit = clip_norm * optimizer.dynamic_scale if loss_scaled else clip_norm
                gradients, _ = tf.clip_by_global_norm(gradients, limit)
            if replicas > 1:
                gradients = [g / replicas for g in gradients]
            optimizer.apply_gradients(zip(gradients, updated, strict=True))
            return loss

        if self.settings.enable_xla:
            # The step, not the loop: reading the iterator cannot be compiled.
            step_fn = tf.function(step_fn, jit_compile=True)

        batches_read = self._batches_read
        stop_flag = self._stop_flag

        @tf.function
        def train_loop(iterator, num_steps):
            total = tf.constant(0.0)
            done = tf.constant(0)
            for _ in tf.range(num_steps):
                if stop_flag:
                    break
                shares = strategy.run(step_fn, args=(next(iterator),))
                batches_read.assign_add(1)
                total += strategy.reduce(tf.distribute.ReduceOp.SUM, shares, axis=None)
                done += 1
            return total / tf.cast(tf.maximum(done, 1), tf.float32)

        return train_loop

    def _note_stop(self, signum: int) -> None:
        """Asks training to stop after the step under way (from the signal handler, or at
        once from the StopSignalWatcher's thread)."""
        with self._stop_lock:
            first = not self._stop_requested
            self._stop_requested = self._stop_requested or signum
        if first:
            logging.warning(
                "%s: saving a checkpoint and stopping after this step (again to stop at once)",
                signal.Signals(signum).name,
            )
        self._stop_flag.assign(True)

    def _request_stop(self, signum, frame):
        self._note_stop(signum)
        # A second signal acts as it would without training (Ctrl-C: KeyboardInterrupt).
        signal.signal(signum, self._previous_handlers.get(signum, signal.SIG_DFL))

    def train(self, train_dataset_fn: Callable, global_batch_size: int) -> list[tuple[int, float]]:
        """Trains up to num_train_steps updates of global_batch_size examples (the dataset's
        batches); returns (step, mean loss) per loop.

        ValueError, naming --train_batch_size and --gradient_accumulation_steps (global_batch_size
        is the task's train_batch_size), where the batch does not split into the replicas times
        the micro-batches. RuntimeError, before anything runs, where the environment asks oneDNN to keep the first
        weights it sees (kernels.frozen_weights): training would compute with stale ones."""
        refuse_frozen_weight_products("training")
        settings = self.settings
        parts = self.strategy.num_replicas_in_sync * settings.gradient_accumulation_steps
        if global_batch_size % parts:
            # The driver passes the task's --train_batch_size; the settings are the options.
            raise ValueError(
                f"--train_batch_size={global_batch_size} does not split into "
                f"{self.strategy.num_replicas_in_sync} replicas x "
                f"--gradient_accumulation_steps={settings.gradient_accumulation_steps} "
                "micro-batches: make it a multiple of their product"
            )
        # A resumed run goes on with the batches the interrupted one had not reached: every step
        # reads one batch of each input pipeline for each of its replicas (MirroredStrategy
        # feeds all local devices from one pipeline, a TPU host its cores), so skip those read
        # before the checkpoint (exact when the dataset's order is seeded). Not the iterator
        # itself in the checkpoint: tf.distribute's iterators are not trackable (TF 2.21).
        steps_read = int(self._batches_read.numpy())

        def dataset_fn(input_context):
            dataset = train_dataset_fn(input_context)
            if not steps_read:
                return dataset
            replicas_per_pipeline = max(
                input_context.num_replicas_in_sync // input_context.num_input_pipelines, 1
            )
            return dataset.skip(steps_read * replicas_per_pipeline)

        iterator = iter(self.strategy.distribute_datasets_from_function(dataset_fn))
        train_loop = self._train_loop_fn()
        writer = (
            tf.summary.create_file_writer(os.path.join(settings.output_dir, "train"))
            if self.is_chief
            else tf.summary.create_noop_writer()
        )
        self._stop_requested = 0
        self._stop_flag.assign(False)
        self._last_saved_step = self.step
        self._saved_in_this_run = False
        # Signals reach the main thread only; a Runner trained in another thread (a notebook's
        # background job) keeps the process's handlers.
        handles_signals = threading.current_thread() is threading.main_thread()
        stop_signals = (signal.SIGTERM, signal.SIGINT) if handles_signals else ()
        self._previous_handlers = {
            sig: signal.signal(sig, self._request_stop) for sig in stop_signals
        }
        watching = contextlib.ExitStack()
        # Multi-worker steps are collective: a worker must not leave a loop on its own.
        if stop_signals and not isinstance(
            self.strategy, tf.distribute.MultiWorkerMirroredStrategy
        ):
            watching.enter_context(StopSignalWatcher(stop_signals, self._note_stop))
        history = []
        # Progress lines and TensorBoard points every log_steps, as the original's Estimator
        # logged on CPU/GPU whatever iterations_per_loop was: a loop ends there too. Not on a
        # TPU, where a loop's end is a host round trip that iterations_per_loop is set to
        # spare (the original reported at loop ends there).
        on_tpu = isinstance(self.strategy, tf.distribute.TPUStrategy)
        log_interval = 0 if on_tpu else settings.log_steps
        start_step, start_time = self.step, time.time()
        last_log_step, last_log_time = start_step, start_time
        try:
            while self.step < self.num_train_steps and not self._stop_requested:
                step_before = self.step
                steps = steps_in_next_loop(
                    self.step,
                    self.num_train_steps,
                    settings.steps_per_loop,
                    settings.save_checkpoints_steps,
                    log_interval,
                )
                # A tensor: loops of another length run the same traced function.
                with records_named_on_error():
                    loss = float(train_loop(iterator, tf.constant(steps)))
                if self.step == step_before:  # a signal came before the loop's first step
                    break
                if not tf.math.is_finite(loss):
                    raise FloatingPointError(
                        f"loss is {loss} at step {self.step}; stopping (the last good checkpoint: "
                        f"{self._last_good()})"
                    )
                history.append((self.step, loss))
                now = time.time()
                learning_rate = self._applied_learning_rate()
                with writer.as_default(step=self.step):
                    tf.summary.scalar("loss", loss)
                    tf.summary.scalar("learning_rate", learning_rate)
                    if now > last_log_time:
                        rate = (
                            (self.step - last_log_step) * global_batch_size / (now - last_log_time)
                        )
                        tf.summary.scalar("examples_per_second", rate)
                if (
                    self.step - last_log_step >= settings.log_steps
                    or self.step >= self.num_train_steps
                ):
                    steps_per_s = (self.step - last_log_step) / max(now - last_log_time, 1e-9)
                    eta = (self.num_train_steps - self.step) / max(steps_per_s, 1e-9)
                    logging.info(
                        "step %d/%d: loss %.4f, lr %.3g, %.2f steps/s, %.1f examples/s, ETA %.0f s",
                        self.step,
                        self.num_train_steps,
                        loss,
                        learning_rate,
                        steps_per_s,
                        steps_per_s * global_batch_size,
                        eta,
                    )
                    last_log_step, last_log_time = self.step, now
                self._save()
        finally:
            watching.close()
            for sig, handler in self._previous_handlers.items():
                signal.signal(sig, handler)
            writer.flush()
        self._save(force=True)
        if self._stop_requested:
            raise TrainingStopped(
                self._stop_requested,
                self.step,
                self.num_train_steps,
                self.manager.latest_checkpoint,
            )
        return history

    # === Evaluation ===
    def evaluate(self, eval_dataset_fn: Callable, metrics, max_steps: int | None = None) -> dict:
        """Runs `metrics.update(outputs, batch)` over the eval data (up to max_steps batches)."""
        model = self.model
        metrics.reset()

        @tf.function
        def eval_step(batch):
            metrics.update(model(batch, training=False), batch)

        dataset = eval_dataset_fn(None)
        if max_steps:
            dataset = dataset.take(max_steps)
        with records_named_on_error():
            for batch in dataset:
                eval_step(batch)
        return metrics.result()


def write_eval_results(path: str, results: dict, step: int) -> None:
    """`key = value` lines, as the original eval_results.txt (global_step included), and each
    number as a TensorBoard scalar at `step` in `eval/` beside it, where the original's
    Estimator wrote its evaluations (so eval curves sit beside the train/ ones)."""
    from official_bert.config import write_text_atomically

    lines = [f"{key} = {value}" for key, value in sorted({**results, "global_step": step}.items())]
    write_text_atomically(path, "\n".join(lines) + "\n")
    writer = tf.summary.create_file_writer(os.path.join(os.path.dirname(path), "eval"))
    with writer.as_default(step=step):
        for key, value in sorted(results.items()):
            if isinstance(value, numbers.Real) and not isinstance(value, bool):
                tf.summary.scalar(key, float(value))
    writer.close()


class _UnrestoredValueWarningFilter(logging_module.Filter):
    def filter(self, record) -> bool:
        return not record.getMessage().startswith(_UNRESTORED_VALUE_WARNINGS)


_UNRESTORED_VALUE_WARNINGS = (
    "Detecting that an object or model or tf.train.Checkpoint is being deleted with unrestored",
    "Value in checkpoint could not be found in the restored object",
)


def _drop_unrestored_value_warnings() -> None:
    """From now on in this process, drops TensorFlow's warnings of values a checkpoint read left
    unrestored (its logger is Python's "tensorflow"); added once."""
    logger = logging_module.getLogger("tensorflow")
    if not any(isinstance(item, _UnrestoredValueWarningFilter) for item in logger.filters):
        logger.addFilter(_UnrestoredValueWarningFilter())
