"""Fine-tuning a BERT classifier on a GLUE-style task with the runner (run_classifier.py)."""

from __future__ import annotations

import dataclasses
import os
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from official_bert.checkpoints import load_bert_weights
from official_bert.config import BertConfig, check_vocab_matches_config, write_text_atomically
from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.classifier_dataset import classifier_dataset
from official_bert.data.classifier_examples import get_processor
from official_bert.data.classifier_features import prepare_classifier_records
from official_bert.evaluation.glue_metrics import glue_metrics
from official_bert.export.classifier_serving import export_classifier_serving_model
from official_bert.export.exported_bert_encoder import ExportedBertEncoder
from official_bert.models import BertClassifier, BertEncoder, FeatureBasedClassifier
from official_bert.scalar_mix_weights import SCALAR_MIX_WEIGHTS_FILE, write_scalar_mix_weights
from official_bert.tokenization import validate_case_matches_checkpoint
from official_bert.training.classifier_objective import (
    classifier_loss_fn,
    mean_eval_loss,
    softmax,
)
from official_bert.training.distribution import create_strategy
from official_bert.training.optimization import create_optimizer
from official_bert.training.prediction import predict
from official_bert.training.runner import Runner, RunnerSettings, write_eval_results

# --feature_mode: "finetune" trains the whole BertClassifier (the original run_classifier.py);
# "frozen_<features>" trains a FeatureBasedClassifier over a frozen encoder, <features> one of
# models.feature_based_classifier.FEATURES.
FEATURE_MODES = ("finetune", "frozen_last", "frozen_concat_last4", "frozen_scalar_mix")


@dataclasses.dataclass
class ClassifierOptions:
    """The settings of run_classifier.py (original flag names, then the TF2 ones)."""

    bert_config: BertConfig
    task_name: str
    data_dir: str
    vocab_file: str
    output_dir: str
    init_checkpoint: str | None = None
    do_lower_case: bool = True
    max_seq_length: int = 128
    do_train: bool = False
    do_eval: bool = False
    do_predict: bool = False
    train_batch_size: int = 32
    eval_batch_size: int = 8
    predict_batch_size: int = 8
    learning_rate: float = 5e-5
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    save_checkpoints_steps: int = 1000
    steps_per_loop: int = 1000
    distribution_strategy: str = "one_device"
    tpu: str | None = None
    dtype: str = "float32"
    optimizer_type: str = "adamw"
    weight_decay_rate: float = 0.01
    keep_checkpoint_max: int = 5
    log_steps: int = 100
    seed: int | None = None
    # Keyword arguments of the task's processor (the generic task's columns, XNLI's language).
    processor_kwargs: dict = dataclasses.field(default_factory=dict)
    # Train on the first N training examples only (0: all).
    max_train_examples: int = 0
    # Cut each batch to its longest example (see classifier_dataset); never on TPUs.
    trim_padding: bool = True
    # Where the raw-text serving SavedModel goes after training; "" to skip it.
    export_dir: str | None = None
    bert_config_file: str | None = None  # only for error messages
    # An exported encoder (export_tfhub.py --export_type=model) to fine-tune instead of
    # bert_config + init_checkpoint; its weights are the starting point.
    hub_module_handle: str | None = None
    # One of FEATURE_MODES.
    feature_mode: str = "finetune"


def validate_classifier_options(options: ClassifierOptions) -> None:
    """The original run_classifier.py checks, each naming the flag at fault."""
    if not (options.do_train or options.do_eval or options.do_predict):
        raise ValueError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
    if options.max_seq_length > options.bert_config.max_position_embeddings:
        raise ValueError(
            f"Cannot use sequence length {options.max_seq_length} because the BERT model was only "
            f"trained up to sequence length {options.bert_config.max_position_embeddings} "
            "(max_position_embeddings)"
        )
    validate_case_matches_checkpoint(options.do_lower_case, options.init_checkpoint)
    if options.hub_module_handle and options.init_checkpoint:
        raise ValueError(
            "Give either `hub_module_handle` (its weights are the starting point) or "
            "`init_checkpoint`, not both."
        )
    check_vocab_matches_config(options.bert_config, options.vocab_file, options.bert_config_file)
    if options.feature_mode not in FEATURE_MODES:
        raise ValueError(
            f"`feature_mode` must be one of {list(FEATURE_MODES)}, got {options.feature_mode!r}"
        )
    if options.feature_mode == "frozen_concat_last4" and options.bert_config.num_hidden_layers < 4:
        raise ValueError(
            "`feature_mode=frozen_concat_last4` needs at least 4 encoder layers; "
            f"num_hidden_layers is {options.bert_config.num_hidden_layers}"
        )


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

    Returns:
      {"history": [(step, loss)], "eval": {...}, "predictions": np.ndarray, "export_dir": str,
       "scalar_mix": the dict written to scalar_mix_weights.json (frozen_scalar_mix)}.
    """
    validate_classifier_options(options)
    processor = get_processor(options.task_name, options.data_dir, **options.processor_kwargs)
    labels = processor.get_labels()
    num_classes = 1 if labels is None else len(labels)
    tf.io.gfile.makedirs(options.output_dir)
    if options.seed is not None:
        keras.utils.set_random_seed(options.seed)
    # The records are written to output_dir and read by the TPU's host: gs:// on a TPU node.
    tpu_paths = {"output_dir": options.output_dir}
    strategy = create_strategy(options.distribution_strategy, options.tpu, tpu_paths)
    # A TPU needs every batch full: eval and predict sets are padded with examples that have
    # is_real_example = 0, as the original did with PaddingInputExample.
    is_tpu = isinstance(strategy, tf.distribute.TPUStrategy)
    trim_padding = options.trim_padding and not is_tpu  # TPUs need static shapes
    packer = BertInputPacker(options.vocab_file, options.max_seq_length, options.do_lower_case)

    def records(split, file_name, batch_size):
        return prepare_classifier_records(
            processor,
            split,
            packer,
            os.path.join(options.output_dir, file_name),
            options.vocab_file,
            pad_to_multiple_of=batch_size if is_tpu and split != "train" else 1,
            max_examples=options.max_train_examples if split == "train" else 0,
        )

    # Read every split that is asked for before training, so bad data fails fast.
    train_records = eval_records = predict_records = None
    if options.do_train:
        train_records = records("train", "train.tf_record", options.train_batch_size)
    if options.do_eval:
        eval_records = records("dev", "eval.tf_record", options.eval_batch_size)
    if options.do_predict:
        predict_records = records("test", "predict.tf_record", options.predict_batch_size)

    num_train_steps = num_warmup_steps = 0
    if train_records is not None:
        num_train_steps = int(
            train_records.num_examples / options.train_batch_size * options.num_train_epochs
        )
        if num_train_steps < 1:
            raise ValueError(
                f"{train_records.num_examples} training examples, train_batch_size "
                f"{options.train_batch_size} and num_train_epochs {options.num_train_epochs} "
                "give no training step"
            )
        num_warmup_steps = int(num_train_steps * options.warmup_proportion)

    def model_fn():
        if options.hub_module_handle:
            encoder = ExportedBertEncoder(options.hub_module_handle)  # float32, as exported
        else:
            encoder = BertEncoder.from_bert_config(options.bert_config, dtype=options.dtype)
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

    def optimizer_fn():
        return create_optimizer(
            options.learning_rate,
            max(num_train_steps, 1),
            num_warmup_steps,
            options.optimizer_type,
            options.weight_decay_rate,
        )

    runner = Runner(
        strategy,
        model_fn,
        optimizer_fn,
        classifier_loss_fn(labels is None),
        RunnerSettings(
            output_dir=options.output_dir,
            num_train_steps=num_train_steps,
            steps_per_loop=options.steps_per_loop,
            save_checkpoints_steps=options.save_checkpoints_steps,
            keep_checkpoint_max=options.keep_checkpoint_max,
            log_steps=options.log_steps,
        ),
    )

    def initialize(model):
        if options.hub_module_handle:
            logging.info("Initialized from the exported encoder %s", options.hub_module_handle)
        elif options.init_checkpoint:
            # The classifier head is new unless the checkpoint was fine-tuned already; a
            # feature-based head is always new (its input is not the pooled output).
            target = model if options.feature_mode == "finetune" else model.encoder
            checkpoint_format = load_bert_weights(target, options.init_checkpoint)
            logging.info("Initialized from %s (%s)", options.init_checkpoint, checkpoint_format)
        else:
            logging.warning("No init_checkpoint: training from random weights")

    runner.restore_or_initialize(initialize)
    results: dict = {"history": []}
    if train_records is not None:
        logging.info(
            "Training: %d examples, batch %d, %d steps (%d warm-up)",
            train_records.num_examples,
            options.train_batch_size,
            num_train_steps,
            num_warmup_steps,
        )

        def train_dataset_fn(input_context):
            return classifier_dataset(
                train_records.path,
                options.train_batch_size,
                options.max_seq_length,
                is_training=True,
                input_context=input_context,
                seed=options.seed,
                trim_padding=trim_padding,
            )

        start = time.time()
        results["history"] = runner.train(train_dataset_fn, options.train_batch_size)
        results["train_seconds"] = time.time() - start
        if options.feature_mode == "frozen_scalar_mix" and runner.is_chief:
            path = os.path.join(options.output_dir, SCALAR_MIX_WEIGHTS_FILE)
            results["scalar_mix"] = write_scalar_mix_weights(path, runner.model.scalar_mix)
            logging.info("Learned layer mix (%s): %s", path, results["scalar_mix"])
        if options.export_dir != "":
            export_dir = options.export_dir or os.path.join(options.output_dir, "serving_model")
            results["export_dir"] = export_classifier_serving_model(
                runner.model, packer, labels, processor.takes_pairs, export_dir
            )
            logging.info("Exported the raw-text serving SavedModel to %s", export_dir)

    def run_predictions(split_records, batch_size):
        dataset = classifier_dataset(
            split_records.path,
            batch_size,
            options.max_seq_length,
            is_training=False,
            drop_remainder=is_tpu,
            trim_padding=trim_padding,
        )
        return predict(strategy, runner.model, dataset, keep=("label_ids", "is_real_example"))

    if eval_records is not None:
        outputs = run_predictions(eval_records, options.eval_batch_size)
        real = outputs["is_real_example"] > 0
        logits, label_ids = outputs["outputs"][real], outputs["label_ids"][real]
        metrics = glue_metrics(options.task_name, label_ids, logits, labels is None)
        eval_results = {f"eval_{name}": value for name, value in metrics.items()}
        eval_results["eval_loss"] = mean_eval_loss(
            logits, label_ids, np.ones(len(label_ids)), labels is None
        )
        path = os.path.join(options.output_dir, "eval_results.txt")
        write_eval_results(path, eval_results, runner.step)
        logging.info("Eval results (%s): %s", path, eval_results)
        results["eval"] = eval_results
    if predict_records is not None:
        outputs = run_predictions(predict_records, options.predict_batch_size)
        logits = outputs["outputs"][outputs["is_real_example"] > 0]
        values = logits.reshape(-1, 1) if labels is None else softmax(logits)
        lines = ["\t".join(str(value) for value in row) for row in values]
        path = os.path.join(options.output_dir, "test_results.tsv")
        write_text_atomically(path, "".join(line + "\n" for line in lines))
        logging.info("Wrote %d predictions to %s", len(lines), path)
        results["predictions"] = values
    keras.backend.clear_session()
    return results
