"""The fine-tuning loss of run_squad.py."""

from __future__ import annotations

import tensorflow as tf


def span_loss(start_logits, end_logits, start_positions, end_positions):
    """The mean of the start and end cross-entropies, each averaged over the batch, as the
    original create_model's loss (its one-hot log-softmax is sparse cross-entropy).

    start_logits, end_logits: float [batch, seq_length]; start_positions, end_positions: int
    [batch] (0 = [CLS] for no answer in the window). Returns a float32 scalar.
    """

    def cross_entropy(logits, positions):
        return tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=tf.cast(positions, tf.int32), logits=tf.cast(logits, tf.float32)
            )
        )

    return (
        cross_entropy(start_logits, start_positions) + cross_entropy(end_logits, end_positions)
    ) / 2.0


def squad_loss_fn(outputs, batch):
    """The runner's loss_fn(outputs, batch) for a BertSpanLabeler."""
    return span_loss(
        outputs["start_logits"],
        outputs["end_logits"],
        batch["start_positions"],
        batch["end_positions"],
    )
