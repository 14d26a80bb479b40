"""Task: what one kind of BERT job (pre-training, classification, tagging, SQuAD, ...) adds to
the generic runner. The driver (tasks/driver.py) runs any Task the same way: train, evaluate,
predict, export, each when the options ask for it.

A task module defines its options (a dataclass built on TrainingOptions, whose fields are the
script's flags), a Task subclass, and registers the task names it answers to
(tasks/registry.py). docs/adding_a_task.md walks through adding one.
"""

from __future__ import annotations

from collections.abc import Callable

import keras
import tensorflow as tf

from official_bert.training.optimization import create_optimizer
from official_bert.training.runner import Runner
from official_bert.training.training_options import TrainingOptions


class Task:
    """The surface the driver uses. Subclasses override what their job needs.

    Attributes set by `prepare`:
      strategy: the tf.distribute strategy the driver created.
      num_train_steps: optimizer updates to train (0 when not training).
    """

    def __init__(self, options: TrainingOptions):
        self.options = options
        self.strategy: tf.distribute.Strategy | None = None
        self.num_train_steps = 0

    # === What to do (the original flags' names) ===
    @property
    def do_train(self) -> bool:
        return bool(getattr(self.options, "do_train", False))

    @property
    def do_eval(self) -> bool:
        return bool(getattr(self.options, "do_eval", False))

    @property
    def do_predict(self) -> bool:
        return bool(getattr(self.options, "do_predict", False))

    @property
    def train_batch_size(self) -> int:
        """The global batch of one optimizer update."""
        return self.options.train_batch_size

    # === Before the model exists ===
    def validate(self) -> None:
        """Checks the options, each error naming the flag at fault (before anything is read)."""

    def tpu_paths(self) -> dict[str, str | None]:
        """{flag: path} that a Cloud TPU's host must read or write (checked to be gs://)."""
        return {"output_dir": self.options.output_dir}

    def prepare(self, strategy: tf.distribute.Strategy) -> None:
        """Reads the data the run needs (and writes its records), so bad data fails before
        training; sets num_train_steps."""
        self.strategy = strategy

    # === The model and its training ===
    def build_model(self) -> keras.Model:
        """A new, built model (called under the strategy's scope)."""
        raise NotImplementedError

    def create_optimizer(self):
        """The optimizer with the original schedule: linear warm-up over num_warmup_steps, then
        linear decay to 0 at num_train_steps (called under the strategy's scope)."""
        options = self.options
        return create_optimizer(
            options.learning_rate,
            max(self.num_train_steps, 1),
            self.num_warmup_steps(),
            options.optimizer_type,
            options.weight_decay_rate,
            decay_after_warmup=options.decay_after_warmup,
        )

    def num_warmup_steps(self) -> int:
        return int(self.num_train_steps * self.options.warmup_proportion)

    def loss_fn(self) -> Callable:
        """The runner's loss_fn(outputs, batch[, denominators])."""
        raise NotImplementedError

    def loss_denominators_fn(self) -> Callable | None:
        """The runner's loss_denominators_fn, for losses normalized over the whole batch."""
        return None

    def initialize(self, model: keras.Model) -> None:
        """Loads the starting weights into a new model (not called when a run resumes)."""

    def train_dataset(self, input_context: tf.distribute.InputContext | None) -> tf.data.Dataset:
        """Training batches of train_batch_size (split over the replicas by input_context)."""
        raise NotImplementedError

    def after_training(self, runner: Runner) -> dict:
        """What a task writes once training ends (e.g. the model in the original layout);
        returns entries for the results."""
        return {}

    # === The outputs ===
    def evaluate(self, runner: Runner) -> dict:
        """Evaluates runner.model on the dev data and writes the task's results file; returns
        {"eval": metrics}."""
        raise NotImplementedError(f"{type(self).__name__} has no evaluation")

    def predict(self, runner: Runner) -> dict:
        """Predicts the test data and writes the task's prediction files; returns
        {"predictions": ...} (and {"eval": ...} where predicting also scores)."""
        raise NotImplementedError(f"{type(self).__name__} has no prediction")

    @property
    def export_requested(self) -> bool:
        """Whether the options name a serving export folder (`export_dir`): a run that does not
        train exports then too (a model fine-tuned earlier, or --init_checkpoint's)."""
        return bool(getattr(self.options, "export_dir", None))

    def export(self, runner: Runner) -> str | None:
        """Writes the task's serving SavedModel after training; its path, or None where the task
        has none (or the options say not to)."""
        return None
