"""What every fine-tuning run (run_classifier.py, run_multitask.py, run_squad.py) sets up the
same way: the strategy and seed, the number of steps, the runner with its optimizer, the encoder
and its initial weights.

`options` is any of the scripts' option dataclasses (subclasses of
training_options.TrainingOptions); the functions read the fields they share (output_dir, seed,
learning_rate, the runner settings, and train_batch_size, num_train_epochs, ... that each
fine-tuning script's options define).
"""

from __future__ import annotations

import dataclasses

import keras
import tensorflow as tf
from absl import logging

from official_bert.checkpoints import load_bert_weights
from official_bert.models import BertEncoder
from official_bert.training.distribution import create_strategy
from official_bert.training.optimization import create_optimizer
from official_bert.training.runner import Runner, RunnerSettings


@dataclasses.dataclass(frozen=True)
class FinetuningSetup:
    """What a fine-tuning run decides once, before reading data: the strategy, whether it is a
    TPU (full batches, static shapes) and so whether batches are cut to their longest example."""

    strategy: tf.distribute.Strategy
    is_tpu: bool
    trim_padding: bool


def start_finetuning(options) -> FinetuningSetup:
    """Creates output_dir, seeds Keras (initialization, dropout) and creates the strategy."""
    # The records and checkpoints live in output_dir, read and written by the TPU's host:
    # gs:// on a TPU node (checked before connecting).
    strategy = create_strategy(
        options.distribution_strategy,
        options.tpu,
        {"output_dir": options.output_dir},
        zone=options.tpu_zone,
        project=options.gcp_project,
    )
    tf.io.gfile.makedirs(options.output_dir)
    if options.seed is not None:
        keras.utils.set_random_seed(options.seed)
    is_tpu = isinstance(strategy, tf.distribute.TPUStrategy)
    return FinetuningSetup(strategy, is_tpu, options.trim_padding and not is_tpu)


def epoch_train_steps(num_examples: int, options) -> int:
    """Updates for num_train_epochs over num_examples, as the original (rounded down)."""
    num_train_steps = int(num_examples / options.train_batch_size * options.num_train_epochs)
    if num_train_steps < 1:
        raise ValueError(
            f"{num_examples} training examples, train_batch_size {options.train_batch_size} and "
            f"num_train_epochs {options.num_train_epochs} give no training step"
        )
    return num_train_steps


def finetuning_runner(
    options,
    setup: FinetuningSetup,
    model_fn,
    loss_fn,
    num_train_steps: int,
    loss_denominators_fn=None,
) -> Runner:
    """The Runner of a fine-tuning run: create_optimizer's schedule with warm-up over the first
    warmup_proportion of num_train_steps (0 when not training). loss_fn and
    loss_denominators_fn: as Runner's."""
    num_warmup_steps = int(num_train_steps * options.warmup_proportion)

    def optimizer_fn():
        return create_optimizer(
            options.learning_rate,
            max(num_train_steps, 1),
            num_warmup_steps,
            options.optimizer_type,
            options.weight_decay_rate,
            decay_after_warmup=options.decay_after_warmup,
        )

    return Runner(
        setup.strategy,
        model_fn,
        optimizer_fn,
        loss_fn,
        RunnerSettings(
            output_dir=options.output_dir,
            num_train_steps=num_train_steps,
            steps_per_loop=options.steps_per_loop,
            save_checkpoints_steps=options.save_checkpoints_steps,
            keep_checkpoint_max=options.keep_checkpoint_max,
            log_steps=options.log_steps,
        ),
        loss_denominators_fn=loss_denominators_fn,
    )


def create_encoder(options):
    """The encoder a fine-tuning run starts from: the exported encoder of
    options.hub_module_handle (export_tfhub.py --export_type=model; float32, as exported; its
    weights are the starting point), else a BertEncoder of options.bert_config in options.dtype
    (weights loaded later by load_init_checkpoint)."""
    if getattr(options, "hub_module_handle", None):
        from official_bert.export.exported_bert_encoder import ExportedBertEncoder

        return ExportedBertEncoder(options.hub_module_handle)
    return BertEncoder.from_bert_config(options.bert_config, dtype=options.dtype)


def validate_init_source(options) -> None:
    """One starting point: hub_module_handle or init_checkpoint, not both."""
    if getattr(options, "hub_module_handle", None) and options.init_checkpoint:
        raise ValueError(
            "Give either `hub_module_handle` (its weights are the starting point) or "
            "`init_checkpoint`, not both."
        )


def initialize_weights(model, options, target=None) -> None:
    """The runner's initialize_fn of a new model: with options.hub_module_handle the encoder's
    weights came with it; else options.init_checkpoint is loaded into `target` (default: the
    whole model; heads absent from the checkpoint keep their initialization)."""
    if getattr(options, "hub_module_handle", None):
        logging.info("Initialized from the exported encoder %s", options.hub_module_handle)
    else:
        load_init_checkpoint(model if target is None else target, options.init_checkpoint)


def load_init_checkpoint(model, init_checkpoint: str | None) -> None:
    """Loads init_checkpoint (any layout) into `model`; heads absent from it keep their
    initialization (fine-tuning from a pre-training checkpoint)."""
    if init_checkpoint:
        checkpoint_format = load_bert_weights(model, init_checkpoint)
        logging.info("Initialized from %s (%s)", init_checkpoint, checkpoint_format)
    else:
        logging.warning("No init_checkpoint: fine-tuning from random weights")


def train_dataset_fn(read_dataset, path: str, options, setup: FinetuningSetup):
    """The runner's train_dataset_fn(input_context): `read_dataset` (classifier_dataset,
    squad_dataset) over the training records at `path`, shuffled with options.seed, batches of
    train_batch_size split over the replicas, trimmed as `setup` says."""

    def dataset_fn(input_context):
        return read_dataset(
            path,
            options.train_batch_size,
            options.max_seq_length,
            is_training=True,
            input_context=input_context,
            seed=options.seed,
            trim_padding=setup.trim_padding,
        )

    return dataset_fn
