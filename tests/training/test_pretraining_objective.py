import numpy as np
import tensorflow as tf

from official_bert.training.pretraining_objective import (
    PretrainingMetrics,
    masked_lm_loss,
    next_sentence_loss,
    pretraining_loss,
)


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _batch(seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(3, 4, 11)).astype(np.float32)
    ids = rng.integers(0, 11, (3, 4))
    weights = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]], np.float32)
    nsp_logits = rng.normal(size=(3, 2)).astype(np.float32)
    labels = np.array([[0], [1], [1]])
    return logits, ids, weights, nsp_logits, labels


def test_losses_equal_the_original_formulas():
    logits, ids, weights, nsp_logits, labels = _batch()
    nll = -np.take_along_axis(_log_softmax(logits), ids[..., None], axis=-1)[..., 0]
    expected_mlm = (weights * nll).sum() / (weights.sum() + 1e-5)
    np.testing.assert_allclose(masked_lm_loss(logits, ids, weights), expected_mlm, rtol=1e-6)
    expected_nsp = -_log_softmax(nsp_logits)[np.arange(3), labels[:, 0]].mean()
    np.testing.assert_allclose(next_sentence_loss(nsp_logits, labels), expected_nsp, rtol=1e-6)
    batch = {"masked_lm_ids": ids, "masked_lm_weights": weights, "next_sentence_labels": labels}
    total = pretraining_loss({"mlm_logits": logits, "next_sentence_logits": nsp_logits}, batch)
    np.testing.assert_allclose(total, expected_mlm + expected_nsp, rtol=1e-6)
    mlm_only = pretraining_loss({"mlm_logits": logits}, batch)
    np.testing.assert_allclose(mlm_only, expected_mlm, rtol=1e-6)


def test_metrics_accumulate_weighted_over_batches():
    metrics = PretrainingMetrics()
    first, second = _batch(0), _batch(1)
    correct = weight = nll_sum = nsp_correct = nsp_nll = 0.0
    for logits, ids, weights, nsp_logits, labels in (first, second):
        batch = {"masked_lm_ids": ids, "masked_lm_weights": weights, "next_sentence_labels": labels}
        metrics.update(
            {"mlm_logits": tf.constant(logits), "next_sentence_logits": nsp_logits}, batch
        )
        correct += (weights * (logits.argmax(-1) == ids)).sum()
        weight += weights.sum()
        nll_sum += (
            weights * -np.take_along_axis(_log_softmax(logits), ids[..., None], -1)[..., 0]
        ).sum()
        nsp_correct += (nsp_logits.argmax(-1) == labels[:, 0]).sum()
        nsp_nll += -_log_softmax(nsp_logits)[np.arange(3), labels[:, 0]].sum()
    result = metrics.result()
    np.testing.assert_allclose(result["masked_lm_accuracy"], correct / weight, rtol=1e-6)
    np.testing.assert_allclose(result["masked_lm_loss"], nll_sum / weight, rtol=1e-5)
    np.testing.assert_allclose(result["next_sentence_accuracy"], nsp_correct / 6, rtol=1e-6)
    np.testing.assert_allclose(result["next_sentence_loss"], nsp_nll / 6, rtol=1e-5)
    metrics.reset()
    assert metrics.result()["masked_lm_accuracy"] == 0.0
