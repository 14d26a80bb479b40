"""Pre-training a BERT (masked LM + next sentence, or the paper's left-to-right LM ablation)
with the runner."""

from __future__ import annotations

import dataclasses
import os

import keras
import tensorflow as tf
from absl import logging

from official_bert.checkpoints import load_bert_weights, write_original_checkpoint
from official_bert.config import BertConfig
from official_bert.data.pretraining.dataset import pretraining_dataset
from official_bert.models import BertEncoder, BertPretrainer
from official_bert.training.distribution import create_strategy
from official_bert.training.optimization import create_optimizer
from official_bert.training.pretraining_objective import (
    PretrainingMetrics,
    left_to_right_loss,
    left_to_right_loss_denominators,
    pretraining_loss,
    pretraining_loss_denominators,
)
from official_bert.training.runner import Runner, RunnerSettings, write_eval_results
from official_bert.training.training_options import TrainingOptions


@dataclasses.dataclass
class PretrainingOptions(TrainingOptions):
    """The settings of run_pretraining.py (original flag names), beside the shared ones of
    TrainingOptions.

    objective: "mlm" (the original: masked LM, plus next sentence with use_next_sentence_label)
    or "ltr" (the BERT paper's "LTR & No NSP" ablation, section 5.1: a causal encoder trained
    as a left-to-right LM on the same records, their original tokens restored at the masked
    positions; needs use_next_sentence_label=False).
    """

    bert_config: BertConfig
    input_file: str
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    do_train: bool = True
    do_eval: bool = False
    train_batch_size: int = 32
    eval_batch_size: int = 8
    num_train_steps: int = 100000
    num_warmup_steps: int = 10000
    max_eval_steps: int = 100
    use_next_sentence_label: bool = True
    gradient_accumulation_steps: int = 1
    enable_xla: bool = False
    objective: str = "mlm"


def run_pretraining(options: PretrainingOptions) -> dict:
    """Trains and/or evaluates; returns {"history": [(step, loss)...], "eval": {...}}.

    At the end of training the encoder and heads are also written in the original TF1 layout as
    output_dir/bert_model.ckpt, so they serve as init_checkpoint for the original code or ours.
    """
    if options.dtype not in ("float32", "mixed_bfloat16", "mixed_float16"):
        raise ValueError(f"unknown dtype {options.dtype!r}")
    if options.objective not in ("mlm", "ltr"):
        raise ValueError(f"objective must be 'mlm' or 'ltr', got {options.objective!r}")
    left_to_right = options.objective == "ltr"
    if left_to_right and options.use_next_sentence_label:
        raise ValueError(
            "objective 'ltr' (the paper's 'LTR & No NSP') has no next-sentence prediction: "
            "set use_next_sentence_label to False"
        )
    if options.max_seq_length > options.bert_config.max_position_embeddings:
        raise ValueError(
            f"max_seq_length {options.max_seq_length} is longer than max_position_embeddings "
            f"({options.bert_config.max_position_embeddings})"
        )
    # The TPU's host reads the records and writes the checkpoints: gs:// unless on a TPU VM.
    tpu_paths = {"input_file": options.input_file, "output_dir": options.output_dir}
    strategy = create_strategy(
        options.distribution_strategy,
        options.tpu,
        tpu_paths,
        zone=options.tpu_zone,
        project=options.gcp_project,
    )
    tf.io.gfile.makedirs(options.output_dir)
    if options.seed is not None:
        # Initialization, dropout and input order; with the checkpointed data position and
        # random states a resumed run then ends with the weights of an uninterrupted one.
        keras.utils.set_random_seed(options.seed)

    def model_fn():
        encoder = BertEncoder.from_bert_config(
            options.bert_config, dtype=options.dtype, causal=left_to_right
        )
        model = BertPretrainer(
            encoder,
            use_next_sentence_label=options.use_next_sentence_label,
            objective=options.objective,
        )
        model.build()
        return model

    def optimizer_fn():
        return create_optimizer(
            options.learning_rate,
            options.num_train_steps,
            options.num_warmup_steps,
            options.optimizer_type,
            options.weight_decay_rate,
            decay_after_warmup=options.decay_after_warmup,
        )

    def dataset_fn(batch_size, is_training):
        def build(input_context):
            return pretraining_dataset(
                options.input_file,
                batch_size,
                options.max_seq_length,
                options.max_predictions_per_seq,
                is_training=is_training,
                input_context=input_context,
                seed=options.seed,
                restore_original_tokens=left_to_right,
                vocab_size=options.bert_config.vocab_size,
            )

        return build

    # Fail on bad input files before building anything.
    dataset_fn(options.train_batch_size, False)(None)
    runner = Runner(
        strategy,
        model_fn,
        optimizer_fn,
        left_to_right_loss if left_to_right else pretraining_loss,
        RunnerSettings(
            output_dir=options.output_dir,
            num_train_steps=options.num_train_steps,
            steps_per_loop=options.steps_per_loop,
            save_checkpoints_steps=options.save_checkpoints_steps,
            keep_checkpoint_max=options.keep_checkpoint_max,
            log_steps=options.log_steps,
            gradient_accumulation_steps=options.gradient_accumulation_steps,
            enable_xla=options.enable_xla,
        ),
        # The (M)LM loss is normalized over the whole update batch, whatever its parts.
        loss_denominators_fn=(
            left_to_right_loss_denominators if left_to_right else pretraining_loss_denominators
        ),
    )

    def initialize(model):
        if options.init_checkpoint:
            load_bert_weights(model, options.init_checkpoint)

    runner.restore_or_initialize(initialize)
    results = {"history": []}
    if options.do_train:
        # train_batch_size is the batch of one update; gradient accumulation splits it.
        results["history"] = runner.train(
            dataset_fn(options.train_batch_size, True), options.train_batch_size
        )
    if options.do_train and runner.is_chief:
        # The `checkpoint` state file stays the runner's, so a rerun resumes from ckpt-N.
        prefix = write_original_checkpoint(
            runner.model, os.path.join(options.output_dir, "bert_model.ckpt"), write_state=False
        )
        options.bert_config.to_json_file(os.path.join(options.output_dir, "bert_config.json"))
        logging.info("Wrote the trained model in the original layout: %s", prefix)
    if options.do_eval:
        metrics = PretrainingMetrics(
            next_sentence=options.use_next_sentence_label, objective=options.objective
        )
        results["eval"] = runner.evaluate(
            dataset_fn(options.eval_batch_size, False), metrics, options.max_eval_steps
        )
        path = os.path.join(options.output_dir, "eval_results.txt")
        if runner.is_chief:
            write_eval_results(path, results["eval"], runner.step)
        logging.info("Eval results (%s): %s", path, results["eval"])
    keras.backend.clear_session()
    return results
