"""What every fine-tuning task (classification, tagging, multi-task, SQuAD) shares: its options
(FinetuningOptions: the model files, lengths, batches and epochs) and what it sets up the same
way: the strategy and seed, the number of steps, the runner with its optimizer, the encoder and
its initial weights.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import tensorflow as tf
from absl import logging

from official_bert.checkpoints import head_labels, load_bert_weights
from official_bert.checkpoints.checkpoint_url import resolve_checkpoint_url
from official_bert.checkpoints.loading import (
    checkpoint_read_errors_named,
    detect_checkpoint_format,
    find_bert_config,
    find_lower_case,
    find_vocab_file,
    read_bert_config,
)
from official_bert.checkpoints.tf1_hub_module import is_tf1_hub_module
from official_bert.checkpoints.variable_table import CheckpointMismatchError
from official_bert.config import BertConfig, check_vocab_matches_config
from official_bert.export.exported_bert_encoder import (
    ExportedBertEncoder,
    read_exported_encoder_settings,
)
from official_bert.export.fused_encoder_model import FusedEncoderModel
from official_bert.export.hub_handle import resolve_hub_handle
from official_bert.export.saved_model_writing import check_export_path_replaceable
from official_bert.models import BertEncoder
from official_bert.option_flags import option
from official_bert.tasks.task import Task
from official_bert.tokenization import validate_case_matches_checkpoint
from official_bert.training.training_options import TrainingOptions


@dataclasses.dataclass(kw_only=True)
class FinetuningOptions(TrainingOptions):
    """The settings every fine-tuning task shares (run_classifier.py, run_multitask.py,
    run_squad.py): the original flag names, then the TF2 ones, beside TrainingOptions'.

    The model's files resolve when the options are made: bert_config_file defaults to the
    config beside init_checkpoint (or the --hub_module_handle encoder's), vocab_file to the
    vocab.txt beside the config (a keras-hub preset's vocabulary.txt), do_lower_case (None) to
    the casing the checkpoint records or its released name says (loading.find_lower_case),
    else True; bert_config is read from bert_config_file unless given.
    """

    # === The original flags ===
    bert_config_file: str | None = option(
        None, help="bert_config.json (default: the one beside init_checkpoint)."
    )
    vocab_file: str | None = option(
        None, help="vocab.txt of the model (default: beside the config)."
    )
    do_lower_case: bool | None = option(
        None,
        help="Lower-case the input (uncased models). Default: the casing the checkpoint "
        "records (--hub_module_handle's encoder, a keras-hub preset's tokenizer, a Hugging "
        "Face tokenizer_config.json) or its released name says (cased_L-12_H-768_A-12), "
        "else true.",
    )
    preserve_unused_tokens: bool = option(
        False,
        # The original's help text: it means the [unusedN] tokens of the vocab, written as words
        # of their own (tokenization.is_preserved_token).
        help="If True, Wordpiece tokenization will not be applied to words in the vocab.",
    )
    max_seq_length: int = option(128, help="Wordpieces per example, after packing.")
    do_train: bool = option(False, help="Whether to train.")
    do_eval: bool = option(False, help="Whether to evaluate on the dev set.")
    do_predict: bool = option(False, help="Whether to predict the test set.")
    train_batch_size: int = option(32, help="Global training batch size.")
    eval_batch_size: int = option(8, help="Evaluation batch size.")
    predict_batch_size: int = option(8, help="Prediction batch size.")
    num_train_epochs: float = option(3.0, help="Training epochs.")
    warmup_proportion: float = option(0.1, help="Fraction of the steps with linear warm-up.")
    # === TF2 flags ===
    max_train_examples: int = option(
        0, help="Train on the first N examples (of each task) only (0: all)."
    )
    hub_module_handle: str | None = option(
        None,
        help="A BERT encoder SavedModel of the TF Hub BERT API to fine-tune instead of "
        "--init_checkpoint: a folder (export_tfhub.py --export_type=model writes one) or a URL "
        "(e.g. https://tfhub.dev/tensorflow/bert_en_uncased_L-12_H-768_A-12/4, downloaded to "
        "TFHUB_CACHE_DIR). Its vocab and casing (and bert_config.json, if it has one) are the "
        "defaults of those flags.",
    )
    trim_padding: bool = option(
        True, help="Cut each batch to its longest example (same results, faster; not TPU)."
    )
    # Read from bert_config_file when not given (None only where no model is needed).
    bert_config: BertConfig | None = option(None, flag=False)

    def __post_init__(self):
        super().__post_init__()
        self.init_checkpoint = resolve_checkpoint_url(self.init_checkpoint)
        if self.hub_module_handle and not self.init_checkpoint:
            local = resolve_hub_handle(self.hub_module_handle)
            if is_tf1_hub_module(local):
                # TensorFlow 2 cannot fine-tune a TF1 Hub module as a module; its variables are
                # an original checkpoint, so the run starts from them as from one.
                logging.info("%s: a TF1 Hub module, read as a checkpoint", self.hub_module_handle)
                self.init_checkpoint, self.hub_module_handle = local, None
        if self.bert_config is None and self.needs_model():
            self._resolve_model_files()
        if self.do_lower_case is None:
            self.do_lower_case = True

    def needs_model(self) -> bool:
        """Whether this run builds a model (and so needs its config and vocab)."""
        return True

    def _resolve_model_files(self) -> None:
        exported = {}
        if self.hub_module_handle:
            exported = read_exported_encoder_settings(self.hub_module_handle)
        self.bert_config_file = (
            self.bert_config_file
            or exported.get("bert_config_file")
            or find_bert_config(self.init_checkpoint)
        )
        if self.bert_config_file:
            self.bert_config = read_bert_config(self.bert_config_file)
        elif exported:
            # A TF Hub encoder without a bert_config.json asset (Model Garden's exports, the
            # TF2 BERT encoders of tfhub.dev): the sizes its variables and outputs tell.
            self.bert_config = exported["bert_config"]
        else:
            raise ValueError("--bert_config_file is required (none found beside --init_checkpoint)")
        self.vocab_file = (
            self.vocab_file
            or exported.get("vocab_file")
            or find_vocab_file(self.bert_config_file)
            or os.path.join(os.path.dirname(self.bert_config_file), "vocab.txt")
        )
        if self.do_lower_case is None:
            self.do_lower_case = exported.get("do_lower_case")
        if self.do_lower_case is None:
            self.do_lower_case = find_lower_case(self.init_checkpoint)


def _names_export(options) -> bool:
    """Whether the options (of a task with a serving export) name its folder."""
    return bool(getattr(options, "export_dir", None))


def serving_export_dir(options) -> str | None:
    """Where a fine-tuning task writes its serving SavedModel: `export_dir`, by default
    (None) output_dir/serving_model; None when export_dir is '' (no export)."""
    if options.export_dir == "":
        return None
    return options.export_dir or os.path.join(options.output_dir, "serving_model")


def check_export_dir(options) -> None:
    """A named --export_dir that exists must hold an earlier export (or nothing): the export
    replaces it, and a folder of the user's own is refused before any work, not removed."""
    export_dir = getattr(options, "export_dir", None)
    if export_dir:
        check_export_path_replaceable(export_dir, "--export_dir")


def validate_finetuning_options(options: FinetuningOptions) -> None:
    """The original run_classifier.py checks of what to do and of the model settings, each
    naming its flag."""
    # An export alone (export_dir named, nothing else asked) serves a model fine-tuned earlier.
    if not (options.do_train or options.do_eval or options.do_predict or _names_export(options)):
        raise ValueError(
            "At least one of `do_train`, `do_eval` or `do_predict' must be True (or name "
            "`export_dir` to export a model fine-tuned earlier)."
        )
    check_sequence_length(options)
    check_export_dir(options)
    validate_init_source(options)
    validate_case_matches_checkpoint(options.do_lower_case, options.init_checkpoint)
    check_init_checkpoint_is_there(options)
    check_vocab_matches_config(options.bert_config, options.vocab_file, options.bert_config_file)


def check_sequence_length(options) -> None:
    """max_seq_length must fit the model's position embeddings (the original's check)."""
    if options.max_seq_length > options.bert_config.max_position_embeddings:
        raise ValueError(
            f"Cannot use sequence length {options.max_seq_length} because the BERT model was only "
            f"trained up to sequence length {options.bert_config.max_position_embeddings} "
            "(max_position_embeddings)"
        )


class FinetuningTask(Task):
    """What the fine-tuning tasks share: after the strategy exists, `setup` says whether it is
    a TPU and whether batches are trimmed; new models load init_checkpoint (or come with the
    exported encoder's weights)."""

    def __init__(self, options: FinetuningOptions):
        super().__init__(options)
        self.setup: FinetuningSetup | None = None

    def prepare(self, strategy: tf.distribute.Strategy) -> None:
        super().prepare(strategy)
        is_tpu = isinstance(strategy, tf.distribute.TPUStrategy)
        self.setup = FinetuningSetup(strategy, is_tpu, self.options.trim_padding and not is_tpu)

    def initialize(self, model) -> None:
        initialize_weights(model, self.options)


@dataclasses.dataclass(frozen=True)
class FinetuningSetup:
    """What a fine-tuning run decides once, before reading data: the strategy, whether it is a
    TPU (full batches, static shapes) and so whether batches are cut to their longest example."""

    strategy: tf.distribute.Strategy
    is_tpu: bool
    trim_padding: bool


def check_precision_options(options) -> None:
    """A --dtype other than float32 needs a BertEncoder: a TF Hub encoder (--hub_module_handle)
    runs in the precision it was exported in, so the flag would do nothing. A --serving_dtype
    other than float32 needs the fused serving encoder: --fast_kernels, a BertEncoder (no
    --hub_module_handle) and, where the task has --feature_mode, finetune."""
    if options.dtype != "float32" and options.hub_module_handle:
        raise ValueError(
            f"`dtype={options.dtype}` does not apply to a TF Hub encoder (`hub_module_handle`), "
            "which computes in the precision it was exported in (float32); leave `dtype` at "
            "float32, or fine-tune from the checkpoint the module was exported from"
        )
    if options.serving_dtype == "float32":
        return
    feature_mode = getattr(options, "feature_mode", None)
    if (
        not options.fast_kernels
        or options.hub_module_handle
        or feature_mode not in (None, "finetune")
    ):
        needs = " and `feature_mode=finetune`" if feature_mode is not None else ""
        raise ValueError(
            f"`serving_dtype={options.serving_dtype}` needs `fast_kernels`{needs} without "
            "`hub_module_handle` (the serving encoder is then FusedInferenceEncoder)"
        )


def serving_encoder_dtype(options, model) -> str | None:
    """--serving_dtype where a serving export runs `model`'s encoder as FusedInferenceEncoder
    (--fast_kernels, heads on a BertEncoder: FusedEncoderModel); None where it serves the Keras
    model as it is (a TF Hub encoder, a frozen-feature head, --fast_kernels=false)."""
    fused = options.fast_kernels and FusedEncoderModel.can_run(model)
    return options.serving_dtype if fused else None


def epoch_train_steps(num_examples: int, options) -> int:
    """Updates for num_train_epochs over num_examples, as the original (rounded down)."""
    num_train_steps = int(num_examples / options.train_batch_size * options.num_train_epochs)
    if num_train_steps < 1:
        raise ValueError(
            f"{num_examples} training examples, train_batch_size {options.train_batch_size} and "
            f"num_train_epochs {options.num_train_epochs} give no training step"
        )
    return num_train_steps


def create_encoder(options):
    """The encoder a fine-tuning run starts from: the exported encoder of
    options.hub_module_handle (export_tfhub.py --export_type=model; float32, as exported; its
    weights are the starting point), else a BertEncoder of options.bert_config in options.dtype
    (weights loaded later by load_init_checkpoint)."""
    if getattr(options, "hub_module_handle", None):
        return ExportedBertEncoder(options.hub_module_handle)
    return BertEncoder.from_bert_config(options.bert_config, dtype=options.dtype)


def validate_init_source(options) -> None:
    """One starting point: hub_module_handle or init_checkpoint, not both."""
    if getattr(options, "hub_module_handle", None) and options.init_checkpoint:
        raise ValueError(
            "Give either `hub_module_handle` (its weights are the starting point) or "
            "`init_checkpoint`, not both."
        )


def check_init_checkpoint_is_there(options) -> None:
    """An init_checkpoint that is there and holds BERT weights of a layout read here, found
    out before the data is converted (its index or header only is read): a mistyped path would
    otherwise stop the run only after the training set's features are written. After the
    casing check, which reads the path's name only, as the original's."""
    if options.init_checkpoint:
        with checkpoint_read_errors_named(options.init_checkpoint):
            detect_checkpoint_format(options.init_checkpoint)


def initialize_weights(model, options, target=None, labels: list[str] | None = None) -> None:
    """The runner's initialize_fn of a new model: with options.hub_module_handle the encoder's
    weights came with it; else options.init_checkpoint is loaded into `target` (default: the
    whole model), as load_init_checkpoint says, with options.do_train allowing new heads and
    `labels` the task's label names (None for regression)."""
    if getattr(options, "hub_module_handle", None):
        logging.info("Initialized from the exported encoder %s", options.hub_module_handle)
    else:
        load_init_checkpoint(
            model if target is None else target,
            options.init_checkpoint,
            new_heads_allowed=bool(getattr(options, "do_train", False)),
            labels=labels,
        )


def load_init_checkpoint(
    model, init_checkpoint: str | None, new_heads_allowed=False, labels=None
) -> None:
    """Loads init_checkpoint (any layout) into `model`; heads absent from it keep their
    initialization (fine-tuning from a pre-training checkpoint).

    A checkpoint's head that does not fit the task, of another number of outputs or of other
    label names (where its files name them, and `labels` the task's), is left out with a
    warning when `new_heads_allowed` (training starts a new head), and is an error without
    it (evaluating or predicting would run it). So is the head of another Hugging Face class
    named as this model's (transformers names a sentence classifier's, a token classifier's and
    a multiple-choice model's heads alike; config.json's class tells them apart). One of the
    same names numbered otherwise (a Hugging Face NER model's B-PER, ... against the task's
    sorted tags) is reordered to the task's numbering.
    """
    if not init_checkpoint:
        logging.warning("No init_checkpoint: fine-tuning from random weights")
        return
    named = head_labels.classifier_named_head(model)
    head = named[1] if named is not None else None
    initial_head = [variable.numpy() for variable in head.weights] if head is not None else []
    task_head = _task_head_weights(model)
    initial_task_head = [variable.numpy() for variable in task_head]
    try:
        checkpoint_format = load_bert_weights(model, init_checkpoint)
    except CheckpointMismatchError as error:
        if not (new_heads_allowed and error.head_sizes and hasattr(model, "encoder")):
            raise
        # First the encoder, whose own mismatch (another model size) is the error to report.
        checkpoint_format = load_bert_weights(model.encoder, init_checkpoint)
        for part, size in error.head_sizes.items():
            if part == "multiple_choice":
                # A multiple-choice head scores one choice (1 output); transformers names a
                # sentence classifier's head alike, so that is what such a file most likely is.
                found = (
                    f"a head of {size} outputs under a multiple-choice head's names, which has "
                    "1 (most likely a sentence classifier's, which transformers names alike)"
                )
            else:
                found = (
                    f"a {part} head of {size} outputs where this task's has "
                    f"{getattr(model, part).num_classes}"
                )
            logging.warning(
                "%s holds %s: training starts from its encoder and a new head",
                init_checkpoint,
                found,
            )
    else:
        if head is not None and _head_was_read(head.weights, initial_head):
            other_class = head_labels.other_head_class(init_checkpoint, named[0])
            if other_class is not None:
                message = (
                    f"{init_checkpoint} is a Hugging Face {other_class}: its `classifier` head is "
                    f"not a {head_labels.CLASSIFIER_NAMED_HEADS[named[0]]}'s"
                )
                _refuse_or_replace_head(head, initial_head, message, new_heads_allowed)
            elif labels and head_labels.sized_head(model) is head:
                _match_head_labels(
                    head, initial_head, init_checkpoint, list(labels), new_heads_allowed
                )
    if not new_heads_allowed and task_head and not _head_was_read(task_head, initial_task_head):
        # The original predicts from such a head silently; its outputs mean nothing.
        logging.warning(
            "%s holds no weights for %s's head (a pre-trained model, or one fine-tuned for "
            "another task): evaluating or predicting without --do_train=true runs a randomly "
            "initialized head; fine-tune first, or pass a checkpoint fine-tuned for this task",
            init_checkpoint,
            type(model).__name__,
        )
    logging.info("Initialized from %s (%s)", init_checkpoint, checkpoint_format)


def _task_head_weights(model) -> list:
    """The weights of `model` outside its encoder (its task head), [] for a model without an
    `encoder` attribute."""
    encoder = getattr(model, "encoder", None)
    if encoder is None:
        return []
    encoder_weights = {id(variable) for variable in encoder.weights}
    return [variable for variable in model.weights if id(variable) not in encoder_weights]


def _head_was_read(weights: list, initial_values: list) -> bool:
    """Whether loading replaced the initialization of a head's `weights`; a checkpoint without
    the head leaves them as they were."""
    return any(
        not np.array_equal(variable.numpy(), initial)
        for variable, initial in zip(weights, initial_values, strict=True)
    )


def _match_head_labels(head, initial_values, init_checkpoint, labels, new_heads_allowed) -> None:
    """Reorders, or refuses or replaces, a head read from init_checkpoint whose files name its
    labels otherwise than the task (see load_init_checkpoint)."""
    names = head_labels.head_label_names(init_checkpoint, len(labels))
    if names is None or head_labels.are_generic(names) or names == labels:
        return
    if sorted(names) == sorted(labels):
        head_labels.reorder_head_outputs(head, names, labels)
        logging.info(
            "%s numbers its labels %s; its head's outputs are reordered to this task's %s",
            init_checkpoint,
            names,
            labels,
        )
        return
    message = (
        f"{init_checkpoint} holds a head for the labels {names}, where this task's are {labels}"
    )
    _refuse_or_replace_head(
        head,
        initial_values,
        message,
        new_heads_allowed,
        "its outputs would be read as labels they are not. Give a checkpoint of this task's labels",
    )


def _refuse_or_replace_head(
    head,
    initial_values,
    message,
    new_heads_allowed,
    consequence="its outputs would not mean what this model's mean. Give a checkpoint of this task's kind",
) -> None:
    """A head read from a checkpoint that does not fit the task: an error (`message`, then
    what running it would do, `consequence`), or with `new_heads_allowed` its initial values
    back (a new head) and a warning."""
    if not new_heads_allowed:
        raise ValueError(
            f"{message}: {consequence}, or train (--do_train=true) to start a new head"
        )
    for variable, initial in zip(head.weights, initial_values, strict=True):
        variable.assign(initial)
    logging.warning("%s: training starts from its encoder and a new head", message)


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
            vocab_size=model_vocab_size(options),
        )

    return dataset_fn


def model_vocab_size(options) -> int | None:
    """The model's vocab_size, against which the readers check the records' token ids."""
    return options.bert_config.vocab_size if options.bert_config is not None else None
