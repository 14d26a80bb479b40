"""GLUE task metrics on numpy arrays: accuracy, F1, Matthews correlation, Pearson, Spearman.

Hand-written (a few lines each) so that evaluation needs neither scipy nor scikit-learn; the
definitions are those of the GLUE benchmark (sklearn's f1_score / matthews_corrcoef, scipy's
pearsonr / spearmanr with average ranks for ties).
"""

from __future__ import annotations

import numpy as np

# The metric GLUE reports per task (besides accuracy), by task name as in --task_name.
_TASK_METRICS = {
    "cola": ("mcc",),
    "mrpc": ("f1",),
    "qqp": ("f1",),
    "sts-b": ("pearson", "spearman"),
    "stsb": ("pearson", "spearman"),
}


def accuracy(labels: np.ndarray, predictions: np.ndarray) -> float:
    return float(np.mean(labels == predictions)) if len(labels) else 0.0


def f1_score(labels: np.ndarray, predictions: np.ndarray) -> float:
    """F1 of the positive class (label 1)."""
    true_positive = float(np.sum((predictions == 1) & (labels == 1)))
    false_positive = float(np.sum((predictions == 1) & (labels == 0)))
    false_negative = float(np.sum((predictions == 0) & (labels == 1)))
    denominator = 2 * true_positive + false_positive + false_negative
    return 2 * true_positive / denominator if denominator else 0.0


def matthews_corrcoef(labels: np.ndarray, predictions: np.ndarray) -> float:
    """Matthews correlation of binary labels (0 when a margin is empty, as sklearn)."""
    tp = float(np.sum((predictions == 1) & (labels == 1)))
    tn = float(np.sum((predictions == 0) & (labels == 0)))
    fp = float(np.sum((predictions == 1) & (labels == 0)))
    fn = float(np.sum((predictions == 0) & (labels == 1)))
    denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return float((tp * tn - fp * fn) / denominator) if denominator else 0.0


def pearson_correlation(x: np.ndarray, y: np.ndarray) -> float:
    x = np.asarray(x, np.float64) - np.mean(x)
    y = np.asarray(y, np.float64) - np.mean(y)
    denominator = np.sqrt(np.sum(x * x) * np.sum(y * y))
    return float(np.sum(x * y) / denominator) if denominator else 0.0


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks; tied values share the mean of their ranks (scipy.stats.rankdata)."""
    values = np.asarray(values)
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    # Each run of equal values gets the mean of the ranks it spans.
    starts = np.concatenate([[True], sorted_values[1:] != sorted_values[:-1]])
    run_ids = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    last = np.concatenate([first[1:], [len(values)]]) - 1
    ranks = np.empty(len(values), np.float64)
    ranks[order] = (first[run_ids] + last[run_ids]) / 2.0 + 1.0
    return ranks


def spearman_correlation(x: np.ndarray, y: np.ndarray) -> float:
    return pearson_correlation(average_ranks(x), average_ranks(y))


def glue_metrics(
    task_name: str, labels: np.ndarray, outputs: np.ndarray, is_regression: bool
) -> dict[str, float]:
    """Dev-set metrics of a task.

    Args:
      task_name: --task_name (selects F1 / MCC / Pearson-Spearman beside accuracy).
      labels: [n] int class ids, or float targets for regression.
      outputs: [n, num_classes] logits or probabilities, or [n, 1] / [n] scores for regression.
      is_regression: whether the task is a regression (STS-B).

    Returns:
      {"accuracy", plus "f1" | "mcc"} for classification; {"pearson", "spearman"} for
      regression (accuracy has no meaning there).
    """
    task_name = task_name.lower()
    if is_regression:
        scores = np.reshape(outputs, [-1])
        return {
            "pearson": pearson_correlation(scores, labels),
            "spearman": spearman_correlation(scores, labels),
        }
    predictions = np.argmax(outputs, axis=-1)
    results = {"accuracy": accuracy(labels, predictions)}
    for metric in _TASK_METRICS.get(task_name, ()):
        if metric == "f1":
            results["f1"] = f1_score(labels, predictions)
        elif metric == "mcc":
            results["mcc"] = matthews_corrcoef(labels, predictions)
    return results
