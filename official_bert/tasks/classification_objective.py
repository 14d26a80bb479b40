"""The fine-tuning loss of run_classifier.py (and mean squared error for regression tasks,
binary cross-entropy for multi-label ones)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf


def classification_loss(logits, label_ids):
    """Mean cross-entropy of the true class, as the original create_model.

    logits: float [batch, num_classes]; label_ids: int [batch]. Returns a float32 scalar.
    """
    return tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.cast(label_ids, tf.int32), logits=tf.cast(logits, tf.float32)
        )
    )


def regression_loss(scores, targets):
    """Mean squared error; scores float [batch, 1], targets float [batch]. A float32 scalar."""
    scores = tf.reshape(tf.cast(scores, tf.float32), [-1])
    return tf.reduce_mean(tf.square(scores - tf.cast(targets, tf.float32)))


def multi_label_loss(logits, label_indicators):
    """Binary cross-entropy of each label's sigmoid, averaged over labels and examples: every
    label is its own yes/no question, so an example may have any number of labels (none too).

    logits: float [batch, num_labels]; label_indicators: int or float [batch, num_labels], 1
    where the example has the label (a [batch] vector when num_labels is 1). A float32 scalar.
    """
    logits = tf.cast(logits, tf.float32)
    targets = tf.reshape(tf.cast(label_indicators, tf.float32), tf.shape(logits))
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=targets, logits=logits))


def classifier_loss_fn(is_regression: bool, multi_label: bool = False):
    """The runner's loss_fn(outputs, batch) for a BertClassifier."""

    def loss_fn(outputs, batch):
        if is_regression:
            return regression_loss(outputs, batch["label_ids"])
        if multi_label:
            return multi_label_loss(outputs, batch["label_ids"])
        return classification_loss(outputs, batch["label_ids"])

    return loss_fn


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax of [n, num_classes] float logits, in float64 for stability."""
    shifted = np.asarray(logits, np.float64) - np.max(logits, axis=-1, keepdims=True)
    exp = np.exp(shifted)
    return exp / np.sum(exp, axis=-1, keepdims=True)


def per_example_eval_loss(outputs: np.ndarray, labels: np.ndarray, is_regression: bool):
    """float64 [examples]: the squared error (regression) or the cross-entropy of each example's
    label under the softmax of its logits."""
    if is_regression:
        return (np.reshape(outputs, [-1]) - labels) ** 2
    probabilities = softmax(outputs)
    return -np.log(np.maximum(probabilities[np.arange(len(labels)), labels], 1e-30))


def mean_eval_loss(
    outputs: np.ndarray, labels: np.ndarray, weights: np.ndarray, is_regression: bool
) -> float:
    """The original eval_loss: the per-example loss averaged over real examples (weights 1)."""
    per_example = per_example_eval_loss(outputs, labels, is_regression)
    return float(np.sum(per_example * weights) / max(np.sum(weights), 1e-9))


def mean_batch_loss(per_example: np.ndarray, batch_size: int) -> float:
    """The original eval_results' `loss` (the Estimator's): the mean over the evaluation
    batches, in order, of each batch's mean loss, so that a short last batch weighs as much as
    a full one. Equal to eval_loss when batch_size divides the examples."""
    means = [
        batch.mean()
        for batch in np.split(per_example, range(batch_size, len(per_example), batch_size))
    ]
    return float(np.mean(means)) if means else 0.0


def sigmoid(logits: np.ndarray) -> np.ndarray:
    """Element-wise logistic function of float logits, in float64 (no overflow warning for
    large negative logits)."""
    logits = np.asarray(logits, np.float64)
    exp = np.exp(-np.abs(logits))
    return np.where(logits >= 0, 1 / (1 + exp), exp / (1 + exp))


def mean_multi_label_eval_loss(logits: np.ndarray, label_indicators: np.ndarray) -> float:
    """multi_label_loss in numpy (float64) over a whole evaluation set: logits and
    label_indicators [examples, num_labels]."""
    logits = np.asarray(logits, np.float64).reshape(len(label_indicators), -1)
    targets = np.asarray(label_indicators, np.float64).reshape(logits.shape)
    # max(x, 0) - x * z + log(1 + exp(-|x|)): TensorFlow's stable form of the same loss.
    per_label = np.maximum(logits, 0) - logits * targets + np.log1p(np.exp(-np.abs(logits)))
    return float(np.mean(per_label)) if per_label.size else 0.0
