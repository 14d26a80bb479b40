"""The loss of token tagging: cross-entropy of each word's tag at its first wordpiece."""

from __future__ import annotations

import tensorflow as tf

from official_bert.tasks.pretraining_objective import masked_lm_loss


def tagging_loss_denominators(batch: dict) -> dict:
    """The number of tagged words of a (micro-)batch; the runner sums it over the whole update
    so that every word of the update weighs the same (Runner's loss_denominators_fn)."""
    return {"words": tf.reduce_sum(tf.cast(batch["label_weights"], tf.float32))}


def tagging_loss(outputs, batch: dict, denominators: dict | None = None):
    """sum(label_weights * nll) / sum(label_weights): the mean cross-entropy over tagged words,
    a float32 scalar; the weighted cross-entropy of the masked-LM loss, over tags instead of the
    vocabulary.

    outputs: float tag logits [batch, seq_length, num_tags]; batch: label_ids (int) and
    label_weights (float) [batch, seq_length]; denominators: tagging_loss_denominators summed
    over the whole update (then this part's share of its loss is returned).
    """
    denominator = (denominators or {}).get("words")
    return masked_lm_loss(outputs, batch["label_ids"], batch["label_weights"], denominator)
