"""The training runner every training script uses: a custom loop under a tf.distribute strategy.

Custom rather than `model.fit`: Keras 3.15's fit fails under MirroredStrategy with
steps_per_execution > 1 (keras-team/keras#19246) and under MultiWorkerMirroredStrategy
(keras#20585), while `strategy.run` works for both.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from collections.abc import Callable

import tensorflow as tf
from absl import logging


@dataclasses.dataclass
class RunnerSettings:
    output_dir: str
    num_train_steps: int
    steps_per_loop: int = 1000
    save_checkpoints_steps: int = 1000
    keep_checkpoint_max: int = 5
    log_steps: int = 100


class Runner:
    """Trains and evaluates a Keras model with a custom loop.

    model_fn() -> keras.Model, optimizer_fn() -> keras optimizer: built under the strategy scope.
    loss_fn(outputs, batch) -> float32 scalar (the per-replica mean).
    train_dataset_fn(input_context) / eval_dataset_fn(input_context) -> tf.data.Dataset of dict
    batches (the model's inputs and labels).

    Checkpoints (model, optimizer and its step) go to output_dir every save_checkpoints_steps;
    a new Runner on the same output_dir resumes from the latest one. SIGTERM/SIGINT end training
    after the current loop with a checkpoint. TensorBoard summaries go to output_dir/train.
    """

    def __init__(
        self,
        strategy: tf.distribute.Strategy,
        model_fn: Callable,
        optimizer_fn: Callable,
        loss_fn: Callable,
        settings: RunnerSettings,
    ):
        self.strategy = strategy
        self.settings = settings
        self.loss_fn = loss_fn
        with strategy.scope():
            self.model = model_fn()
            self.optimizer = optimizer_fn()
            self.optimizer.build(self.model.trainable_variables)
        # The runner clips the global gradient itself (see _train_loop_fn).
        self.clip_norm = self.optimizer.global_clipnorm
        self.optimizer.global_clipnorm = None
        self.checkpoint = tf.train.Checkpoint(model=self.model, optimizer=self.optimizer)
        self.manager = tf.train.CheckpointManager(
            self.checkpoint,
            settings.output_dir,
            max_to_keep=settings.keep_checkpoint_max,
            step_counter=self.optimizer.iterations,
            checkpoint_interval=settings.save_checkpoints_steps,
        )
        self._stop_requested = False

    @property
    def step(self) -> int:
        return int(self.optimizer.iterations.numpy())

    def restore_or_initialize(self, initialize: Callable | None = None) -> bool:
        """Restores the latest checkpoint of output_dir (True), or calls initialize(model)."""
        latest = self.manager.latest_checkpoint
        if latest:
            self.checkpoint.read(latest).assert_existing_objects_matched().expect_partial()
            logging.info("Resumed from %s at step %d", latest, self.step)
            return True
        if initialize is not None:
            initialize(self.model)
        return False

    # === Training ===
    def _train_loop_fn(self):
        strategy, model, optimizer, loss_fn = (
            self.strategy,
            self.model,
            self.optimizer,
            self.loss_fn,
        )

        clip_norm = self.clip_norm
        replicas = strategy.num_replicas_in_sync

        def step_fn(batch):
            with tf.GradientTape() as tape:
                outputs = model(batch, training=True)
                loss = loss_fn(outputs, batch)
                # Gradients are summed over replicas: scale for their mean.
                scaled = loss / replicas
            gradients = tape.gradient(scaled, model.trainable_variables)
            # Embedding gradients come as IndexedSlices; the updates below want dense tensors.
            gradients = [
                tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in gradients
            ]
            if replicas > 1:
                # Keras clips each replica's part before summing them; clip the global
                # gradient instead, as one device would, then hand Keras parts that sum to it.
                context = tf.distribute.get_replica_context()
                gradients = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)
            if clip_norm:
                gradients, _ = tf.clip_by_global_norm(gradients, clip_norm)
            if replicas > 1:
                gradients = [g / replicas for g in gradients]
            optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
            return loss

        @tf.function
        def train_loop(iterator, num_steps):
            total = tf.constant(0.0)
            for _ in tf.range(num_steps):
                losses = strategy.run(step_fn, args=(next(iterator),))
                total += strategy.reduce(tf.distribute.ReduceOp.MEAN, losses, axis=None)
            return total / tf.cast(num_steps, tf.float32)

        return train_loop

    def _request_stop(self, signum, frame):
        logging.warning("Signal %d: saving a checkpoint and stopping after this loop", signum)
        self._stop_requested = True

    def train(self, train_dataset_fn: Callable, global_batch_size: int) -> list[tuple[int, float]]:
        """Trains up to num_train_steps; returns (step, mean loss) per loop."""
        settings = self.settings
        dataset = self.strategy.distribute_datasets_from_function(train_dataset_fn)
        iterator = iter(dataset)
        train_loop = self._train_loop_fn()
        writer = tf.summary.create_file_writer(os.path.join(settings.output_dir, "train"))
        previous = {
            sig: signal.signal(sig, self._request_stop) for sig in (signal.SIGTERM, signal.SIGINT)
        }
        history = []
        start_step, start_time = self.step, time.time()
        last_log_step, last_log_time = start_step, start_time
        try:
            while self.step < settings.num_train_steps and not self._stop_requested:
                steps = min(settings.steps_per_loop, settings.num_train_steps - self.step)
                loss = float(train_loop(iterator, tf.constant(steps)))
                if not tf.math.is_finite(loss):
                    raise FloatingPointError(
                        f"loss is {loss} at step {self.step}; stopping (the last good checkpoint "
                        f"is {self.manager.latest_checkpoint})"
                    )
                history.append((self.step, loss))
                now = time.time()
                learning_rate = float(self.optimizer.learning_rate)
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
                    or self.step >= settings.num_train_steps
                ):
                    steps_per_s = (self.step - last_log_step) / max(now - last_log_time, 1e-9)
                    eta = (settings.num_train_steps - self.step) / max(steps_per_s, 1e-9)
                    logging.info(
                        "step %d/%d: loss %.4f, lr %.3g, %.2f steps/s, %.1f examples/s, ETA %.0f s",
                        self.step,
                        settings.num_train_steps,
                        loss,
                        learning_rate,
                        steps_per_s,
                        steps_per_s * global_batch_size,
                        eta,
                    )
                    last_log_step, last_log_time = self.step, now
                self.manager.save(checkpoint_number=self.optimizer.iterations)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            writer.flush()
        self.manager.save(checkpoint_number=self.optimizer.iterations, check_interval=False)
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
        for batch in dataset:
            eval_step(batch)
        return metrics.result()


def write_eval_results(path: str, results: dict, step: int) -> None:
    """`key = value` lines, as the original eval_results.txt (global_step included)."""
    from official_bert.config import write_text_atomically

    lines = [f"{key} = {value}" for key, value in sorted({**results, "global_step": step}.items())]
    write_text_atomically(path, "\n".join(lines) + "\n")
