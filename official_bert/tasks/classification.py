"""Sentence (pair) classification: GLUE, XNLI, or any TSV/CSV (the original run_classifier.py).

ClassificationTask fine-tunes a BertClassifier (or, with a frozen_* feature_mode, a head over a
frozen encoder) on a DataProcessor's task and writes the original outputs: eval_results.txt,
test_results.tsv, and after training a raw-text serving SavedModel.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
from absl import logging

from official_bert.config import write_text_atomically
from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.classification.dataset import classifier_dataset
from official_bert.data.classification.examples import DataProcessor
from official_bert.data.classification.features import (
    ClassifierRecords,
    encode_classifier_examples,
    encode_classifier_windows,
    prepare_classifier_records,
)
from official_bert.data.tagging.character_ner import CHARACTER_NER_TASK_NAMES
from official_bert.evaluation.glue_metrics import glue_metrics
from official_bert.export.classifier_serving import export_classifier_serving_model
from official_bert.models import BertClassifier, FeatureBasedClassifier
from official_bert.option_flags import option
from official_bert.scalar_mix_weights import SCALAR_MIX_WEIGHTS_FILE, write_scalar_mix_weights
from official_bert.tasks.classification_objective import (
    classifier_loss_fn,
    mean_batch_loss,
    mean_eval_loss,
    per_example_eval_loss,
    softmax,
)
from official_bert.tasks.finetuning import (
    FinetuningOptions,
    FinetuningSetup,
    FinetuningTask,
    check_precision_options,
    create_encoder,
    epoch_train_steps,
    initialize_weights,
    model_vocab_size,
    serving_encoder_dtype,
    serving_export_dir,
    train_dataset_fn,
    validate_finetuning_options,
)
from official_bert.tasks.window_aggregation import WINDOW_AGGREGATIONS, aggregate_windows
from official_bert.training.prediction import predict
from official_bert.training.runner import Runner, write_eval_results

# --feature_mode: "finetune" trains the whole BertClassifier (the original run_classifier.py);
# "frozen_<features>" trains a FeatureBasedClassifier over a frozen encoder, <features> one of
# models.feature_based_classifier.FEATURES.
FEATURE_MODES = ("finetune", "frozen_last", "frozen_concat_last4", "frozen_scalar_mix")


@dataclasses.dataclass(kw_only=True)
class ClassifierOptions(FinetuningOptions):
    """The settings of run_classifier.py: one task (a classification or a tagging one)."""

    # === The original flags of one task ===
    task_name: str = option(
        help="The task: a GLUE name, xnli, generic, conll, chinese_ner (msra_ner, "
        "peoples_daily_ner), or the multiple-choice swag or c3."
    )
    data_dir: str = option(help="The task's folder (train.tsv, dev.tsv, test.tsv, ...).")
    # === TF2 flags ===
    processor_module: str | None = option(
        None,
        help="Your own tasks: a Python file (my_tasks.py) or an importable module name whose "
        "processors (@register_processor) --task_name may then name; imported first.",
    )
    feature_mode: str = option(
        "finetune",
        choices=FEATURE_MODES,
        help="finetune: train the whole model (the original). frozen_last / "
        "frozen_concat_last4 / frozen_scalar_mix: keep the encoder frozen (dropout off) and "
        "train a head on the [CLS] vector (each token's vector for tagging) of the last layer / "
        "of the last 4 layers concatenated / of a learned ScalarMix of all layers (written to "
        "output_dir/scalar_mix_weights.json).",
    )
    export_dir: str | None = option(
        None,
        help="Raw-text serving SavedModel, written after training (default "
        "output_dir/serving_model; '' skips). Named without --do_train: the model of "
        "output_dir's checkpoint (or --init_checkpoint) is exported.",
    )
    serving_dtype: str = option(
        "float32",
        choices=("float32", "bfloat16"),
        help="The serving model's encoder (classification, multi-label, tagging), with "
        "--fast_kernels (fine-tuned models): FusedInferenceEncoder with its weights in this "
        "dtype; bfloat16 is about 1.5x faster on CPUs with AVX512_BF16 or AMX (probabilities "
        "within ~1e-2).",
    )
    doc_stride: int | None = option(
        None,
        help="Long documents: cut an example longer than max_seq_length into windows starting "
        "this many wordpieces apart (of a pair, text_b; text_a is repeated in each) instead of "
        "truncating it. Classification trains on each window with the example's label and "
        "combines the windows' logits (--window_aggregation) for eval, predict and the "
        "serving model; tagging tags each word in the window where it has the most context. "
        "Default: truncate (the original; tagging then splits long sentences without overlap).",
    )
    window_aggregation: str = option(
        "mean",
        choices=WINDOW_AGGREGATIONS,
        help="With --doc_stride, how a classification example's windows combine: the mean, "
        "the per-class max, or the first window's logits.",
    )
    # === The generic task (--task_name=generic), conll and XNLI ===
    text_a_column: str = option("0", help="generic: index or header name of the first text.")
    text_b_column: str | None = option(
        None, help="generic: index or name of the second text, if any."
    )
    label_column: str = option(
        "-1", help="generic: index or header name of the label; conll: the tag's column."
    )
    labels: list[str] | None = option(
        None,
        help="generic, conll, chinese_ner: the label (tag) names (default: those of train).",
    )
    is_regression: bool = option(False, help="generic: the label is a number.")
    has_header: bool = option(True, help="generic: the files start with a header line.")
    multi_label: bool = option(
        False,
        help="generic: each row has a set of labels (zero or more, --label_separator between "
        "them in the label column): sigmoid outputs, binary cross-entropy, per-label thresholds "
        "tuned on dev.",
    )
    label_separator: str = option(
        ",", help="generic --multi_label: what separates the labels of a row."
    )
    xnli_language: str = option("zh", help="xnli: the language to train and evaluate.")
    # Keyword arguments of the task's processor; by default those of the flags above that the
    # task reads (see processor_arguments).
    processor_kwargs: dict | None = option(None, flag=False)

    def processor_arguments(self) -> dict:
        """The keyword arguments of the task's processor: processor_kwargs when given, else the
        options of the generic task, XNLI or conll that apply to task_name."""
        if self.processor_kwargs is not None:
            return dict(self.processor_kwargs)
        task = self.task_name.lower()
        if task == "generic":
            return dict(
                text_a_column=self.text_a_column,
                text_b_column=self.text_b_column,
                label_column=self.label_column,
                labels=self.labels,
                is_regression=self.is_regression,
                has_header=self.has_header,
                multi_label=self.multi_label,
                label_separator=self.label_separator,
            )
        if task == "xnli":
            return dict(language=self.xnli_language)
        if task == "conll":
            return dict(label_column=self.label_column, labels=self.labels)
        if task in CHARACTER_NER_TASK_NAMES:
            return dict(labels=self.labels)
        return {}


def validate_classifier_options(options: ClassifierOptions) -> None:
    """The original run_classifier.py checks, each naming the flag at fault."""
    validate_finetuning_options(options)
    if options.feature_mode not in FEATURE_MODES:
        raise ValueError(
            f"`feature_mode` must be one of {list(FEATURE_MODES)}, got {options.feature_mode!r}"
        )
    if options.multi_label:
        if options.task_name.lower() != "generic" and options.processor_kwargs is None:
            raise ValueError(
                f"`multi_label` is for --task_name=generic (a label column of label sets), not "
                f"{options.task_name!r}"
            )
        if options.is_regression:
            raise ValueError("`multi_label` and `is_regression` exclude each other")
        if not options.label_separator:
            raise ValueError("`label_separator` must not be empty with `multi_label`")
        if options.doc_stride is not None:
            raise ValueError(
                "`multi_label` does not window long documents yet: leave `doc_stride` unset "
                "(long examples are truncated to max_seq_length)"
            )
    if options.doc_stride is not None and options.doc_stride < 1:
        raise ValueError(f"`doc_stride` must be a positive number, got {options.doc_stride}")
    if options.window_aggregation not in WINDOW_AGGREGATIONS:
        raise ValueError(
            f"`window_aggregation` must be one of {list(WINDOW_AGGREGATIONS)}, got "
            f"{options.window_aggregation!r}"
        )
    if options.feature_mode == "frozen_concat_last4" and options.bert_config.num_hidden_layers < 4:
        raise ValueError(
            "`feature_mode=frozen_concat_last4` needs at least 4 encoder layers; "
            f"num_hidden_layers is {options.bert_config.num_hidden_layers}"
        )


# The records of each split, by the names of the original run_classifier.py.
RECORD_FILES = {"train": "train.tf_record", "dev": "eval.tf_record", "test": "predict.tf_record"}


def split_records(
    processor: DataProcessor,
    split: str,
    packer: BertInputPacker,
    directory: str,
    options: FinetuningOptions,
    batch_size: int,
    setup: FinetuningSetup,
    encode_examples=encode_classifier_examples,
    doc_stride: int | None = None,
) -> ClassifierRecords:
    """The cached TFRecords of one split ("train", "dev", "test") in `directory`, made by
    `encode_examples` (see prepare_classifier_records; with `doc_stride`, as windows).

    A TPU needs every batch full: eval and predict sets are padded with examples that have
    is_real_example = 0, as the original did with PaddingInputExample.
    """
    return prepare_classifier_records(
        processor,
        split,
        packer,
        os.path.join(directory, RECORD_FILES[split]),
        options.vocab_file,
        pad_to_multiple_of=batch_size if setup.is_tpu and split != "train" else 1,
        max_examples=options.max_train_examples if split == "train" else 0,
        encode_examples=encode_examples,
        doc_stride=doc_stride,
    )


def requested_split_records(
    processor,
    packer: BertInputPacker,
    options: ClassifierOptions,
    setup: FinetuningSetup,
    encode_examples=encode_classifier_examples,
) -> tuple[ClassifierRecords | None, ClassifierRecords | None, ClassifierRecords | None]:
    """The records of the train, dev and test splits in output_dir, each None unless do_train,
    do_eval, do_predict asks for it. All are read before training, so bad data fails fast."""
    asked = {
        "train": (options.do_train, options.train_batch_size),
        "dev": (options.do_eval, options.eval_batch_size),
        "test": (options.do_predict, options.predict_batch_size),
    }
    return tuple(
        split_records(
            processor,
            split,
            packer,
            options.output_dir,
            options,
            batch_size,
            setup,
            encode_examples,
            options.doc_stride,
        )
        if wanted
        else None
        for split, (wanted, batch_size) in asked.items()
    )


def predict_records(
    model,
    records: ClassifierRecords,
    batch_size: int,
    options: FinetuningOptions,
    setup: FinetuningSetup,
    keep: tuple[str, ...] = ("label_ids",),
) -> dict[str, np.ndarray]:
    """The model's outputs on the real examples of `records`, in file order: predict()'s arrays
    (the model's outputs and the batch fields of `keep`) without the TPU padding examples."""
    dataset = classifier_dataset(
        records.path,
        batch_size,
        options.max_seq_length,
        is_training=False,
        drop_remainder=setup.is_tpu,
        trim_padding=setup.trim_padding,
        vocab_size=model_vocab_size(options),
    )
    outputs = predict(setup.strategy, model, dataset, keep=(*keep, "is_real_example"))
    real = outputs.pop("is_real_example") > 0
    return {name: value[real] for name, value in outputs.items()}


def evaluate_classifier(
    task_name: str,
    logits: np.ndarray,
    label_ids: np.ndarray,
    is_regression: bool,
    path: str,
    step,
    batch_size: int,
) -> dict:
    """The original eval_results: eval_<GLUE metric> of the task, eval_loss, and the
    Estimator's `loss` (the mean of the loss of each evaluation batch of `batch_size`, in
    order); written to `path` ("key = value" lines with global_step) and returned."""
    metrics = glue_metrics(task_name, label_ids, logits, is_regression)
    eval_results = {f"eval_{name}": value for name, value in metrics.items()}
    eval_results["eval_loss"] = mean_eval_loss(
        logits, label_ids, np.ones(len(label_ids)), is_regression
    )
    eval_results["loss"] = mean_batch_loss(
        per_example_eval_loss(logits, label_ids, is_regression), batch_size
    )
    write_eval_results(path, eval_results, step)
    logging.info("Eval results (%s): %s", path, eval_results)
    return eval_results


def write_test_results(path: str, logits: np.ndarray, is_regression: bool) -> np.ndarray:
    """The original test_results.tsv at `path`: a line per test example, in test order, with its
    class probabilities tab-separated (the softmax of `logits`, float32 [examples, num_classes]),
    or its score for regression (`logits` [examples, 1]), each as a float32 prints.

    Returns the rows written, float64 [examples, num_classes] (probabilities) or float32
    [examples, 1] (scores).
    """
    values = logits.reshape(-1, 1) if is_regression else softmax(logits)
    # Written as float32, as the original wrote its estimator's float32 probabilities.
    lines = ["\t".join(str(np.float32(value)) for value in row) for row in values]
    write_text_atomically(path, "".join(line + "\n" for line in lines))
    logging.info("Wrote %d predictions to %s", len(lines), path)
    return values


class ClassificationTask(FinetuningTask):
    """Sentence (pair) classification or regression on a DataProcessor's task.

    Writes to output_dir: train/eval/predict .tf_record (reused while inputs and settings are
    unchanged), checkpoints (a rerun resumes), eval_results.txt ("key = value": eval_accuracy,
    eval_loss, the task's GLUE metric as eval_f1 / eval_mcc / eval_pearson / eval_spearman,
    global_step), test_results.tsv (class probabilities of each test example, tab-separated;
    the score for regression), and after training a raw-text serving SavedModel
    (output_dir/serving_model unless export_dir says otherwise).

    feature_mode "frozen_*" trains a FeatureBasedClassifier: the encoder's weights stay those of
    init_checkpoint (or of the exported encoder), only the head (and the scalar mix) learn.
    "frozen_scalar_mix" also writes the learned mix after training to
    output_dir/scalar_mix_weights.json (see official_bert.scalar_mix_weights).

    With doc_stride (long documents), the records hold windows (with example_index), training
    sees every window with its example's label, and eval_results.txt and test_results.tsv are
    per example: the windows' logits combined by window_aggregation (tasks/window_aggregation).
    The serving model windows and combines its inputs the same way (doc_stride and
    window_aggregation), so it serves test_results.tsv's probabilities.
    """

    # What the task does, in words (for messages).
    kind = "sentence (pair) classification"
    # How a split's examples become records (see prepare_classifier_records), without and with
    # doc_stride.
    encode_examples = staticmethod(encode_classifier_examples)
    encode_windows = staticmethod(encode_classifier_windows)

    def __init__(self, options: ClassifierOptions, processor):
        super().__init__(options)
        self.processor = processor
        self.labels = processor.get_labels()
        self.packer: BertInputPacker | None = None
        self.records: dict[str, ClassifierRecords | None] = {}

    def validate(self) -> None:
        validate_classifier_options(self.options)
        check_precision_options(self.options)

    def prepare(self, strategy) -> None:
        super().prepare(strategy)
        options = self.options
        self.packer = BertInputPacker(
            options.vocab_file,
            options.max_seq_length,
            options.do_lower_case,
            preserve_unused_tokens=options.preserve_unused_tokens,
        )
        encode = self.encode_examples if options.doc_stride is None else self.encode_windows
        train, dev, test = requested_split_records(
            self.processor, self.packer, options, self.setup, encode
        )
        self.records = {"train": train, "dev": dev, "test": test}
        if train is not None:
            self.num_train_steps = epoch_train_steps(train.num_examples, options)
            logging.info(
                "Training: %d examples, batch %d, %d steps (%d warm-up)",
                train.num_examples,
                options.train_batch_size,
                self.num_train_steps,
                self.num_warmup_steps(),
            )

    @property
    def num_classes(self) -> int:
        return 1 if self.labels is None else len(self.labels)

    def build_model(self):
        options = self.options
        encoder = create_encoder(options)
        if options.feature_mode == "finetune":
            model = BertClassifier(encoder, num_classes=self.num_classes)
        else:
            model = FeatureBasedClassifier(
                encoder,
                num_classes=self.num_classes,
                features=options.feature_mode.removeprefix("frozen_"),
            )
        model.build()
        return model

    def loss_fn(self):
        return classifier_loss_fn(self.labels is None)

    def initialize(self, model) -> None:
        # The head is new unless the checkpoint was fine-tuned already; a feature-based head is
        # always new (its input is not the encoder's output the checkpoint's head was trained on).
        frozen = self.options.feature_mode != "finetune"
        initialize_weights(
            model, self.options, model.encoder if frozen else model, labels=self.labels
        )

    def train_dataset(self, input_context):
        return train_dataset_fn(
            classifier_dataset, self.records["train"].path, self.options, self.setup
        )(input_context)

    def after_training(self, runner: Runner) -> dict:
        options = self.options
        if options.feature_mode == "frozen_scalar_mix" and runner.is_chief:
            path = os.path.join(options.output_dir, SCALAR_MIX_WEIGHTS_FILE)
            scalar_mix = write_scalar_mix_weights(path, runner.model.scalar_mix)
            logging.info("Learned layer mix (%s): %s", path, scalar_mix)
            return {"scalar_mix": scalar_mix}
        return {}

    def export(self, runner: Runner) -> str | None:
        options = self.options
        export_dir = serving_export_dir(options)
        if export_dir is None:
            return None
        # With doc_stride the serving model windows and combines as eval and predict do.
        return export_classifier_serving_model(
            runner.model,
            self.packer,
            self.labels,
            self.processor.takes_pairs,
            export_dir,
            encoder_dtype=serving_encoder_dtype(options, runner.model),
            doc_stride=options.doc_stride,
            window_aggregation=options.window_aggregation,
        )

    def _example_outputs(self, runner: Runner, split: str, batch_size: int) -> dict:
        """predict_records' logits ("outputs") and label_ids of a split, one row per example:
        with doc_stride, the windows' logits combined per example (window_aggregation) and the
        example's label."""
        options = self.options
        if options.doc_stride is None:
            return predict_records(
                runner.model, self.records[split], batch_size, options, self.setup
            )
        outputs = predict_records(
            runner.model,
            self.records[split],
            batch_size,
            options,
            self.setup,
            keep=("label_ids", "example_index"),
        )
        logits, first_windows = aggregate_windows(
            outputs["outputs"], outputs["example_index"], options.window_aggregation
        )
        return {"outputs": logits, "label_ids": outputs["label_ids"][first_windows]}

    def evaluate(self, runner: Runner) -> dict:
        options = self.options
        outputs = self._example_outputs(runner, "dev", options.eval_batch_size)
        return {
            "eval": evaluate_classifier(
                options.task_name,
                outputs["outputs"],
                outputs["label_ids"],
                self.labels is None,
                os.path.join(options.output_dir, "eval_results.txt"),
                runner.step,
                options.eval_batch_size,
            )
        }

    def predict(self, runner: Runner) -> dict:
        options = self.options
        logits = self._example_outputs(runner, "test", options.predict_batch_size)["outputs"]
        path = os.path.join(options.output_dir, "test_results.tsv")
        return {"predictions": write_test_results(path, logits, self.labels is None)}
