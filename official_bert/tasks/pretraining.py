"""Pre-training a BERT (masked LM + next sentence, or the paper's left-to-right LM ablation)
with the runner."""

from __future__ import annotations

import dataclasses
import os

import tensorflow as tf
from absl import logging

from official_bert.atomic_output import atomic_output
from official_bert.checkpoints import load_bert_weights, write_original_checkpoint
from official_bert.checkpoints.checkpoint_url import resolve_checkpoint_url
from official_bert.checkpoints.loading import find_bert_config, find_vocab_file, read_bert_config
from official_bert.config import BertConfig, BertConfigError, check_vocab_matches_config
from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.pretraining.dataset import pretraining_dataset
from official_bert.export.fill_mask_serving import export_fill_mask_serving_model
from official_bert.file_system import same_file
from official_bert.kernels.switch import fast_kernels_enabled
from official_bert.models import BertEncoder, BertPretrainer
from official_bert.option_flags import option
from official_bert.tasks.driver import run_task
from official_bert.tasks.pretraining_objective import (
    PretrainingMetrics,
    left_to_right_loss,
    left_to_right_loss_denominators,
    pretraining_loss,
    pretraining_loss_denominators,
)
from official_bert.tasks.task import Task
from official_bert.training.runner import Runner, write_eval_results
from official_bert.training.training_options import TrainingOptions


@dataclasses.dataclass(kw_only=True)
class PretrainingOptions(TrainingOptions):
    """The settings of run_pretraining.py (original flag names), beside the shared ones of
    TrainingOptions.

    objective: "mlm" (the original: masked LM, plus next sentence with use_next_sentence_label)
    or "ltr" (the BERT paper's "LTR & No NSP" ablation, section 5.1: a causal encoder trained
    as a left-to-right LM on the same records, their original tokens restored at the masked
    positions; needs use_next_sentence_label=False).
    """

    # === The original flags ===
    bert_config_file: str | None = option(
        None,
        help="bert_config.json of the model to pre-train (default: the config beside "
        "--init_checkpoint: bert_config.json, or a Hugging Face / keras-hub config.json).",
    )
    input_file: str = option(help="Input TFRecord file(s): comma-separated globs.")
    max_seq_length: int = option(128, help="Sequence length of the input files.")
    max_predictions_per_seq: int = option(20, help="Masked-LM predictions per sequence.")
    do_train: bool = option(False, help="Whether to train.")
    do_eval: bool = option(False, help="Whether to evaluate.")
    train_batch_size: int = option(32, help="Global training batch size.")
    eval_batch_size: int = option(8, help="Evaluation batch size.")
    num_train_steps: int = option(100000, help="Training steps.")
    num_warmup_steps: int = option(10000, help="Warm-up steps.")
    max_eval_steps: int = option(
        100,
        help="Evaluation batches of --eval_batch_size, exactly: the records are read over and "
        "over (or cut) to fill them, as in the original.",
    )
    # === TF2 flags ===
    use_next_sentence_label: bool | None = option(
        None,
        help="False: MLM-only pre-training (default: true, false under --objective=ltr).",
    )
    objective: str = option(
        "mlm",
        choices=("mlm", "ltr"),
        help="mlm: the masked LM. ltr: the paper's 'LTR & No NSP' ablation, a left-to-right LM "
        "(causal attention, next-token loss over all real positions) on the same files, their "
        "original tokens restored; next-sentence prediction is off (an explicit "
        "--use_next_sentence_label=true is an error).",
    )
    export_dir: str | None = option(
        None,
        help="After training, write here a fill-mask serving SavedModel (raw text with [MASK] "
        "in, the top fill_mask_top_k tokens of each mask out); needs --vocab_file.",
    )
    vocab_file: str | None = option(
        None,
        help="vocab.txt of the model: for --export_dir, and copied beside the trained "
        "bert_model.ckpt. Default: the vocab beside --init_checkpoint or --bert_config_file.",
    )
    do_lower_case: bool = option(True, help="--export_dir: the model is uncased.")
    fill_mask_top_k: int = option(5, help="--export_dir: tokens returned per [MASK].")
    # Read from bert_config_file when not given.
    bert_config: BertConfig | None = option(None, flag=False)

    def __post_init__(self):
        super().__post_init__()
        self.init_checkpoint = resolve_checkpoint_url(self.init_checkpoint)
        if self.use_next_sentence_label is None:
            self.use_next_sentence_label = self.objective != "ltr"
            if self.objective == "ltr":
                logging.info("--objective=ltr: next-sentence prediction is off")
        if self.bert_config is None:
            self.bert_config_file = self.bert_config_file or find_bert_config(self.init_checkpoint)
            if not self.bert_config_file:
                raise ValueError(
                    "--bert_config_file is required (none found beside --init_checkpoint)"
                )
            self.bert_config = read_bert_config(self.bert_config_file)
        if not self.vocab_file:
            # Continued pre-training of a downloaded model: its vocab sits beside it.
            self.vocab_file = find_vocab_file(self.init_checkpoint) or find_vocab_file(
                self.bert_config_file
            )


def _copy_vocab_beside(options: PretrainingOptions) -> None:
    """Copies the model's vocab to output_dir/vocab.txt, so that the folder is a whole model
    (config, weights, vocab) that the fine-tuning scripts read with --init_checkpoint alone. A
    vocab of another size than the config's (one found beside a checkpoint, not given) is left
    out with a warning."""
    if not options.vocab_file:
        return
    target = os.path.join(options.output_dir, "vocab.txt")
    if same_file(options.vocab_file, target):
        return
    try:
        check_vocab_matches_config(
            options.bert_config, options.vocab_file, options.bert_config_file
        )
    except BertConfigError as error:
        logging.warning("vocab.txt not written beside the trained model: %s", error)
        return
    with atomic_output(target) as temporary:
        tf.io.gfile.copy(options.vocab_file, temporary, overwrite=True)


def validate_pretraining_options(options: PretrainingOptions) -> None:
    """Checks what to do and the model settings, each error naming its flag."""
    if not options.do_train and not options.do_eval:
        raise ValueError("At least one of --do_train or --do_eval must be True.")
    if options.do_train and options.num_train_steps < 1:
        # The original's Estimator.train(max_steps=0) refused it too; this would write the
        # initial weights as the trained model.
        raise ValueError(
            f"--num_train_steps must be at least 1 with --do_train, got {options.num_train_steps}"
        )
    if options.do_eval and options.max_eval_steps < 1:
        raise ValueError(
            f"--max_eval_steps must be at least 1 with --do_eval, got {options.max_eval_steps}"
        )
    if options.objective not in ("mlm", "ltr"):
        raise ValueError(f"objective must be 'mlm' or 'ltr', got {options.objective!r}")
    if options.objective == "ltr" and options.use_next_sentence_label:
        raise ValueError(
            "--objective=ltr is the paper's 'LTR & No NSP' model: it has no next-sentence "
            "prediction, so --use_next_sentence_label=true cannot go with it"
        )
    if options.export_dir:
        if options.objective != "mlm":
            raise ValueError(
                "--export_dir writes a fill-mask model, which needs the masked LM "
                f"(--objective=mlm), not --objective={options.objective}"
            )
        if not options.vocab_file:
            raise ValueError("--export_dir needs --vocab_file (the fill-mask model tokenizes)")
        if options.fill_mask_top_k < 1:
            raise ValueError(f"--fill_mask_top_k must be at least 1, got {options.fill_mask_top_k}")
        check_vocab_matches_config(
            options.bert_config, options.vocab_file, options.bert_config_file
        )
    if options.max_seq_length > options.bert_config.max_position_embeddings:
        raise ValueError(
            f"max_seq_length {options.max_seq_length} is longer than max_position_embeddings "
            f"({options.bert_config.max_position_embeddings})"
        )


class PretrainingTask(Task):
    """Masked LM + next sentence pre-training (or the paper's left-to-right LM ablation) on the
    records of create_pretraining_data.py.

    After training the encoder and heads are also written in the original TF1 layout as
    output_dir/bert_model.ckpt (with bert_config.json), so they serve as init_checkpoint for the
    original code or ours. Evaluation writes the original eval_results.txt.
    """

    def __init__(self, options: PretrainingOptions):
        super().__init__(options)
        self.left_to_right = options.objective == "ltr"
        self.num_train_steps = options.num_train_steps

    def validate(self) -> None:
        validate_pretraining_options(self.options)

    def tpu_paths(self) -> dict[str, str | None]:
        # The TPU's host reads the records and writes the checkpoints: gs:// unless on a TPU VM.
        return {"input_file": self.options.input_file, "output_dir": self.options.output_dir}

    def prepare(self, strategy) -> None:
        super().prepare(strategy)
        # Fail on bad input files before building anything.
        self._dataset(self.options.train_batch_size, False, None)

    def num_warmup_steps(self) -> int:
        return self.options.num_warmup_steps

    def build_model(self):
        options = self.options
        encoder = BertEncoder.from_bert_config(
            options.bert_config, dtype=options.dtype, causal=self.left_to_right
        )
        model = BertPretrainer.from_bert_config(
            encoder,
            options.bert_config,
            use_next_sentence_label=options.use_next_sentence_label,
            objective=options.objective,
            # The heads read [CLS] and the masked positions only: with the speed paths on, the
            # last layer runs there alone (same losses, to float rounding).
            last_layer_at_predictions_only=(options.objective == "mlm" and fast_kernels_enabled()),
        )
        model.build()
        return model

    def loss_fn(self):
        return left_to_right_loss if self.left_to_right else pretraining_loss

    def loss_denominators_fn(self):
        # The (M)LM loss is normalized over the whole update batch, whatever its parts.
        if self.left_to_right:
            return left_to_right_loss_denominators
        return pretraining_loss_denominators

    def initialize(self, model) -> None:
        if self.options.init_checkpoint:
            load_bert_weights(model, self.options.init_checkpoint)

    def _dataset(self, batch_size: int, is_training: bool, input_context, repeat=False):
        options = self.options
        return pretraining_dataset(
            options.input_file,
            batch_size,
            options.max_seq_length,
            options.max_predictions_per_seq,
            is_training=is_training,
            input_context=input_context,
            seed=options.seed,
            restore_original_tokens=self.left_to_right,
            vocab_size=options.bert_config.vocab_size,
            repeat=repeat,
        )

    def train_dataset(self, input_context):
        # train_batch_size is the batch of one update; gradient accumulation splits it.
        return self._dataset(self.options.train_batch_size, True, input_context)

    def after_training(self, runner: Runner) -> dict:
        options = self.options
        if runner.is_chief:
            # The `checkpoint` state file stays the runner's, so a rerun resumes from ckpt-N.
            prefix = write_original_checkpoint(
                runner.model, os.path.join(options.output_dir, "bert_model.ckpt"), write_state=False
            )
            options.bert_config.to_json_file(os.path.join(options.output_dir, "bert_config.json"))
            _copy_vocab_beside(options)
            logging.info("Wrote the trained model in the original layout: %s", prefix)
        return {}

    def export(self, runner: Runner) -> str | None:
        options = self.options
        if not options.export_dir:
            return None
        packer = BertInputPacker(options.vocab_file, options.max_seq_length, options.do_lower_case)
        return export_fill_mask_serving_model(
            runner.model, packer, options.fill_mask_top_k, options.export_dir
        )

    def evaluate(self, runner: Runner) -> dict:
        options = self.options
        metrics = PretrainingMetrics(
            next_sentence=options.use_next_sentence_label, objective=options.objective
        )
        # Exactly max_eval_steps full batches, the records read over and over (or cut), as the
        # original's eval input_fn: the same figures as its on any eval set.
        results = runner.evaluate(
            lambda input_context: self._dataset(
                options.eval_batch_size, False, input_context, repeat=True
            ),
            metrics,
            options.max_eval_steps,
        )
        path = os.path.join(options.output_dir, "eval_results.txt")
        if runner.is_chief:
            write_eval_results(path, results, runner.step)
        logging.info("Eval results (%s): %s", path, results)
        return {"eval": results}


def run_pretraining(options: PretrainingOptions) -> dict:
    """Trains and/or evaluates (see PretrainingTask); returns {"history": [(step, loss)...],
    "eval": {...}}."""
    return run_task(PretrainingTask(options))
