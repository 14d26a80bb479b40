"""Fine-tuning BERT on SQuAD v1.1 / v2.0 with the runner (run_squad.py), and scoring."""

from __future__ import annotations

import collections
import dataclasses
import json
import os

import tensorflow as tf
from absl import logging

from official_bert.config import check_vocab_matches_config, write_text_atomically
from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.squad.dataset import squad_dataset
from official_bert.data.squad.examples import (
    SquadFormatError,
    load_squad_json,
    read_squad_examples,
)
from official_bert.data.squad.features import (
    check_squad_lengths,
    convert_examples_to_features,
    prepare_squad_train_records,
    write_squad_records,
)
from official_bert.evaluation.cmrc_scoring import cmrc2018_scores, is_chinese
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
from official_bert.export.squad_serving import export_squad_serving_model
from official_bert.models import BertSpanLabeler
from official_bert.option_flags import option
from official_bert.tasks.driver import run_task
from official_bert.tasks.finetuning import (
    FinetuningOptions,
    FinetuningTask,
    check_export_dir,
    check_init_checkpoint_is_there,
    check_precision_options,
    check_sequence_length,
    create_encoder,
    epoch_train_steps,
    model_vocab_size,
    serving_encoder_dtype,
    train_dataset_fn,
    validate_init_source,
)
from official_bert.tasks.squad_objective import squad_loss_fn
from official_bert.tokenization import FastWordpieceBertTokenizer, validate_case_matches_checkpoint
from official_bert.training.prediction import predict
from official_bert.utf8_text import read_json_file


@dataclasses.dataclass(kw_only=True)
class SquadOptions(FinetuningOptions):
    """The settings of run_squad.py (original flag names and defaults, then the TF2 ones),
    beside FinetuningOptions' (whose dev-set evaluation flags SQuAD does not use: predicting
    predict_file scores it when it has answers)."""

    # === The original flags ===
    train_file: str | None = option(None, help="SQuAD JSON for training, e.g. train-v1.1.json.")
    predict_file: str | None = option(None, help="SQuAD JSON for predictions, e.g. dev-v1.1.json.")
    max_seq_length: int = option(384, help="Wordpieces per window, question included.")
    doc_stride: int = option(128, help="Wordpieces between the starts of two windows.")
    max_query_length: int = option(64, help="Question wordpieces kept (the rest is cut).")
    do_predict: bool = option(False, help="Whether to predict predict_file.")
    n_best_size: int = option(20, help="Candidates in nbest_predictions.json.")
    max_answer_length: int = option(30, help="Longest answer, in wordpieces.")
    verbose_logging: bool = option(
        False, help="Log answers that cannot be mapped back to the text."
    )
    version_2_with_negative: bool = option(False, help="SQuAD v2.0: questions may have no answer.")
    null_score_diff_threshold: float = option(
        0.0, help="v2.0: no answer when null - best span > this."
    )
    # === TF2 flags ===
    tune_null_threshold: bool = option(
        False,
        help="v2.0: re-write predictions.json with the null_score_diff_threshold that gives the "
        "best F1 on predict_file (reported in eval_results.json either way).",
    )
    eval_only: bool = option(
        False, help="Only score output_dir/predictions.json against predict_file."
    )
    export_dir: str | None = option(
        None,
        help="After training (without --do_train: from output_dir's checkpoint or "
        "--init_checkpoint), write here a serving SavedModel that answers raw (question, "
        "context) strings (windows, max-context rule and v2.0 threshold as the predictions; "
        "with --tune_null_threshold, written after predicting, with the tuned threshold).",
    )
    serving_dtype: str = option(
        "float32",
        choices=("float32", "bfloat16"),
        help="The serving model's encoder, with --fast_kernels: FusedInferenceEncoder with its "
        "weights in this dtype; bfloat16 is about 1.5x faster on CPUs with AVX512_BF16 or AMX "
        "(logits within ~1e-2, so an answer may change where two candidates score that close).",
    )
    trim_padding: bool = option(
        False,
        help="Cut each training batch to its longest window (faster on short contexts, but not "
        "the original's loss: its span softmax covers the padding positions too).",
    )
    # Not SQuAD's: a dev-set evaluation is predict_file's scoring.
    do_eval: bool = option(False, flag=False)
    eval_batch_size: int = option(8, flag=False)
    max_train_examples: int = option(0, flag=False)

    def needs_model(self) -> bool:
        return not self.eval_only


def validate_squad_options(options: SquadOptions) -> None:
    """The original run_squad.py validate_flags_or_throw, each error naming the flag at fault."""
    if options.eval_only:
        if not options.predict_file:
            raise ValueError("If `eval_only` is True, then `predict_file` must be specified.")
        check_squad_version(options.predict_file, "predict_file", options)
        return
    if not (options.do_train or options.do_predict or options.export_dir):
        raise ValueError(
            "At least one of `do_train` or `do_predict` must be True (or name `export_dir` to "
            "export a model fine-tuned earlier)."
        )
    if options.do_train and not options.train_file:
        raise ValueError("If `do_train` is True, then `train_file` must be specified.")
    if options.do_predict and not options.predict_file:
        raise ValueError("If `do_predict` is True, then `predict_file` must be specified.")
    for name in ("train_file", "predict_file"):
        path = getattr(options, name)
        needed = options.do_train if name == "train_file" else options.do_predict
        if not needed:
            continue
        if not tf.io.gfile.exists(path):
            raise FileNotFoundError(f"--{name}={path}: no such file")
        check_squad_version(path, name, options)
    check_sequence_length(options)
    check_export_dir(options)
    check_squad_lengths(options.max_seq_length, options.max_query_length)
    check_precision_options(options)
    validate_init_source(options)
    validate_case_matches_checkpoint(options.do_lower_case, options.init_checkpoint)
    check_init_checkpoint_is_there(options)
    check_vocab_matches_config(options.bert_config, options.vocab_file, options.bert_config_file)


def check_squad_version(path: str, flag: str, options: SquadOptions) -> None:
    """A SQuAD 2.0 file read without version_2_with_negative. As train_file it would stop late
    and unclearly (at its first unanswerable question, "no answers"), so it is refused at the
    start, as the original refuses it. As predict_file the original answers every question,
    and so does this project (with a warning); its scores are then the v2.0 script's
    (`score_predictions`). Unanswerable: marked is_impossible, or with an empty answer list
    beside answered questions (a file with no answers at all is a test file, predicted and not
    scored)."""
    questions = list(_questions(path))
    ids = collections.Counter(str(qa.get("id")) for qa in questions)
    repeated = {qid: count for qid, count in ids.items() if count > 1}
    if repeated:
        first = next(iter(repeated))
        logging.warning(
            "--%s=%s: %d question ids occur more than once (first: %r, %d times); "
            "predictions.json holds one answer per id (the last question's, as the original)",
            flag,
            path,
            len(repeated),
            first,
            repeated[first],
        )
    if options.version_2_with_negative:
        return
    unanswerable = _unanswerable_questions(questions)
    if not unanswerable:
        return
    count, how = unanswerable
    if flag == "predict_file":
        logging.warning(
            "--predict_file=%s: %d questions %s, as in a SQuAD 2.0 file, and "
            "--version_2_with_negative is False: every question gets an answer (as the "
            "original run_squad.py) and the scores are the SQuAD 2.0 script's, where no "
            "unanswerable question can be right (HasAns_exact and HasAns_f1 score the others); "
            "pass --version_2_with_negative=True for a model that may answer none",
            path,
            count,
            how,
        )
        return
    raise SquadFormatError(
        f"--{flag}={path}: {count} questions {how}, as in a SQuAD 2.0 file; pass "
        "--version_2_with_negative=True"
    )


def _unanswerable_questions(questions) -> tuple[int, str] | None:
    """How many of the `qas` entries are SQuAD 2.0's unanswerable ones, and how they are marked;
    None for a SQuAD 1.1 file (or a test file without answers)."""
    # Only a true value marks a question (a string "false" is read_squad_examples' type error).
    marked = sum(qa.get("is_impossible") in (True, 1) for qa in questions)
    if marked:
        return marked, "marked is_impossible"
    answered = sum(bool(qa.get("answers")) for qa in questions)
    unanswered = sum(qa.get("answers") == [] for qa in questions)
    if answered and unanswered:
        return unanswered, "without answers beside answered ones"
    return None


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
    A SQuAD 2.0 file predicted without version_2_with_negative (every question answered) gets
    the v2.0 scores too: the v1.1 script has no answer to compare an unanswerable one with.
    A Chinese v1.1 file (CJK ideographs >= 30% of its contexts' characters, `is_chinese`) adds
    CMRC 2018's official character-level scores under "cmrc2018" (SQuAD's F1 counts whitespace
    words, which Chinese does not have).
    """
    data = load_squad_json(data_file)
    if version_2_with_negative:
        return squad_v2_scores(data, predictions, null_odds, null_score_diff_threshold)
    if _unanswerable_questions(list(_questions_of(data))):
        return squad_v2_scores(data, predictions)
    scores = squad_v1_scores(data, predictions)
    if is_chinese(data):
        scores["cmrc2018"] = cmrc2018_scores(data, predictions)
        logging.info("CMRC 2018 scores of %s: %s", data_file, scores["cmrc2018"])
    return scores


def _questions(path: str):
    """The question objects (`qas` entries) of a SQuAD file; malformed parts are passed over
    here (read_squad_examples names them)."""
    return _questions_of(load_squad_json(path))


def _questions_of(data: list):
    """The question objects of a SQuAD file's `data` list, as `_questions`."""
    for article in data:
        if not isinstance(article, dict):
            continue
        for paragraph in article.get("paragraphs") or []:
            if not isinstance(paragraph, dict):
                continue
            yield from (qa for qa in paragraph.get("qas") or [] if isinstance(qa, dict))


def _has_answers(data_file: str) -> bool:
    """Whether a SQuAD file holds gold answers to score against (test files hold none)."""
    return any(qa.get("answers") or qa.get("is_impossible") for qa in _questions(data_file))


def _read_json(path: str):
    return read_json_file(path, ValueError)


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


class SquadTask(FinetuningTask):
    """SQuAD v1.1 / v2.0 span extraction, as the original run_squad.py.

    Writes to output_dir: train.tf_record (reused while the data and settings are unchanged) and
    eval.tf_record, checkpoints (a rerun resumes), TensorBoard summaries, predictions.json,
    nbest_predictions.json, null_odds.json (v2.0) and, when predict_file has answers,
    eval_results.json (the official script's keys; v2.0 adds "null_score_diff_threshold", the
    one the predictions were made with, and "tuned": the scores at the best-F1 threshold).
    """

    def __init__(self, options: SquadOptions):
        super().__init__(options)
        self.train_records = None
        self.predict_examples = self.predict_features = None
        self.eval_path = os.path.join(options.output_dir, "eval.tf_record")
        self.deferred_export = False

    def validate(self) -> None:
        validate_squad_options(self.options)

    def prepare(self, strategy) -> None:
        super().prepare(strategy)
        options = self.options
        # Read both files before training, so bad data fails fast.
        if options.do_train:
            self.train_records = prepare_squad_train_records(
                options.train_file,
                os.path.join(options.output_dir, "train.tf_record"),
                options.vocab_file,
                options.do_lower_case,
                options.max_seq_length,
                options.doc_stride,
                options.max_query_length,
                options.version_2_with_negative,
                preserve_unused_tokens=options.preserve_unused_tokens,
            )
            # As the original: steps from the number of examples (questions), not of windows.
            self.num_train_steps = epoch_train_steps(self.train_records.num_examples, options)
            logging.info(
                "Training: %d examples (%d windows), batch %d, %d steps (%d warm-up)",
                self.train_records.num_examples,
                self.train_records.num_features,
                options.train_batch_size,
                self.num_train_steps,
                self.num_warmup_steps(),
            )
        if options.do_predict:
            tokenizer = FastWordpieceBertTokenizer(
                options.vocab_file,
                options.do_lower_case,
                preserve_unused_tokens=options.preserve_unused_tokens,
            )
            self.predict_examples = read_squad_examples(
                options.predict_file, False, options.version_2_with_negative
            ).examples
            self.predict_features = convert_examples_to_features(
                self.predict_examples,
                tokenizer,
                options.max_seq_length,
                options.doc_stride,
                options.max_query_length,
                is_training=False,
            )
            write_squad_records(self.predict_features, self.eval_path, is_training=False)
            logging.info(
                "Prediction: %d examples, %d features",
                len(self.predict_examples),
                len(self.predict_features),
            )

    def build_model(self):
        model = BertSpanLabeler(create_encoder(self.options))
        model.build()
        return model

    def loss_fn(self):
        return squad_loss_fn

    def train_dataset(self, input_context):
        return train_dataset_fn(squad_dataset, self.train_records.path, self.options, self.setup)(
            input_context
        )

    def _tunes_null_threshold(self) -> bool:
        """Whether predicting will choose the v2.0 threshold (--tune_null_threshold on a
        predict_file with answers)."""
        options = self.options
        return bool(
            options.version_2_with_negative
            and options.tune_null_threshold
            and options.do_predict
            and _has_answers(options.predict_file)
        )

    def export(self, runner) -> str | None:
        if not self.options.export_dir:
            return None
        if self._tunes_null_threshold():
            # Exported by `predict` once the threshold is tuned, so that it serves with it.
            self.deferred_export = True
            return None
        return self._export(runner, self.options.null_score_diff_threshold)

    def _export(self, runner, null_score_diff_threshold: float) -> str:
        options = self.options
        return export_squad_serving_model(
            runner.model,
            BertInputPacker(
                options.vocab_file,
                options.max_seq_length,
                options.do_lower_case,
                preserve_unused_tokens=options.preserve_unused_tokens,
            ),
            options.export_dir,
            doc_stride=options.doc_stride,
            max_query_length=options.max_query_length,
            n_best_size=options.n_best_size,
            max_answer_length=options.max_answer_length,
            version_2_with_negative=options.version_2_with_negative,
            null_score_diff_threshold=null_score_diff_threshold,
            encoder_dtype=serving_encoder_dtype(options, runner.model),
        )

    def predict(self, runner) -> dict:
        options = self.options
        dataset = squad_dataset(
            self.eval_path,
            options.predict_batch_size,
            options.max_seq_length,
            is_training=False,
            vocab_size=model_vocab_size(options),
        )
        outputs = predict(self.strategy, runner.model, dataset, keep=("unique_ids",))
        unique_ids = [int(unique_id) for unique_id in outputs["unique_ids"]]
        predictions = postprocess_predictions(
            self.predict_examples,
            self.predict_features,
            dict(zip(unique_ids, outputs["start_logits"], strict=True)),
            dict(zip(unique_ids, outputs["end_logits"], strict=True)),
            n_best_size=options.n_best_size,
            max_answer_length=options.max_answer_length,
            do_lower_case=options.do_lower_case,
            version_2_with_negative=options.version_2_with_negative,
            null_score_diff_threshold=options.null_score_diff_threshold,
            verbose_logging=options.verbose_logging,
        )
        write_prediction_files(options.output_dir, predictions)
        results = {"predictions": predictions}
        if _has_answers(options.predict_file):
            results["eval"] = _score_and_tune(options, predictions)
        if self.deferred_export:
            threshold = results["eval"]["tuned"]["null_score_diff_threshold"]
            results["export_dir"] = self._export(runner, threshold)
            logging.info(
                "Exported the serving SavedModel (null_score_diff_threshold %.4f, tuned) to %s",
                threshold,
                results["export_dir"],
            )
        return results


def run_squad(options: SquadOptions) -> dict:
    """Trains and/or predicts as the original run_squad.py, then scores (see SquadTask); with
    eval_only, scores output_dir/predictions.json only.

    Returns:
      {"history": [(step, loss)], "predictions": SquadPredictions, "eval": {...}} (the keys that
      apply).
    """
    if options.eval_only:
        validate_squad_options(options)
        tf.io.gfile.makedirs(options.output_dir)
        return {"eval": evaluate_existing_predictions(options)}
    return run_task(SquadTask(options))


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
