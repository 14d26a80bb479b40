"""Fine-tuning a BERT classifier on a GLUE-style task with the runner (run_classifier.py)."""

from __future__ import annotations

import dataclasses
import os
import time

import keras
import numpy as np
from absl import logging

from official_bert.config import BertConfig, check_vocab_matches_config, write_text_atomically
from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.classification.dataset import classifier_dataset
from official_bert.data.classification.examples import DataProcessor, get_processor
from official_bert.data.classification.features import (
    ClassifierRecords,
    encode_classifier_examples,
    prepare_classifier_records,
)
from official_bert.data.tagging.examples import TaggingProcessor
from official_bert.evaluation.glue_metrics import glue_metrics
from official_bert.export.classifier_serving import export_classifier_serving_model
from official_bert.models import BertClassifier, FeatureBasedClassifier
from official_bert.scalar_mix_weights import SCALAR_MIX_WEIGHTS_FILE, write_scalar_mix_weights
from official_bert.tokenization import validate_case_matches_checkpoint
from official_bert.training.classifier_objective import (
    classifier_loss_fn,
    mean_eval_loss,
    softmax,
)
from official_bert.training.finetuning import (
    FinetuningSetup,
    create_encoder,
    epoch_train_steps,
    finetuning_runner,
    initialize_weights,
    start_finetuning,
    train_dataset_fn,
    validate_init_source,
)
from official_bert.training.prediction import predict
from official_bert.training.runner import write_eval_results
from official_bert.training.training_options import TrainingOptions

# --feature_mode: "finetune" trains the whole BertClassifier (the original run_classifier.py);
# "frozen_<features>" trains a FeatureBasedClassifier over a frozen encoder, <features> one of
# models.feature_based_classifier.FEATURES.
FEATURE_MODES = ("finetune", "frozen_last", "frozen_concat_last4", "frozen_scalar_mix")


@dataclasses.dataclass(kw_only=True)
class FinetuningOptions(TrainingOptions):
    """The settings every classifier fine-tuning script shares (run_classifier.py,
    run_multitask.py): the original flag names, then the TF2 ones, beside the shared ones of
    TrainingOptions."""

    bert_config: BertConfig
    vocab_file: str
    do_lower_case: bool = True
    max_seq_length: int = 128
    do_train: bool = False
    do_eval: bool = False
    do_predict: bool = False
    train_batch_size: int = 32
    eval_batch_size: int = 8
    predict_batch_size: int = 8
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    # Train on the first N training examples (of each task) only (0: all).
    max_train_examples: int = 0
    # Cut each batch to its longest example (see classifier_dataset); never on TPUs.
    trim_padding: bool = True
    # An exported encoder (export_tfhub.py --export_type=model) to fine-tune instead of
    # bert_config + init_checkpoint; its weights are the starting point.
    hub_module_handle: str | None = None
    bert_config_file: str | None = None  # only for error messages


@dataclasses.dataclass(kw_only=True)
class ClassifierOptions(FinetuningOptions):
    """The settings of run_classifier.py: one task."""

    task_name: str
    data_dir: str
    # Keyword arguments of the task's processor (the generic task's columns, XNLI's language).
    processor_kwargs: dict = dataclasses.field(default_factory=dict)
    # Where the raw-text serving SavedModel goes after training; "" to skip it.
    export_dir: str | None = None
    # One of FEATURE_MODES.
    feature_mode: str = "finetune"


def validate_finetuning_options(options: FinetuningOptions) -> None:
    """The original run_classifier.py checks of what to do and of the model settings, each
    naming its flag."""
    if not (options.do_train or options.do_eval or options.do_predict):
        raise ValueError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
    if options.max_seq_length > options.bert_config.max_position_embeddings:
        raise ValueError(
            f"Cannot use sequence length {options.max_seq_length} because the BERT model was only "
            f"trained up to sequence length {options.bert_config.max_position_embeddings} "
            "(max_position_embeddings)"
        )
    validate_init_source(options)
    validate_case_matches_checkpoint(options.do_lower_case, options.init_checkpoint)
    check_vocab_matches_config(options.bert_config, options.vocab_file, options.bert_config_file)


def validate_classifier_options(options: ClassifierOptions) -> None:
    """The original run_classifier.py checks, each naming the flag at fault."""
    validate_finetuning_options(options)
    if options.feature_mode not in FEATURE_MODES:
        raise ValueError(
            f"`feature_mode` must be one of {list(FEATURE_MODES)}, got {options.feature_mode!r}"
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
) -> ClassifierRecords:
    """The cached TFRecords of one split ("train", "dev", "test") in `directory`, made by
    `encode_examples` (see prepare_classifier_records).

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
    )


def requested_split_records(
    processor: DataProcessor | TaggingProcessor,
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
    )
    outputs = predict(setup.strategy, model, dataset, keep=(*keep, "is_real_example"))
    real = outputs.pop("is_real_example") > 0
    return {name: value[real] for name, value in outputs.items()}


def evaluate_classifier(
    task_name: str, logits: np.ndarray, label_ids: np.ndarray, is_regression: bool, path: str, step
) -> dict:
    """The original eval_results: eval_<GLUE metric> of the task, eval_loss; written to `path`
    ("key = value" lines with global_step) and returned."""
    metrics = glue_metrics(task_name, label_ids, logits, is_regression)
    eval_results = {f"eval_{name}": value for name, value in metrics.items()}
    eval_results["eval_loss"] = mean_eval_loss(
        logits, label_ids, np.ones(len(label_ids)), is_regression
    )
    write_eval_results(path, eval_results, step)
    logging.info("Eval results (%s): %s", path, eval_results)
    return eval_results


def initialize_model(model, options: ClassifierOptions) -> None:
    """Loads the starting weights into a new model (the runner's initialize_fn)."""
    # The head is new unless the checkpoint was fine-tuned already; a feature-based head is
    # always new (its input is not the encoder's output the checkpoint's head was trained on).
    initialize_weights(
        model, options, model if options.feature_mode == "finetune" else model.encoder
    )


def train_model(
    runner,
    train_records: ClassifierRecords,
    num_train_steps: int,
    options: ClassifierOptions,
    setup: FinetuningSetup,
) -> dict:
    """Trains runner.model on train_records for num_train_steps (from the last checkpoint), then
    writes the learned layer mix of feature_mode frozen_scalar_mix to output_dir.

    Returns {"history": [(step, loss)], "train_seconds", and "scalar_mix" (the dict written to
    scalar_mix_weights.json) for frozen_scalar_mix}.
    """
    logging.info(
        "Training: %d examples, batch %d, %d steps (%d warm-up)",
        train_records.num_examples,
        options.train_batch_size,
        num_train_steps,
        int(num_train_steps * options.warmup_proportion),
    )
    start = time.time()
    results = {
        "history": runner.train(
            train_dataset_fn(classifier_dataset, train_records.path, options, setup),
            options.train_batch_size,
        )
    }
    results["train_seconds"] = time.time() - start
    if options.feature_mode == "frozen_scalar_mix" and runner.is_chief:
        path = os.path.join(options.output_dir, SCALAR_MIX_WEIGHTS_FILE)
        results["scalar_mix"] = write_scalar_mix_weights(path, runner.model.scalar_mix)
        logging.info("Learned layer mix (%s): %s", path, results["scalar_mix"])
    return results


def write_test_results(path: str, logits: np.ndarray, is_regression: bool) -> np.ndarray:
    """The original test_results.tsv at `path`: a line per test example, in test order, with its
    class probabilities tab-separated (the softmax of `logits`, float32 [examples, num_classes]),
    or its score for regression (`logits` [examples, 1]).

    Returns the rows written, float64 [examples, num_classes] (probabilities) or float32
    [examples, 1] (scores).
    """
    values = logits.reshape(-1, 1) if is_regression else softmax(logits)
    lines = ["\t".join(str(value) for value in row) for row in values]
    write_text_atomically(path, "".join(line + "\n" for line in lines))
    logging.info("Wrote %d predictions to %s", len(lines), path)
    return values


def run_classifier(options: ClassifierOptions) -> dict:
    """Trains, evaluates and/or predicts as the original run_classifier.py.

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

    A token tagging task (a TaggingProcessor's, e.g. task_name "conll") is handed to
    tagging_finetuning.run_token_tagging, which documents its own outputs.

    Returns:
      {"history": [(step, loss)], "eval": {...}, "predictions": np.ndarray, "export_dir": str,
       "scalar_mix": the dict written to scalar_mix_weights.json (frozen_scalar_mix)}.
    """
    validate_classifier_options(options)
    processor = get_processor(options.task_name, options.data_dir, **options.processor_kwargs)
    if isinstance(processor, TaggingProcessor):
        from official_bert.training.tagging_finetuning import run_token_tagging

        return run_token_tagging(options, processor)
    labels = processor.get_labels()
    num_classes = 1 if labels is None else len(labels)
    setup = start_finetuning(options)
    packer = BertInputPacker(options.vocab_file, options.max_seq_length, options.do_lower_case)

    train_records, eval_records, test_records = requested_split_records(
        processor, packer, options, setup
    )
    num_train_steps = 0
    if train_records is not None:
        num_train_steps = epoch_train_steps(train_records.num_examples, options)

    def model_fn():
        encoder = create_encoder(options)
        if options.feature_mode == "finetune":
            model = BertClassifier(encoder, num_classes=num_classes)
        else:
            model = FeatureBasedClassifier(
                encoder,
                num_classes=num_classes,
                features=options.feature_mode.removeprefix("frozen_"),
            )
        model.build()
        return model

    runner = finetuning_runner(
        options, setup, model_fn, classifier_loss_fn(labels is None), num_train_steps
    )
    runner.restore_or_initialize(lambda model: initialize_model(model, options))
    results: dict = {"history": []}
    if train_records is not None:
        results.update(train_model(runner, train_records, num_train_steps, options, setup))
        if options.export_dir != "":
            export_dir = options.export_dir or os.path.join(options.output_dir, "serving_model")
            results["export_dir"] = export_classifier_serving_model(
                runner.model, packer, labels, processor.takes_pairs, export_dir
            )
            logging.info("Exported the raw-text serving SavedModel to %s", export_dir)

    if eval_records is not None:
        outputs = predict_records(
            runner.model, eval_records, options.eval_batch_size, options, setup
        )
        results["eval"] = evaluate_classifier(
            options.task_name,
            outputs["outputs"],
            outputs["label_ids"],
            labels is None,
            os.path.join(options.output_dir, "eval_results.txt"),
            runner.step,
        )
    if test_records is not None:
        logits = predict_records(
            runner.model, test_records, options.predict_batch_size, options, setup
        )["outputs"]
        results["predictions"] = write_test_results(
            os.path.join(options.output_dir, "test_results.tsv"), logits, labels is None
        )
    keras.backend.clear_session()
    return results
