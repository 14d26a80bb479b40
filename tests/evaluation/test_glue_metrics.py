"""GLUE metrics against hand-computed values and scipy (when installed)."""

import math

import numpy as np
import pytest

from official_bert.evaluation.glue_metrics import (
    average_ranks,
    f1_score,
    glue_metrics,
    matthews_corrcoef,
    pearson_correlation,
    spearman_correlation,
)

# tp=6, tn=3, fp=1, fn=2
LABELS = np.array([1] * 6 + [0] * 3 + [0] + [1] * 2)
PREDICTIONS = np.array([1] * 6 + [0] * 3 + [1] + [0] * 2)


def test_f1_and_mcc_of_a_known_confusion_matrix():
    assert f1_score(LABELS, PREDICTIONS) == pytest.approx(12 / 15)
    assert matthews_corrcoef(LABELS, PREDICTIONS) == pytest.approx(16 / math.sqrt(7 * 8 * 4 * 5))
    # A constant prediction has MCC 0 (sklearn's convention), not a division by zero.
    assert matthews_corrcoef(LABELS, np.ones_like(LABELS)) == 0.0


def test_ranks_and_correlations():
    np.testing.assert_allclose(average_ranks(np.array([30, 10, 20, 20])), [4, 1, 2.5, 2.5])
    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert pearson_correlation(x, 2 * x + 1) == pytest.approx(1.0)
    assert pearson_correlation(x, -x) == pytest.approx(-1.0)
    assert spearman_correlation(x, x**3) == pytest.approx(1.0)


# scipy.stats.pearsonr and spearmanr (scipy 1.17.1) on the data below: the reference values,
# kept here so that the check runs without scipy.
SCIPY_PEARSON = 0.6481219522704553
SCIPY_SPEARMAN = 0.6495335453372094


def test_correlations_equal_scipy_with_ties():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 6, 500).astype(np.float64)  # many ties, as STS-B gold scores
    y = x + rng.normal(0, 2, 500)
    assert pearson_correlation(y, x) == pytest.approx(SCIPY_PEARSON, abs=1e-12)
    assert spearman_correlation(y, x) == pytest.approx(SCIPY_SPEARMAN, abs=1e-12)


def test_task_metrics():
    logits = np.stack([1 - PREDICTIONS, PREDICTIONS], axis=1).astype(np.float32)
    assert set(glue_metrics("MRPC", LABELS, logits, False)) == {"accuracy", "f1"}
    assert set(glue_metrics("CoLA", LABELS, logits, False)) == {"accuracy", "mcc"}
    assert glue_metrics("SST-2", LABELS, logits, False) == {"accuracy": pytest.approx(9 / 12)}
    scores = np.array([[0.5], [1.0], [4.0]])
    result = glue_metrics("STS-B", np.array([1.0, 2.0, 5.0]), scores, True)
    assert result["spearman"] == pytest.approx(1.0)
    assert set(result) == {"pearson", "spearman"}
