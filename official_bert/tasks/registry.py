"""Which Task runs a `--task_name`: one table for run_classifier.py's tasks.

A task name names a data processor (data/classification/examples.py's registry: the GLUE tasks,
xnli, generic, conll, chinese_ner, swag, c3, and any registered since); the processor's family (the class it derives
from) decides the task. Adding a family of tasks is one entry here; adding a task of an existing
family is one registered processor (docs/adding_a_task.md).
"""

from __future__ import annotations

from official_bert.data.classification.examples import (
    DataProcessor,
    get_processor,
    import_processor_module,
)
from official_bert.data.multiple_choice.examples import MultipleChoiceProcessor
from official_bert.data.tagging.examples import TaggingProcessor
from official_bert.tasks.classification import (
    ClassificationTask,
    ClassifierOptions,
    validate_classifier_options,
)
from official_bert.tasks.driver import run_task
from official_bert.tasks.multi_label_classification import MultiLabelClassificationTask
from official_bert.tasks.multiple_choice import MultipleChoiceTask
from official_bert.tasks.tagging import TaggingTask
from official_bert.tasks.task import Task

# Processor family -> the Task that runs its tasks.
TASKS_BY_PROCESSOR_FAMILY: dict[type, type[ClassificationTask]] = {
    DataProcessor: ClassificationTask,
    TaggingProcessor: TaggingTask,
    MultipleChoiceProcessor: MultipleChoiceTask,
}


def create_classifier_task(options: ClassifierOptions) -> Task:
    """The Task of options.task_name over options.data_dir (its processor made with the
    options' processor arguments); MultiLabelClassificationTask with options.multi_label."""
    # The flags' checks first: a wrong setting is named before any data is read.
    validate_classifier_options(options)
    if options.processor_module:
        import_processor_module(options.processor_module)
    processor = get_processor(options.task_name, options.data_dir, **options.processor_arguments())
    if options.multi_label:
        return MultiLabelClassificationTask(options, processor)
    return task_class_for_processor(processor)(options, processor)


def task_class_for_processor(processor) -> type[ClassificationTask]:
    """The Task class of the processor's family (the most specific registered one)."""
    for family in type(processor).__mro__:
        task_class = TASKS_BY_PROCESSOR_FAMILY.get(family)
        if task_class is not None:
            return task_class
    raise ValueError(
        f"the processor {type(processor).__name__} belongs to no registered task family "
        f"({sorted(c.__name__ for c in TASKS_BY_PROCESSOR_FAMILY)})"
    )


def run_classifier(options: ClassifierOptions) -> dict:
    """Trains, evaluates and/or predicts options.task_name as the original run_classifier.py
    (a tagging task such as conll as TaggingTask); see the tasks' docstrings for their outputs.

    Returns:
      {"history": [(step, loss)], "eval": {...}, "predictions": ..., "export_dir": str,
       "scalar_mix": the dict written to scalar_mix_weights.json (frozen_scalar_mix);
       with multi_label also "label_thresholds" (after training) and "predicted_labels" (a
       tuple of label names per test example)}, the keys that apply.
    """
    return run_task(create_classifier_task(options))
