"""Fine-tuning BERT on SQuAD v1.1 / v2.0 with the runner (run_squad.py), and scoring."""

from __future__ import annotations

import dataclasses
import json
import os
import time

import keras
import tensorflow as tf
from absl import logging

from official_bert.config import BertConfig, check_vocab_matches_config, write_text_atomically
from official_bert.data.squad.dataset import squad_dataset
from official_bert.data.squad.examples import load_squad_json, read_squad_examples
from official_bert.data.squad.features import (
    check_squad_lengths,
    convert_examples_to_features,
    prepare_squad_train_records,
    write_squad_records,
)
from official_bert.evaluation.squad_postprocessing import (
    postprocess_predictions,
    rethreshold,
    write_prediction_files,
)
from official_bert.evaluation.squad_scoring import (
    squad_v1_scores,
    squad_v2_scores,
    tune_no_answer_threshold,
)
from official_bert.models import BertSpanLabeler
from official_bert.tokenization import FastWordpieceBertTokenizer, validate_case_matches_checkpoint
from official_bert.training.finetuning import (
    create_encoder,
    epoch_train_steps,
    finetuning_runner,
    initialize_weights,
    start_finetuning,
    train_dataset_fn,
    validate_init_source,
)
from official_bert.training.prediction import predict
from official_bert.training.squad_objective import squad_loss_fn
from official_bert.training.training_options import TrainingOptions


@dataclasses.dataclass
class SquadOptions(TrainingOptions):
    """The settings of run_squad.py (original flag names and defaults, then the TF2 ones),
    beside the shared ones of TrainingOptions."""

    bert_config: BertConfig | None  # None only with eval_only
    vocab_file: str | None
    train_file: str | None = None
    predict_file: str | None = None
    do_lower_case: bool = True
    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    do_train: bool = False
    do_predict: bool = False
    train_batch_size: int = 32
    predict_batch_size: int = 8
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    n_best_size: int = 20
    max_answer_length: int = 30
    verbose_logging: bool = False
    version_2_with_negative: bool = False
    null_score_diff_threshold: float = 0.0
    # Cut each training batch to its longest window (same loss, faster; never on TPUs).
    trim_padding: bool = True
    # v2.0: re-write the predictions with the threshold that gives the best F1 on predict_file
    # (reported in eval_results.json under "tuned" either way).
    tune_null_threshold: bool = False
    # Only score output_dir/predictions.json (and null_odds.json) against predict_file.
    eval_only: bool = False
    bert_config_file: str | None = None  # only for error messages
    # An exported encoder (export_tfhub.py --export_type=model) to fine-tune instead of
    # bert_config + init_checkpoint; its weights are the starting point.
    hub_module_handle: str | None = None


def validate_squad_options(options: SquadOptions) -> None:
    """The original run_squad.py validate_flags_or_throw, each error naming the flag at fault."""
    if options.eval_only:
        if not options.predict_file:
            raise ValueError("If `eval_only` is True, then `predict_file` must be specified.")
        return
    if not (options.do_train or options.do_predict):
        raise ValueError("At least one of `do_train` or `do_predict` must be True.")
    if options.do_train and not options.train_file:
        raise ValueError("If `do_train` is True, then `train_file` must be specified.")
    if options.do_predict and not options.predict_file:
        raise ValueError("If `do_predict` is True, then `predict_file` must be specified.")
    for name in ("train_file", "predict_file"):
        path = getattr(options, name)
        needed = options.do_train if name == "train_file" else options.do_predict
        if needed and not tf.io.gfile.exists(path):
            raise FileNotFoundError(f"--{name}={path}: no such file")
    if options.max_seq_length > options.bert_config.max_position_embeddings:
        raise ValueError(
            f"Cannot use sequence length {options.max_seq_length} because the BERT model was only "
            f"trained up to sequence length {options.bert_config.max_position_embeddings} "
            "(max_position_embeddings)"
        )
    check_squad_lengths(options.max_seq_length, options.max_query_length)
    validate_init_source(options)
    validate_case_matches_checkpoint(options.do_lower_case, options.init_checkpoint)
    check_vocab_matches_config(options.bert_config, options.vocab_file, options.bert_config_file)


def score_predictions(
    data_file: str,
    predictions: dict[str, str],
    version_2_with_negative: bool,
    null_odds: dict[str, float] | None = None,
    null_score_diff_threshold: float = 0.0,
) -> dict:
    """The official v1.1 or v2.0 scores of `predictions` against the answers of data_file.

    v2.0 with null_odds also searches the best thresholds (best_exact_thresh, best_f1_thresh);
    predictions are scored as written (null_score_diff_threshold is the one they were made with).
    """
    data = load_squad_json(data_file)
    if not version_2_with_negative:
        return squad_v1_scores(data, predictions)
    return squad_v2_scores(data, predictions, null_odds, null_score_diff_threshold)


def _has_answers(data_file: str) -> bool:
    """Whether a SQuAD file holds gold answers to score against (test files hold none)."""
    for article in load_squad_json(data_file):
        for paragraph in article.get("paragraphs", []):
            for qa in paragraph.get("qas", []):
                if qa.get("answers") or qa.get("is_impossible"):
                    return True
    return False


def _read_json(path: str):
    with tf.io.gfile.GFile(path, "r") as reader:
        try:
            return json.load(reader)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not valid JSON ({error})") from None


def _write_eval_results(output_dir: str, results: dict) -> str:
    path = os.path.join(output_dir, "eval_results.json")
    write_text_atomically(path, json.dumps(results, indent=2, sort_keys=True) + "\n")
    logging.info("Eval results (%s): %s", path, results)
    return path


def evaluate_existing_predictions(options: SquadOptions) -> dict:
    """--eval_only: scores output_dir/predictions.json (with null_odds.json for v2.0 when it
    exists) against predict_file and writes output_dir/eval_results.json."""
    predictions_path = os.path.join(options.output_dir, "predictions.json")
    if not tf.io.gfile.exists(predictions_path):
        raise FileNotFoundError(f"--eval_only: {predictions_path} not found")
    predictions = _read_json(predictions_path)
    null_odds = None
    null_odds_path = os.path.join(options.output_dir, "null_odds.json")
    if options.version_2_with_negative and tf.io.gfile.exists(null_odds_path):
        null_odds = _read_json(null_odds_path)
    results = score_predictions(
        options.predict_file,
        predictions,
        options.version_2_with_negative,
        null_odds,
        options.null_score_diff_threshold,
    )
    _write_eval_results(options.output_dir, results)
    return results


def run_squad(options: SquadOptions) -> dict:
    """Trains and/or predicts as the original run_squad.py, then scores.

    Writes to output_dir: train.tf_record (reused while the data and settings are unchanged) and
    eval.tf_record, checkpoints (a rerun resumes), TensorBoard summaries, predictions.json,
    nbest_predictions.json, null_odds.json (v2.0) and, when predict_file has answers,
    eval_results.json (the official script's keys; v2.0 adds "null_score_diff_threshold", the
    one the predictions were made with, and "tuned": the scores at the best-F1 threshold).

    Returns:
      {"history": [(step, loss)], "predictions": SquadPredictions, "eval": {...}} (the keys that
      apply).
    """
    validate_squad_options(options)
    tf.io.gfile.makedirs(options.output_dir)
    if options.eval_only:
        return {"eval": evaluate_existing_predictions(options)}
    setup = start_finetuning(options)
    tokenizer = FastWordpieceBertTokenizer(options.vocab_file, options.do_lower_case)

    # Read both files before training, so bad data fails fast.
    train_records = None
    if options.do_train:
        train_records = prepare_squad_train_records(
            options.train_file,
            os.path.join(options.output_dir, "train.tf_record"),
            options.vocab_file,
            options.do_lower_case,
            options.max_seq_length,
            options.doc_stride,
            options.max_query_length,
            options.version_2_with_negative,
        )
    predict_examples = predict_features = None
    if options.do_predict:
        predict_examples = read_squad_examples(
            options.predict_file, False, options.version_2_with_negative
        ).examples
        predict_features = convert_examples_to_features(
            predict_examples,
            tokenizer,
            options.max_seq_length,
            options.doc_stride,
            options.max_query_length,
            is_training=False,
        )
        eval_path = os.path.join(options.output_dir, "eval.tf_record")
        write_squad_records(predict_features, eval_path, is_training=False)
        logging.info(
            "Prediction: %d examples, %d features", len(predict_examples), len(predict_features)
        )

    num_train_steps = 0
    if train_records is not None:
        # As the original: steps from the number of examples (questions), not of windows.
        num_train_steps = epoch_train_steps(train_records.num_examples, options)

    def model_fn():
        model = BertSpanLabeler(create_encoder(options))
        model.build()
        return model

    runner = finetuning_runner(options, setup, model_fn, squad_loss_fn, num_train_steps)
    # The span head is new unless the checkpoint was fine-tuned on SQuAD already.
    runner.restore_or_initialize(lambda model: initialize_weights(model, options))
    results: dict = {"history": []}
    if train_records is not None:
        logging.info(
            "Training: %d examples (%d windows), batch %d, %d steps (%d warm-up)",
            train_records.num_examples,
            train_records.num_features,
            options.train_batch_size,
            num_train_steps,
            int(num_train_steps * options.warmup_proportion),
        )

        start = time.time()
        results["history"] = runner.train(
            train_dataset_fn(squad_dataset, train_records.path, options, setup),
            options.train_batch_size,
        )
        results["train_seconds"] = time.time() - start

    if predict_features is not None:
        start = time.time()
        dataset = squad_dataset(
            eval_path, options.predict_batch_size, options.max_seq_length, is_training=False
        )
        outputs = predict(setup.strategy, runner.model, dataset, keep=("unique_ids",))
        unique_ids = [int(unique_id) for unique_id in outputs["unique_ids"]]
        predictions = postprocess_predictions(
            predict_examples,
            predict_features,
            dict(zip(unique_ids, outputs["start_logits"], strict=True)),
            dict(zip(unique_ids, outputs["end_logits"], strict=True)),
            n_best_size=options.n_best_size,
            max_answer_length=options.max_answer_length,
            do_lower_case=options.do_lower_case,
            version_2_with_negative=options.version_2_with_negative,
            null_score_diff_threshold=options.null_score_diff_threshold,
            verbose_logging=options.verbose_logging,
        )
        results["predict_seconds"] = time.time() - start
        write_prediction_files(options.output_dir, predictions)
        results["predictions"] = predictions
        if _has_answers(options.predict_file):
            results["eval"] = _score_and_tune(options, predictions)
    keras.backend.clear_session()
    return results


def _score_and_tune(options: SquadOptions, predictions) -> dict:
    """Scores the predictions as written. v2.0 also chooses the null_score_diff_threshold with
    the best F1 on predict_file and reports its scores under "tuned"; with tune_null_threshold
    the prediction files are re-written with it."""
    threshold = options.null_score_diff_threshold
    scores = score_predictions(
        options.predict_file,
        predictions.predictions,
        options.version_2_with_negative,
        predictions.null_odds,
        threshold,
    )
    if options.version_2_with_negative:
        scores["null_score_diff_threshold"] = threshold
        tuned = tune_no_answer_threshold(
            load_squad_json(options.predict_file),
            predictions.best_non_null,
            predictions.null_odds,
        )
        scores["tuned"] = tuned
        logging.info(
            "Best null_score_diff_threshold on %s: %.4f (F1 %.2f; %.2f at %.4f)",
            options.predict_file,
            tuned["null_score_diff_threshold"],
            tuned["f1"],
            scores["f1"],
            threshold,
        )
        if options.tune_null_threshold:
            predictions.predictions = rethreshold(predictions, tuned["null_score_diff_threshold"])
            write_prediction_files(options.output_dir, predictions)
            logging.info("Re-wrote the predictions with the tuned threshold")
    _write_eval_results(options.output_dir, scores)
    return scores
