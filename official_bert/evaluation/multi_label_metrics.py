"""Multi-label classification metrics on numpy arrays, and the per-label decision thresholds
tuned on dev predictions.

Definitions as scikit-learn's for multi-label indicator arrays: micro F1 (f1_score(...,
average="micro"): true/false positives and false negatives summed over all labels), macro F1
(average="macro": the unweighted mean of the per-label F1s, a label with neither gold nor
predicted examples counting 0, sklearn's zero_division default), exact match (accuracy_score:
the fraction of examples whose predicted label set equals the gold set, the "subset accuracy").
"""

from __future__ import annotations

import numpy as np

# A label without a positive dev example gives no evidence for a threshold: it keeps this one.
DEFAULT_THRESHOLD = 0.5


def _counts(label_indicators: np.ndarray, predicted: np.ndarray):
    gold = np.asarray(label_indicators).astype(bool)
    guess = np.asarray(predicted).astype(bool)
    if gold.shape != guess.shape:
        raise ValueError(f"gold labels {gold.shape} and predictions {guess.shape} differ in shape")
    true_positive = np.sum(gold & guess, axis=0).astype(np.float64)
    false_positive = np.sum(~gold & guess, axis=0).astype(np.float64)
    false_negative = np.sum(gold & ~guess, axis=0).astype(np.float64)
    return true_positive, false_positive, false_negative


def _f1(true_positive, false_positive, false_negative):
    denominator = 2 * true_positive + false_positive + false_negative
    return np.where(denominator > 0, 2 * true_positive / np.maximum(denominator, 1), 0.0)


def label_f1_scores(label_indicators: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """The F1 of each label: float64 [num_labels] from gold and predicted 0/1 (or bool) arrays
    [examples, num_labels]."""
    return _f1(*_counts(label_indicators, predicted))


def multi_label_metrics(label_indicators: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """{"micro_f1", "macro_f1", "exact_match"} of predicted label sets against gold ones, both
    0/1 arrays [examples, num_labels]."""
    true_positive, false_positive, false_negative = _counts(label_indicators, predicted)
    micro = _f1(true_positive.sum(), false_positive.sum(), false_negative.sum())
    per_label = _f1(true_positive, false_positive, false_negative)
    same_set = np.all(
        np.asarray(label_indicators).astype(bool) == np.asarray(predicted).astype(bool), axis=1
    )
    return {
        "micro_f1": float(micro),
        "macro_f1": float(np.mean(per_label)) if per_label.size else 0.0,
        "exact_match": float(np.mean(same_set)) if same_set.size else 0.0,
    }


def predict_label_sets(probabilities: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """int32 [examples, num_labels]: 1 where a label's probability reaches its threshold
    (probability >= threshold, as the serving model decides)."""
    return (np.asarray(probabilities) >= np.asarray(thresholds)).astype(np.int32)


def tune_thresholds(probabilities: np.ndarray, label_indicators: np.ndarray) -> np.ndarray:
    """Per-label decision thresholds that maximize each label's F1 on these (dev) predictions.

    For each label, every distinct probability p_i of the examples is a candidate cut
    ("positive when probability >= p_i"); the threshold is placed half-way between p_i and the
    next lower distinct probability (0 below the lowest), so that unseen examples close to the
    cut fall on either side evenly. Among cuts of equal F1 the threshold nearest 0.5 wins. A
    label with no positive example keeps DEFAULT_THRESHOLD.

    Args:
      probabilities: float [examples, num_labels], each label's sigmoid.
      label_indicators: 0/1 [examples, num_labels], the gold label sets.

    Returns:
      float64 [num_labels].
    """
    probabilities = np.asarray(probabilities, np.float64)
    gold = np.asarray(label_indicators).astype(bool)
    thresholds = np.full(probabilities.shape[1], DEFAULT_THRESHOLD)
    for label in range(probabilities.shape[1]):
        scores, positives = probabilities[:, label], gold[:, label]
        if not positives.any():
            continue
        cuts = np.unique(scores)  # ascending
        # Predicted positives and true positives of "score >= cut", for every cut at once.
        predicted = len(scores) - np.searchsorted(np.sort(scores), cuts, side="left")
        positive_scores = np.sort(scores[positives])
        true_positive = len(positive_scores) - np.searchsorted(positive_scores, cuts, "left")
        f1 = 2 * true_positive / (predicted + len(positive_scores))
        lower = np.concatenate([[0.0], cuts[:-1]])
        candidates = (lower + cuts) / 2
        best = np.flatnonzero(np.isclose(f1, f1.max(), rtol=0, atol=1e-12))
        thresholds[label] = candidates[best[np.argmin(np.abs(candidates[best] - 0.5))]]
    return thresholds
