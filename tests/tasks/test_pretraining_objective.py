import numpy as np
import tensorflow as tf

from official_bert.tasks.pretraining_objective import (
    PretrainingMetrics,
    left_to_right_lm_loss,
    left_to_right_loss,
    left_to_right_loss_denominators,
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
    batch_losses = []
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
        # The original Estimator's eval `loss`: the mean over batches of the total loss.
        batch_nll = weights * -np.take_along_axis(_log_softmax(logits), ids[..., None], -1)[..., 0]
        batch_losses.append(
            batch_nll.sum() / (weights.sum() + 1e-5)
            - _log_softmax(nsp_logits)[np.arange(3), labels[:, 0]].mean()
        )
    result = metrics.result()
    np.testing.assert_allclose(result["masked_lm_accuracy"], correct / weight, rtol=1e-6)
    np.testing.assert_allclose(result["masked_lm_loss"], nll_sum / weight, rtol=1e-5)
    np.testing.assert_allclose(result["next_sentence_accuracy"], nsp_correct / 6, rtol=1e-6)
    np.testing.assert_allclose(result["next_sentence_loss"], nsp_nll / 6, rtol=1e-5)
    np.testing.assert_allclose(result["loss"], np.mean(batch_losses), rtol=1e-5)
    metrics.reset()
    assert metrics.result()["masked_lm_accuracy"] == 0.0


def _left_to_right_batch(seed=0):
    """Logits [3, 6, 11] and ids of three rows of 6, 4 and 2 real tokens."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(3, 6, 11)).astype(np.float32)
    mask = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0]], np.int32)
    ids = rng.integers(1, 11, (3, 6)).astype(np.int32) * mask
    return logits, ids, mask


def _next_token_nlls(logits, ids, mask):
    """Hand-computed: -log p(ids[b, t + 1] | logits[b, t]) for every real target t + 1."""
    log_probs = _log_softmax(logits.astype(np.float64))
    return [
        -log_probs[b, t, ids[b, t + 1]]
        for b in range(ids.shape[0])
        for t in range(ids.shape[1] - 1)
        if mask[b, t + 1]
    ]


def test_left_to_right_loss_is_the_mean_next_token_nll_without_padding():
    logits, ids, mask = _left_to_right_batch()
    nlls = _next_token_nlls(logits, ids, mask)
    assert len(nlls) == 5 + 3 + 1
    # The mean, with masked_lm_loss's guard on the denominator (the original's + 1e-5).
    expected = np.sum(nlls) / (len(nlls) + 1e-5)
    np.testing.assert_allclose(left_to_right_lm_loss(logits, ids, mask), expected, rtol=1e-6)
    batch = {"input_word_ids": ids, "input_mask": mask}
    np.testing.assert_allclose(
        left_to_right_loss({"lm_logits": logits}, batch), expected, rtol=1e-6
    )
    # Padding logits and padding ids play no part.
    noisy_logits, noisy_ids = logits.copy(), ids.copy()
    noisy_logits[1, 3:] += 100.0 * np.random.default_rng(1).normal(size=(3, 11))
    noisy_ids[2, 2:] = 9
    np.testing.assert_allclose(
        left_to_right_lm_loss(noisy_logits, noisy_ids, mask), expected, rtol=1e-6
    )
    # Two halves with the whole batch's denominator sum to the whole batch's loss.
    denominator = left_to_right_loss_denominators(batch)["next_token"]
    assert float(denominator) == 9.0
    halves = [
        left_to_right_loss(
            {"lm_logits": logits[part]},
            {"input_word_ids": ids[part], "input_mask": mask[part]},
            denominators={"next_token": denominator},
        )
        for part in (slice(0, 1), slice(1, 3))
    ]
    np.testing.assert_allclose(sum(halves), expected, rtol=1e-6)


def test_left_to_right_metrics():
    metrics = PretrainingMetrics(next_sentence=True, objective="ltr")
    correct, nlls = 0, []
    for seed in (0, 1):
        logits, ids, mask = _left_to_right_batch(seed)
        metrics.update(
            {"lm_logits": tf.constant(logits)}, {"input_word_ids": ids, "input_mask": mask}
        )
        nlls += _next_token_nlls(logits, ids, mask)
        predicted = logits.argmax(-1)
        correct += sum(
            predicted[b, t] == ids[b, t + 1] for b in range(3) for t in range(5) if mask[b, t + 1]
        )
    result = metrics.result()
    assert sorted(result) == ["lm_accuracy", "lm_loss", "loss"]  # no next-sentence metrics
    np.testing.assert_allclose(result["lm_accuracy"], correct / len(nlls), rtol=1e-6)
    np.testing.assert_allclose(result["lm_loss"], np.mean(nlls), rtol=1e-5)
