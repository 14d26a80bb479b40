"""The losses and evaluation metrics of the original run_pretraining.py, and those of the BERT
paper's left-to-right LM ablation ("LTR & No NSP", section 5.1)."""

from __future__ import annotations

import tensorflow as tf

from official_bert.kernels.softmax_cross_entropy import sparse_softmax_cross_entropy

# The original's denominator guard: sum(weights) + 1e-5.
_MLM_DENOMINATOR_EPSILON = 1e-5


def masked_lm_nll(mlm_logits, masked_lm_ids):
    """Negative log-likelihood of the true token at every prediction slot.

    mlm_logits: float [batch, num_predictions, vocab_size]; masked_lm_ids: int
    [batch, num_predictions]. Returns float32 [batch, num_predictions].
    """
    return sparse_softmax_cross_entropy(
        labels=tf.cast(masked_lm_ids, tf.int32), logits=tf.cast(mlm_logits, tf.float32)
    )


def masked_lm_loss(mlm_logits, masked_lm_ids, masked_lm_weights, denominator=None):
    """sum(weights * nll) / (sum(weights) + 1e-5), as the original get_masked_lm_output.
    Returns a float32 scalar.

    denominator: float32 scalar, the sum of masked_lm_weights over a larger batch this one is a
    part of (micro-batches, replicas); the result is then this part's share of that batch's loss,
    and the shares of all parts sum to its loss (the 1e-5 guard is added once, to the total).
    """
    weights = tf.cast(masked_lm_weights, tf.float32)
    numerator = tf.reduce_sum(weights * masked_lm_nll(mlm_logits, masked_lm_ids))
    if denominator is None:
        denominator = tf.reduce_sum(weights)
    return numerator / (denominator + _MLM_DENOMINATOR_EPSILON)


def next_sentence_loss(next_sentence_logits, next_sentence_labels, denominator=None):
    """Mean cross-entropy of the 2-way next-sentence head (labels [batch] or [batch, 1];
    0 = B is the real next segment). Returns a float32 scalar.

    denominator: float32 scalar, the number of examples of a larger batch this one is a part
    of; the result is then this part's share of the mean over that batch.
    """
    labels = tf.reshape(tf.cast(next_sentence_labels, tf.int32), [-1])
    nll = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=tf.cast(next_sentence_logits, tf.float32)
    )
    if denominator is None:
        return tf.reduce_mean(nll)
    return tf.reduce_sum(nll) / denominator


def pretraining_loss_denominators(batch: dict) -> dict:
    """What the pre-training loss divides by, from a batch alone: {"masked_lm": sum of
    masked_lm_weights, "next_sentence": number of examples}, float32 scalars. Summed over the
    parts of an update (the Runner's loss_denominators_fn), they normalize the loss over all of
    it, so k micro-batches or n replicas give the loss and gradient of one batch."""
    return {
        "masked_lm": tf.reduce_sum(tf.cast(batch["masked_lm_weights"], tf.float32)),
        "next_sentence": tf.cast(tf.shape(batch["masked_lm_weights"])[0], tf.float32),
    }


def pretraining_loss(outputs: dict, batch: dict, denominators: dict | None = None):
    """Total loss = MLM loss (+ NSP loss when the model has a next-sentence head), a float32
    scalar. denominators: pretraining_loss_denominators summed over the whole update batch, to
    return this part's share of its loss (see masked_lm_loss)."""
    denominators = denominators or {}
    loss = masked_lm_loss(
        outputs["mlm_logits"],
        batch["masked_lm_ids"],
        batch["masked_lm_weights"],
        denominators.get("masked_lm"),
    )
    if "next_sentence_logits" in outputs:
        loss += next_sentence_loss(
            outputs["next_sentence_logits"],
            batch["next_sentence_labels"],
            denominators.get("next_sentence"),
        )
    return loss


def next_token_targets(lm_logits, input_word_ids, input_mask):
    """What a left-to-right LM predicts: position t (0 <= t < seq_length - 1) predicts token
    t + 1, counted where that token is real (input_mask 1; a real target's predecessor is real
    too, so padding never predicts nor is predicted).

    lm_logits: float [batch, seq_length, vocab_size]; input_word_ids, input_mask: int
    [batch, seq_length]. Returns (logits float [batch, seq_length - 1, vocab_size], target ids
    int32 [batch, seq_length - 1], weights float32 [batch, seq_length - 1]), in the shape of
    masked_lm_loss's arguments.
    """
    return (
        lm_logits[:, :-1],
        tf.cast(input_word_ids[:, 1:], tf.int32),
        tf.cast(input_mask[:, 1:], tf.float32),
    )


def left_to_right_lm_loss(lm_logits, input_word_ids, input_mask, denominator=None):
    """The mean next-token negative log-likelihood over the real targets (see
    next_token_targets), a float32 scalar; masked_lm_loss's weighting, the weights being the
    target mask (so its 1e-5 guard too). denominator: as in masked_lm_loss."""
    return masked_lm_loss(*next_token_targets(lm_logits, input_word_ids, input_mask), denominator)


def left_to_right_loss_denominators(batch: dict) -> dict:
    """{"next_token": the number of real next-token targets}, float32 scalar (see
    pretraining_loss_denominators)."""
    return {"next_token": tf.reduce_sum(tf.cast(batch["input_mask"][:, 1:], tf.float32))}


def left_to_right_loss(outputs: dict, batch: dict, denominators: dict | None = None):
    """The loss of the LTR objective (no next-sentence term), a float32 scalar; denominators as
    in pretraining_loss."""
    return left_to_right_lm_loss(
        outputs["lm_logits"],
        batch["input_word_ids"],
        batch["input_mask"],
        (denominators or {}).get("next_token"),
    )


class PretrainingMetrics:
    """The original's evaluation metrics, accumulated over batches:
    masked_lm_accuracy and masked_lm_loss (weighted by masked_lm_weights), and
    next_sentence_accuracy and next_sentence_loss (per example); and `loss`, as the original's
    Estimator reported it: the mean over batches of each batch's total loss (its masked-LM loss,
    weighted nll / (weight + 1e-5) as the original's get_masked_lm_output, plus its mean
    next-sentence loss).

    objective="ltr": lm_accuracy and lm_loss instead, the same token accuracy and mean NLL over
    the real next-token targets (see next_token_targets); no next-sentence metrics.
    """

    def __init__(self, next_sentence: bool = True, objective: str = "mlm"):
        if objective not in ("mlm", "ltr"):
            raise ValueError(f"objective must be 'mlm' or 'ltr', got {objective!r}")
        self.objective = objective
        self.next_sentence = next_sentence and objective == "mlm"
        self._sums = {
            name: tf.Variable(0.0, trainable=False, dtype=tf.float64)
            for name in (
                "token_correct",
                "token_nll",
                "token_weight",
                "nsp_correct",
                "nsp_nll",
                "nsp_count",
                "batch_loss",
                "batches",
            )
        }

    def reset(self):
        for variable in self._sums.values():
            variable.assign(0.0)

    def update(self, outputs: dict, batch: dict):
        if self.objective == "ltr":
            logits, ids, weights = next_token_targets(
                outputs["lm_logits"], batch["input_word_ids"], batch["input_mask"]
            )
        else:
            logits = outputs["mlm_logits"]
            weights = tf.cast(batch["masked_lm_weights"], tf.float32)
            ids = tf.cast(batch["masked_lm_ids"], tf.int32)
        predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
        self._add("token_correct", tf.reduce_sum(weights * tf.cast(predictions == ids, tf.float32)))
        token_nll = tf.reduce_sum(weights * masked_lm_nll(logits, ids))
        self._add("token_nll", token_nll)
        self._add("token_weight", tf.reduce_sum(weights))
        batch_loss = token_nll / (tf.reduce_sum(weights) + 1e-5)
        if self.next_sentence and "next_sentence_logits" in outputs:
            labels = tf.reshape(tf.cast(batch["next_sentence_labels"], tf.int32), [-1])
            logits = tf.cast(outputs["next_sentence_logits"], tf.float32)
            predicted = tf.argmax(logits, axis=-1, output_type=tf.int32)
            self._add("nsp_correct", tf.reduce_sum(tf.cast(predicted == labels, tf.float32)))
            nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            self._add("nsp_nll", tf.reduce_sum(nll))
            self._add("nsp_count", tf.cast(tf.size(labels), tf.float32))
            batch_loss += tf.reduce_mean(nll)
        self._add("batch_loss", batch_loss)
        self._add("batches", 1.0)

    def _add(self, name, value):
        self._sums[name].assign_add(tf.cast(value, tf.float64))

    def result(self) -> dict[str, float]:
        sums = {name: float(variable.numpy()) for name, variable in self._sums.items()}
        prefix = "lm" if self.objective == "ltr" else "masked_lm"
        results = {
            f"{prefix}_accuracy": sums["token_correct"] / max(sums["token_weight"], 1e-12),
            f"{prefix}_loss": sums["token_nll"] / max(sums["token_weight"], 1e-12),
        }
        if self.next_sentence:
            results["next_sentence_accuracy"] = sums["nsp_correct"] / max(sums["nsp_count"], 1)
            results["next_sentence_loss"] = sums["nsp_nll"] / max(sums["nsp_count"], 1)
        results["loss"] = sums["batch_loss"] / max(sums["batches"], 1)
        return results
