"""The loss of multi-task fine-tuning: each batch's loss is its own task's."""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf

from official_bert.tasks.classification_objective import classification_loss, regression_loss


def multitask_loss_fn(task_names: Sequence[str], task_is_regression: Sequence[bool]):
    """The runner's loss_fn(outputs, batch) for a MultiTaskClassifier.

    outputs: {task name: logits}, every head's; batch["task_id"]: int32 [batch], one task index
    (into task_names) for the whole batch; batch["label_ids"]: float32 [batch]. Returns the
    float32 scalar loss of that task's head: cross-entropy as the original run_classifier.py, or
    mean squared error for a regression task (STS-B), as the single-task path.

    The loss is chosen with tf.switch_case, which runs only the sampled task's branch. A masked
    sum over all tasks would be wrong, not only slower: it evaluates every loss on this batch's
    labels, and cross-entropy of STS-B's scores (class ids up to 5 for a 2-class head) fails on
    CPU and is NaN on GPU, and NaN * 0 is NaN. Inside the runner's tf.function the heads of the
    other tasks get zero gradients, so every head's variables stay in the one optimizer update;
    with Adam their moments decay and momentum moves them a little, as in MT-DNN's single
    optimizer over all tasks.
    """
    losses = [
        regression_loss if regression else classification_loss for regression in task_is_regression
    ]
    if len(losses) != len(task_names):
        raise ValueError(f"{len(task_names)} tasks but {len(losses)} regression flags")

    def loss_fn(outputs, batch):
        task_id = tf.cast(batch["task_id"][0], tf.int32)
        branches = [
            lambda loss=loss, task=task: loss(outputs[task], batch["label_ids"])
            for loss, task in zip(losses, task_names, strict=True)
        ]
        return tf.switch_case(task_id, branches)

    return loss_fn
