"""Multi-label metrics and threshold tuning against figures worked out by hand (the definitions
are scikit-learn's f1_score(average="micro" / "macro") and accuracy_score on indicator arrays)."""

import numpy as np
import pytest

from official_bert.evaluation.multi_label_metrics import (
    label_f1_scores,
    multi_label_metrics,
    predict_label_sets,
    tune_thresholds,
)

# 4 examples, 3 labels. The last example has no label and none is predicted.
GOLD = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 0]])
PREDICTED = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 1], [0, 0, 0]])


def test_metrics_match_the_hand_computation():
    # Label 0: tp 2, fp 0, fn 0 -> F1 1. Label 1: tp 1, fn 1 -> 2/(2+1) = 2/3.
    # Label 2: tp 0, fp 1, fn 1 -> 0.
    np.testing.assert_allclose(label_f1_scores(GOLD, PREDICTED), [1.0, 2 / 3, 0.0])
    metrics = multi_label_metrics(GOLD, PREDICTED)
    # Micro: tp 3, fp 1, fn 2 -> 6 / (6 + 1 + 2).
    assert metrics["micro_f1"] == pytest.approx(6 / 9)
    assert metrics["macro_f1"] == pytest.approx((1 + 2 / 3 + 0) / 3)
    # Examples 1 and 3 (the empty set, predicted empty) are exactly right.
    assert metrics["exact_match"] == pytest.approx(0.5)


def test_a_label_nobody_has_or_predicts_counts_zero_in_the_macro_mean():
    gold = np.array([[1, 0], [0, 0]])
    assert multi_label_metrics(gold, gold) == pytest.approx(
        {"micro_f1": 1.0, "macro_f1": 0.5, "exact_match": 1.0}
    )


def test_shapes_must_agree():
    with pytest.raises(ValueError, match="differ in shape"):
        multi_label_metrics(GOLD, PREDICTED[:, :2])


def test_predicted_sets_reach_their_thresholds():
    probabilities = np.array([[0.2, 0.7], [0.3, 0.69]])
    np.testing.assert_array_equal(predict_label_sets(probabilities, [0.3, 0.7]), [[0, 1], [1, 0]])


def test_tuning_picks_the_f1_best_cut_half_way_to_the_next_probability():
    # Label 0, by hand (predict positive when p >= cut; 2 positives):
    #   cut 0.9: tp 1, predicted 1 -> F1 2/3     cut 0.8: tp 1, predicted 2 -> 1/2
    #   cut 0.35: tp 2, predicted 3 -> 4/5 (best) cut 0.3: tp 2, predicted 4 -> 2/3
    #   cut 0.1: tp 2, predicted 5 -> 4/7
    # The threshold lies half-way between 0.35 and the next lower probability 0.3: 0.325.
    # (0.5 would predict 0.9 and 0.8 only: F1 1/2.)
    # Label 1: one positive, the top score: the cut at 0.7, threshold (0.6 + 0.7) / 2.
    # Label 2: no positive: 0.5 is kept.
    probabilities = np.array(
        [[0.9, 0.2, 0.9], [0.8, 0.7, 0.1], [0.35, 0.6, 0.5], [0.3, 0.1, 0.2], [0.1, 0.3, 0.3]]
    )
    gold = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 0, 0], [0, 0, 0]])
    thresholds = tune_thresholds(probabilities, gold)
    np.testing.assert_allclose(thresholds, [0.325, 0.65, 0.5])
    predicted = predict_label_sets(probabilities, thresholds)
    np.testing.assert_allclose(label_f1_scores(gold, predicted), [0.8, 1.0, 0.0])


def test_ties_go_to_the_threshold_nearest_one_half():
    # Positives at 0.95 and 0.05, negatives at 0.7 and 0.3. Cut 0.95: tp 1 of 1 predicted, F1
    # 2/3; cut 0.7: 2/4; cut 0.3: 2/5; cut 0.05 (all positive): tp 2 of 4, 4/6 = 2/3 again.
    # The tied thresholds are (0.7 + 0.95) / 2 = 0.825 and (0 + 0.05) / 2 = 0.025; 0.825 is
    # nearer 0.5.
    probabilities = np.array([[0.95], [0.7], [0.3], [0.05]])
    gold = np.array([[1], [0], [0], [1]])
    np.testing.assert_allclose(tune_thresholds(probabilities, gold), [0.825])
