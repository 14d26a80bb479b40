"""Multi-label classification (run_classifier.py --task_name=generic --multi_label): each text
has a set of labels, zero or more.

The model is the same BertClassifier (one logit per label); each label is its own yes/no
question, learned with binary cross-entropy on its sigmoid. After training, each label's
decision threshold is tuned on the dev predictions (the cut with the best F1 of that label) and
kept beside the checkpoints (side_file_names.label_thresholds_path) and inside the serving model,
which returns the predicted label set.
"""

from __future__ import annotations

import json
import os

import numpy as np
import tensorflow as tf
from absl import logging

from official_bert.config import write_text_atomically
from official_bert.data.classification.multi_label_features import multi_label_encoder
from official_bert.evaluation.multi_label_metrics import (
    DEFAULT_THRESHOLD,
    label_f1_scores,
    multi_label_metrics,
    predict_label_sets,
    tune_thresholds,
)
from official_bert.export.multi_label_serving import export_multi_label_serving_model
from official_bert.side_file_names import label_thresholds_path
from official_bert.tasks.classification import (
    ClassificationTask,
    ClassifierOptions,
    predict_records,
    split_records,
)
from official_bert.tasks.classification_objective import (
    classifier_loss_fn,
    mean_multi_label_eval_loss,
    sigmoid,
)
from official_bert.tasks.finetuning import serving_encoder_dtype, serving_export_dir
from official_bert.training.runner import Runner, write_eval_results


def write_label_thresholds(
    path: str,
    labels: list[str],
    thresholds: np.ndarray,
    dev_f1: np.ndarray | None,
    label_separator: str,
    step: int,
) -> dict:
    """Writes {"labels", "thresholds", "dev_f1" (each label's F1 on dev at its threshold, None
    when there was no dev set), "label_separator", "global_step"} as JSON to `path`; returns it."""
    settings = {
        "labels": list(labels),
        "thresholds": [float(value) for value in thresholds],
        "dev_f1": None if dev_f1 is None else [float(value) for value in dev_f1],
        "label_separator": label_separator,
        "global_step": int(step),
    }
    write_text_atomically(path, json.dumps(settings, indent=2) + "\n")
    return settings


def read_label_thresholds(path: str, labels: list[str]) -> np.ndarray | None:
    """The thresholds (float64 [num_labels]) of write_label_thresholds' file at `path`, or None
    when there is none. A file for other labels raises ValueError naming both label lists."""
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path, "r") as reader:
        settings = json.loads(reader.read())
    if settings.get("labels") != list(labels):
        raise ValueError(
            f"{path} holds thresholds for the labels {settings.get('labels')}, but the task's "
            f"labels are {list(labels)}; delete it to have them tuned again on dev"
        )
    return np.asarray(settings["thresholds"], np.float64)


def write_multi_label_test_results(path: str, labels: list[str], probabilities: np.ndarray):
    """test_results.tsv for multi-label tasks: a header of the label names, then one line per
    test example with each label's probability (float [examples, num_labels]), tab-separated."""
    lines = ["\t".join(labels)]
    lines += ["\t".join(str(value) for value in row) for row in probabilities]
    write_text_atomically(path, "".join(line + "\n" for line in lines))
    logging.info("Wrote %d predictions to %s", len(lines) - 1, path)


class MultiLabelClassificationTask(ClassificationTask):
    """Multi-label classification on a processor whose rows hold label sets (GenericProcessor
    with multi_label=True).

    Writes to output_dir what ClassificationTask does, with:
      eval_results.txt: eval_micro_f1, eval_macro_f1, eval_exact_match (the fraction of dev
        examples whose predicted set is exactly right), eval_loss (binary cross-entropy),
        global_step; decided with the tuned thresholds (so dev figures are optimistic: the
        thresholds were chosen on dev);
      test_results.tsv: a header naming the labels, then each test example's label
        probabilities;
      .checkpoint.label_thresholds.json: the thresholds (write_label_thresholds), tuned after
        training on the dev split (when the data folder has one; else 0.5 each);
      serving_model/: returns probabilities, label_indicators and the predicted label names.
    """

    kind = "multi-label classification"

    def __init__(self, options: ClassifierOptions, processor):
        super().__init__(options, processor)
        if not getattr(processor, "multi_label", False):
            raise ValueError(
                f"{type(processor).__name__} does not read label sets; --multi_label needs "
                "--task_name=generic (with multi_label in processor_kwargs when those are given)"
            )
        if not self.labels:
            raise ValueError(f"{processor.split_path('train')}: no label in the label column")
        self.label_separator = processor.label_separator
        self.encode_examples = multi_label_encoder(processor.label_set)
        self.thresholds: np.ndarray | None = None
        self._dev_outputs: tuple[int, dict[str, np.ndarray]] | None = None

    @property
    def thresholds_path(self) -> str:
        return label_thresholds_path(self.options.output_dir)

    def prepare(self, strategy) -> None:
        super().prepare(strategy)
        options = self.options
        if self.do_train:
            # Thresholds are tuned on dev after training, even when dev is not evaluated.
            if self.records["dev"] is None and tf.io.gfile.exists(self.processor.split_path("dev")):
                self.records["dev"] = split_records(
                    self.processor,
                    "dev",
                    self.packer,
                    options.output_dir,
                    options,
                    options.eval_batch_size,
                    self.setup,
                    self.encode_examples,
                )
        else:
            self.thresholds = read_label_thresholds(self.thresholds_path, self.labels)

    def loss_fn(self):
        return classifier_loss_fn(is_regression=False, multi_label=True)

    def _dev_predictions(self, runner: Runner) -> dict[str, np.ndarray]:
        """{"outputs": logits, "label_ids": multi-hot} of the dev split, predicted once per step."""
        if self._dev_outputs is None or self._dev_outputs[0] != runner.step:
            options = self.options
            outputs = predict_records(
                runner.model, self.records["dev"], options.eval_batch_size, options, self.setup
            )
            # [examples, num_labels] also for a single label (the reader squeezes width 1).
            outputs["label_ids"] = outputs["label_ids"].reshape(outputs["outputs"].shape)
            self._dev_outputs = (runner.step, outputs)
        return self._dev_outputs[1]

    def _tune_thresholds(self, runner: Runner) -> dict:
        """Tunes self.thresholds on dev (0.5 each without a dev split), writes them beside the
        checkpoints, and returns what was written."""
        dev_f1 = None
        if self.records["dev"] is None:
            logging.warning(
                "%s: no dev split to tune the label thresholds on; every label keeps %s",
                self.processor.split_path("dev"),
                DEFAULT_THRESHOLD,
            )
            self.thresholds = np.full(len(self.labels), DEFAULT_THRESHOLD)
        else:
            outputs = self._dev_predictions(runner)
            probabilities, gold = sigmoid(outputs["outputs"]), outputs["label_ids"]
            self.thresholds = tune_thresholds(probabilities, gold)
            dev_f1 = label_f1_scores(gold, predict_label_sets(probabilities, self.thresholds))
        settings = {"thresholds": self.thresholds}
        if runner.is_chief:
            settings = write_label_thresholds(
                self.thresholds_path,
                self.labels,
                self.thresholds,
                dev_f1,
                self.label_separator,
                runner.step,
            )
            logging.info("Label thresholds (%s): %s", self.thresholds_path, settings)
        return settings

    def after_training(self, runner: Runner) -> dict:
        results = super().after_training(runner)
        results["label_thresholds"] = self._tune_thresholds(runner)
        return results

    def export(self, runner: Runner) -> str | None:
        export_dir = serving_export_dir(self.options)
        if export_dir is None:
            return None
        return export_multi_label_serving_model(
            runner.model,
            self.packer,
            self.labels,
            self._usable_thresholds(runner),
            self.label_separator,
            self.processor.takes_pairs,
            export_dir,
            encoder_dtype=serving_encoder_dtype(self.options, runner.model),
        )

    def _usable_thresholds(self, runner: Runner) -> np.ndarray:
        """The tuned thresholds; without any (no training in this run and no thresholds file):
        tuned now when dev records were made (--do_eval), else DEFAULT_THRESHOLD for every
        label, with a warning."""
        if self.thresholds is None and self.records["dev"] is not None:
            self._tune_thresholds(runner)
        if self.thresholds is not None:
            return self.thresholds
        logging.warning(
            "No label thresholds in %s (train, or evaluate on dev, first): using %s for every "
            "label",
            self.thresholds_path,
            DEFAULT_THRESHOLD,
        )
        return np.full(len(self.labels), DEFAULT_THRESHOLD)

    def evaluate(self, runner: Runner) -> dict:
        if self.thresholds is None:  # evaluating a model trained before: tune them now
            self._tune_thresholds(runner)
        outputs = self._dev_predictions(runner)
        logits, gold = outputs["outputs"], outputs["label_ids"]
        predicted = predict_label_sets(sigmoid(logits), self.thresholds)
        metrics = multi_label_metrics(gold, predicted)
        eval_results = {f"eval_{name}": value for name, value in metrics.items()}
        eval_results["eval_loss"] = mean_multi_label_eval_loss(logits, gold)
        path = os.path.join(self.options.output_dir, "eval_results.txt")
        write_eval_results(path, eval_results, runner.step)
        logging.info("Eval results (%s): %s", path, eval_results)
        return {"eval": eval_results}

    def predict(self, runner: Runner) -> dict:
        options = self.options
        logits = predict_records(
            runner.model, self.records["test"], options.predict_batch_size, options, self.setup
        )["outputs"]
        probabilities = sigmoid(logits)
        write_multi_label_test_results(
            os.path.join(options.output_dir, "test_results.tsv"), self.labels, probabilities
        )
        chosen = predict_label_sets(probabilities, self._usable_thresholds(runner))
        label_sets = [
            tuple(label for label, on in zip(self.labels, row, strict=True) if on) for row in chosen
        ]
        return {"predictions": probabilities, "predicted_labels": label_sets}
