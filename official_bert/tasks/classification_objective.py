"""The fine-tuning loss of run_classifier.py (and mean squared error for regression tasks)."""

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


def classifier_loss_fn(is_regression: bool):
    """The runner's loss_fn(outputs, batch) for a BertClassifier."""

    def loss_fn(outputs, batch):
        if is_regression:
            return regression_loss(outputs, batch["label_ids"])
        return classification_loss(outputs, batch["label_ids"])

    return loss_fn


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax of [n, num_classes] float logits, in float64 for stability."""
    shifted = np.asarray(logits, np.float64) - np.max(logits, axis=-1, keepdims=True)
    exp = np.exp(shifted)
    return exp / np.sum(exp, axis=-1, keepdims=True)


def mean_eval_loss(
    outputs: np.ndarray, labels: np.ndarray, weights: np.ndarray, is_regression: bool
) -> float:
    """The original eval_loss: the per-example loss averaged over real examples (weights 1)."""
    if is_regression:
        per_example = (np.reshape(outputs, [-1]) - labels) ** 2
    else:
        probabilities = softmax(outputs)
        per_example = -np.log(np.maximum(probabilities[np.arange(len(labels)), labels], 1e-30))
    return float(np.sum(per_example * weights) / max(np.sum(weights), 1e-9))
