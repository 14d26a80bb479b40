"""Multi-task fine-tuning (run_multitask.py): one shared BERT encoder, one head per GLUE-style
task, each training step on one task's batch.

Layout of output_dir:

  checkpoint, ckpt-N.*        the runner's training checkpoints (encoder, every head, optimizer,
                              data position): a rerun resumes from them
  train/                      TensorBoard summaries
  bert_model.ckpt.*           after training: the shared encoder in the original TF1 layout
  bert_config.json            (`bert/...` names), usable as anyone's --init_checkpoint
  eval_results.txt            every task's dev metrics as `<task>/eval_<metric> = value`
  <task>/train.tf_record, <task>/eval.tf_record, <task>/predict.tf_record
                              the task's cached records
  <task>/classifier_head.ckpt.*   after training: the task's head under run_classifier.py's
                              names, `output_weights` [num_classes, hidden], `output_bias`
  <task>/eval_results.txt     the task's dev metrics, as run_classifier.py writes them
  <task>/test_results.tsv     with do_predict: the task's test predictions, as run_classifier.py
                              writes them (class probabilities tab-separated, or the score)

<task> is the task name as given, lower-cased ("sts-b"). bert_model.ckpt and a task's
classifier_head.ckpt together are that task's fine-tuned classifier in the original layout
(load_task_classifier builds it; the original code's init_from_checkpoint can read both files).
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
from absl import logging

from official_bert.checkpoints import load_bert_weights, write_original_checkpoint
from official_bert.checkpoints.loading import read_bert_config
from official_bert.checkpoints.original_tf1 import (
    read_checkpoint_arrays,
    read_original_entries,
    write_original_entries,
)
from official_bert.checkpoints.variable_table import classifier_head_entries
from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.classification.dataset import classifier_dataset
from official_bert.data.classification.examples import DataProcessor, get_processor, processor_names
from official_bert.data.classification.multitask_dataset import (
    multitask_dataset,
    task_sampling_probabilities,
)
from official_bert.models import BertClassifier, BertEncoder, MultiTaskClassifier
from official_bert.models.multitask_classifier import head_attribute
from official_bert.option_flags import option
from official_bert.tasks.classification import (
    ClassificationTask,
    evaluate_classifier,
    predict_records,
    split_records,
    write_test_results,
)
from official_bert.tasks.driver import run_task
from official_bert.tasks.finetuning import (
    FinetuningOptions,
    FinetuningTask,
    create_encoder,
    epoch_train_steps,
    initialize_weights,
    train_dataset_fn,
    validate_finetuning_options,
)
from official_bert.tasks.multitask_objective import multitask_loss_fn
from official_bert.tasks.registry import task_class_for_processor
from official_bert.training.runner import write_eval_results

# The name of a task's head checkpoint in output_dir/<task>/.
HEAD_CHECKPOINT = "classifier_head.ckpt"


@dataclasses.dataclass(kw_only=True)
class MultiTaskOptions(FinetuningOptions):
    """The settings of run_multitask.py: run_classifier.py's shared ones, and the tasks.

    task_names[i] reads data_dirs[i] (GLUE's layout: each task's own folder with train.tsv,
    dev.tsv and, for do_predict, test.tsv). num_train_steps None trains num_train_epochs over
    all tasks' examples together,
    int(num_train_epochs * sum(n_i) / train_batch_size) steps; each step's task is drawn with
    probability proportional to n_i ** (1 / sampling_temperature).
    """

    task_names: list[str] = option(
        help="The tasks, comma-separated: each a run_classifier.py classification task name."
    )
    data_dirs: list[str] = option(
        help="Each task's folder (train.tsv, dev.tsv; test.tsv for --do_predict), "
        "comma-separated, in task order."
    )
    sampling_temperature: float = option(
        1.0,
        help="A step trains task i with probability proportional to n_i ** (1 / T), n_i its "
        "training examples: 1 samples in proportion to the data, a large T (e.g. 100) nearly "
        "uniformly.",
    )
    num_train_steps: int | None = option(
        None,
        help="Training steps over all tasks (default: num_train_epochs * total examples / "
        "batch size).",
    )


def task_directory(output_dir: str, task_name: str) -> str:
    """output_dir/<task>: the task's records, eval_results.txt, test_results.tsv and head
    checkpoint."""
    return os.path.join(output_dir, task_name.lower())


def validate_multitask_options(options: MultiTaskOptions) -> None:
    """Checks the tasks and the run's settings, each error naming its flag."""
    if not options.task_names:
        raise ValueError("--task_names is empty; give the tasks, e.g. --task_names=mrpc,sts-b,cola")
    if len(options.data_dirs) != len(options.task_names):
        raise ValueError(
            f"--task_names has {len(options.task_names)} tasks ({','.join(options.task_names)}) "
            f"but --data_dirs has {len(options.data_dirs)} folders "
            f"({','.join(options.data_dirs)}); give one folder per task, in the same order"
        )
    known = processor_names()
    for task in options.task_names:
        if task.lower() not in known:
            # Only the tasks this script trains: the tagging and multiple-choice ones are
            # run_classifier.py's (said for each by MultiTaskTask.validate).
            sentence_tasks = [
                name
                for name in known
                if task_class_for_processor(get_processor(name, ".")) is ClassificationTask
            ]
            raise ValueError(
                f"--task_names: unknown task {task!r}; expected one of {sentence_tasks}"
            )
    folders = [head_attribute(task) for task in options.task_names]
    if len(set(folders)) != len(folders):
        raise ValueError(f"--task_names names a task twice: {options.task_names}")
    if options.sampling_temperature <= 0:
        raise ValueError(f"--sampling_temperature must be > 0, got {options.sampling_temperature}")
    if options.num_train_steps is not None and options.num_train_steps < 1:
        raise ValueError(f"--num_train_steps must be >= 1, got {options.num_train_steps}")
    validate_finetuning_options(options)


@dataclasses.dataclass
class _Task:
    name: str
    processor: DataProcessor
    directory: str
    # ClassifierRecords by split ("train", "dev", "test").
    records: dict = dataclasses.field(default_factory=dict)

    @property
    def labels(self) -> list[str] | None:
        return self.processor.get_labels()

    @property
    def is_regression(self) -> bool:
        return self.labels is None

    @property
    def num_classes(self) -> int:
        return 1 if self.is_regression else len(self.labels)


class MultiTaskTask(FinetuningTask):
    """One encoder with a head per task: each training step reads one task's batch (tasks drawn
    as MultiTaskOptions says, the sequence fixed by --seed) and updates the encoder and that
    task's head with its loss (cross-entropy, or mean squared error for regression tasks such
    as STS-B). Evaluates each task on its dev set and/or predicts each task's test set. Outputs:
    see the module docstring."""

    def __init__(self, options: MultiTaskOptions):
        super().__init__(options)
        self.tasks: list[_Task] = []
        self.probabilities: list[float] = []

    def validate(self) -> None:
        options = self.options
        validate_multitask_options(options)
        self.tasks = [
            _Task(name, get_processor(name, data_dir), task_directory(options.output_dir, name))
            for name, data_dir in zip(options.task_names, options.data_dirs, strict=True)
        ]
        for task in self.tasks:
            task_class = task_class_for_processor(task.processor)
            if task_class is not ClassificationTask:
                raise ValueError(
                    f"--task_names: {task.name!r} is a {task_class.kind} task; run_multitask.py "
                    "trains sentence (pair) classification and regression heads. Run it with "
                    f"run_classifier.py --task_name={task.name}."
                )

    def prepare(self, strategy) -> None:
        super().prepare(strategy)
        options = self.options
        packer = BertInputPacker(
            options.vocab_file,
            options.max_seq_length,
            options.do_lower_case,
            preserve_unused_tokens=options.preserve_unused_tokens,
        )
        splits = {"train": options.train_batch_size} if options.do_train else {}
        if options.do_eval:
            splits["dev"] = options.eval_batch_size
        if options.do_predict:
            splits["test"] = options.predict_batch_size
        # Read every split that is asked for before training, so bad data fails fast.
        for task in self.tasks:
            for split, batch_size in splits.items():
                task.records[split] = split_records(
                    task.processor, split, packer, task.directory, options, batch_size, self.setup
                )
        if options.do_train:
            sizes = [task.records["train"].num_examples for task in self.tasks]
            self.num_train_steps = options.num_train_steps or epoch_train_steps(sum(sizes), options)
            self.probabilities = task_sampling_probabilities(sizes, options.sampling_temperature)
            for task, size, probability in zip(self.tasks, sizes, self.probabilities, strict=True):
                logging.info(
                    "Task %s: %d training examples, probability %.4f, about %.0f of %d steps",
                    task.name,
                    size,
                    probability,
                    probability * self.num_train_steps,
                    self.num_train_steps,
                )

    def build_model(self):
        encoder = create_encoder(self.options)
        model = MultiTaskClassifier(encoder, {task.name: task.num_classes for task in self.tasks})
        model.build()
        return model

    def loss_fn(self):
        return multitask_loss_fn(
            [task.name for task in self.tasks], [task.is_regression for task in self.tasks]
        )

    def initialize(self, model) -> None:
        # The heads are new; only the encoder comes from init_checkpoint (any layout, also a
        # fine-tuned classifier's or an earlier multi-task run's) or from hub_module_handle.
        initialize_weights(model, self.options, model.encoder)

    def train_dataset(self, input_context):
        options = self.options
        # Without --seed the task sequence is still fixed (seed 0), so that every worker of a
        # multi-worker run draws the same task at each step.
        sampler_seed = 0 if options.seed is None else options.seed
        return multitask_dataset(
            [
                train_dataset_fn(
                    classifier_dataset, task.records["train"].path, options, self.setup
                )(input_context)
                for task in self.tasks
            ],
            self.probabilities,
            sampler_seed,
            input_context,
        )

    def after_training(self, runner) -> dict:
        if runner.is_chief:
            _write_original_layout(runner.model, self.tasks, self.options)
        return {}

    def evaluate(self, runner) -> dict:
        options = self.options
        results = {}
        for task in self.tasks:
            outputs = predict_records(
                runner.model, task.records["dev"], options.eval_batch_size, options, self.setup
            )
            results[task.name] = evaluate_classifier(
                task.name,
                outputs[task.name],
                outputs["label_ids"],
                task.is_regression,
                os.path.join(task.directory, "eval_results.txt"),
                runner.step,
                options.eval_batch_size,
            )
        summary = {
            f"{task}/{key}": value
            for task, values in results.items()
            for key, value in values.items()
        }
        write_eval_results(
            os.path.join(options.output_dir, "eval_results.txt"), summary, runner.step
        )
        return {"eval": results}

    def predict(self, runner) -> dict:
        options = self.options
        predictions = {}
        for task in self.tasks:
            outputs = predict_records(
                runner.model, task.records["test"], options.predict_batch_size, options, self.setup
            )
            predictions[task.name] = write_test_results(
                os.path.join(task.directory, "test_results.tsv"),
                outputs[task.name],
                task.is_regression,
            )
        return {"predictions": predictions}


def run_multitask(options: MultiTaskOptions) -> dict:
    """Trains one encoder with a head per task, evaluates each task on its dev set and/or
    predicts each task's test set (see MultiTaskTask).

    Returns:
      {"history": [(step, loss)], "num_train_steps": int, "probabilities": {task: p},
       "eval": {task: {eval_<metric>: value}}, "predictions": {task: the rows of its
       test_results.tsv, [test examples, num_classes] (probabilities) or [test examples, 1]
       (scores)}, "train_seconds": float}.
    """
    task = MultiTaskTask(options)
    results = run_task(task)
    results["num_train_steps"] = task.num_train_steps
    results["probabilities"] = dict(zip(options.task_names, task.probabilities, strict=False))
    return results


def _write_original_layout(model: MultiTaskClassifier, tasks: list[_Task], options) -> None:
    """The shared encoder as output_dir/bert_model.ckpt (+ bert_config.json) and each head as
    output_dir/<task>/classifier_head.ckpt, in the original TF1 names. The `checkpoint` state
    file of output_dir stays the runner's, so a rerun resumes from ckpt-N.

    An encoder fine-tuned from --hub_module_handle is not a BertEncoder: it stays in the
    runner's checkpoint only (the heads are written as usual)."""
    prefix = "not written: the encoder is an exported module; see the runner's ckpt-N"
    if isinstance(model.encoder, BertEncoder):
        prefix = write_original_checkpoint(
            model.encoder, os.path.join(options.output_dir, "bert_model.ckpt"), write_state=False
        )
        options.bert_config.to_json_file(os.path.join(options.output_dir, "bert_config.json"))
    for task in tasks:
        write_original_entries(
            classifier_head_entries(model.head(task.name), model.encoder.hidden_size),
            os.path.join(task.directory, HEAD_CHECKPOINT),
            write_state=False,
        )
    logging.info("Wrote the encoder (%s) and %d heads in the original layout", prefix, len(tasks))


def load_task_classifier(output_dir: str, task_name: str) -> BertClassifier:
    """One task's fine-tuned classifier from a multi-task run's original-layout outputs:
    output_dir/bert_model.ckpt (the shared encoder, with bert_config.json) and
    output_dir/<task>/classifier_head.ckpt. Returns a built BertClassifier (float32)."""
    config = read_bert_config(os.path.join(output_dir, "bert_config.json"))
    head_prefix = os.path.join(task_directory(output_dir, task_name), HEAD_CHECKPOINT)
    num_classes = int(np.shape(read_checkpoint_arrays(head_prefix)["output_bias"])[0])
    model = BertClassifier(BertEncoder.from_bert_config(config), num_classes=num_classes)
    model.build()
    load_bert_weights(model, os.path.join(output_dir, "bert_model.ckpt"), "tf1")
    read_original_entries(
        head_prefix, classifier_head_entries(model.classifier, config.hidden_size), model
    )
    return model
