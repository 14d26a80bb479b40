"""Masked-LM masking inside the tf.data pipeline (records of create_pretraining_data.py
--masking=dynamic): fresh masks every epoch, drawn as the static writer draws them
(masked_lm_sampling), from stateless random ops seeded by (seed, epoch, file, record).

The masks of a record depend on nothing else (not the batch it lands in, the shuffle, the
number of workers), so a run resumed from a checkpoint, which replays the same seeded input
order, masks every record as the uninterrupted run did.

Why by hand and not tensorflow_text's RandomItemSelector / MaskValuesChooser /
mask_language_model: the selector picks ceil(rate * items) *items*, so with whole words the
number of masked pieces is not bounded by max_predictions_per_seq and differs from the
original's round(rate * tokens) budget filled word by word; and both draw from stateful random
ops (random_shuffle, random_uniform), which cannot be seeded per record, so a resumed run would
not see the same masks. The original's rule needs a per-row budget loop over words (below).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from official_bert.data.pretraining.features import MASKING_IDS, MASKING_PROBS
from official_bert.data.pretraining.masked_lm_sampling import check_replacement_shares


@dataclasses.dataclass(frozen=True)
class MaskingRecipe:
    """What dynamic records are masked with (written into every record by the writer).

    mask_id, cls_id, sep_id: the [MASK] id and the two ids never predicted.
    vocab_size: random replacements are drawn uniformly from [0, vocab_size), as the original.
    max_predictions_per_seq: the cap on predictions per instance (the features' width).
    decide_per_word: one [MASK]/random/keep draw per whole word instead of per piece.
    masked_lm_prob, mask_token_prob, random_token_prob: the budget round(length * prob) and the
      80/10/10 shares of the original (the rest of the predictions stay unchanged).
    """

    mask_id: int
    cls_id: int
    sep_id: int
    vocab_size: int
    max_predictions_per_seq: int
    decide_per_word: bool = False
    masked_lm_prob: float = 0.15
    mask_token_prob: float = 0.8
    random_token_prob: float = 0.1

    def __post_init__(self):
        # 0 is the original's too: max(1, round(n * 0)) is one prediction per instance.
        if not 0.0 <= self.masked_lm_prob <= 1.0:
            raise ValueError(f"masked_lm_prob must be in [0, 1], got {self.masked_lm_prob}")
        check_replacement_shares(
            self.mask_token_prob,
            self.random_token_prob,
            round(1.0 - self.mask_token_prob - self.random_token_prob, 6),
        )

    def feature_values(self) -> dict[str, list]:
        """The record features MASKING_IDS and MASKING_PROBS that hold this recipe."""
        ids = [
            self.mask_id,
            self.cls_id,
            self.sep_id,
            self.vocab_size,
            self.max_predictions_per_seq,
            int(self.decide_per_word),
        ]
        probs = [self.masked_lm_prob, self.mask_token_prob, self.random_token_prob]
        return {MASKING_IDS: ids, MASKING_PROBS: probs}

    @classmethod
    def from_example(cls, example: tf.train.Example, path: str) -> MaskingRecipe:
        """The recipe of a dynamic record (`path` names the file in errors)."""
        features = example.features.feature
        ids = list(features[MASKING_IDS].int64_list.value)
        # float32 in the record: back to the decimal the writer was given.
        probs = [round(float(p), 6) for p in features[MASKING_PROBS].float_list.value]
        if len(ids) != 6 or len(probs) != 3:
            raise ValueError(
                f"{path}: {MASKING_IDS} has {len(ids)} values and {MASKING_PROBS} {len(probs)}; "
                "expected 6 and 3 (create_pretraining_data.py --masking=dynamic writes them)"
            )
        mask_id, cls_id, sep_id, vocab_size, max_predictions, per_word = ids
        return cls(mask_id, cls_id, sep_id, vocab_size, max_predictions, bool(per_word), *probs)


def record_draws(seed: int, epoch, file_index, record_index, seq_length: int, vocab_size: int):
    """The random numbers that mask one record: (order keys float32 [seq_length], replacement
    draws float32 [seq_length], random token ids int32 [seq_length] in [0, vocab_size)), from
    stateless random ops keyed by (seed, epoch, file_index, record_index) folded in turn
    (int64 scalars). Computed per record as it is read (tf.data's parallel map), then batched."""
    key = tf.constant([seed, 0], tf.int64)
    for value in (epoch, file_index, record_index):
        key = tf.random.experimental.stateless_fold_in(key, tf.cast(value, tf.int64))
    uniform = tf.random.stateless_uniform([2, seq_length], key)
    random_ids = tf.random.stateless_uniform(
        [seq_length],
        tf.random.experimental.stateless_fold_in(key, 1),
        minval=0,
        maxval=vocab_size,
        dtype=tf.int32,
    )
    return uniform[0], uniform[1], random_ids


def batch_draws(seed: int, epochs, file_indices, record_indices, seq_length, vocab_size):
    """record_draws for a batch (epochs, file_indices, record_indices: int [batch]): each
    [batch, seq_length]."""
    indices = tf.stack([tf.cast(v, tf.int64) for v in (epochs, file_indices, record_indices)], 1)
    return tf.map_fn(
        lambda row: record_draws(seed, row[0], row[1], row[2], seq_length, vocab_size),
        indices,
        fn_output_signature=(
            tf.TensorSpec([seq_length], tf.float32),
            tf.TensorSpec([seq_length], tf.float32),
            tf.TensorSpec([seq_length], tf.int32),
        ),
    )


def _take_words_within_budget(lengths_in_order, valid_in_order, budget):
    """The original's rule (create_masked_lm_predictions): words in random order, each taken if
    it still fits the budget, else skipped. lengths_in_order int32 [batch, words], valid bool
    [batch, words] (real candidate words), budget int32 [batch]. Returns bool [batch, words].

    As what is left of the budget only shrinks, a skipped word never fits later: the rule takes,
    again and again, the first word after the last one taken that fits what is left. Each take
    uses a piece or more, so at most max(budget) rounds, each vectorized over batch and words,
    instead of one round per word.
    """
    words = tf.shape(lengths_in_order)[1]
    ranks = tf.range(words)[None, :]

    def take_next(count, last, taken):
        fits = valid_in_order & (ranks > last[:, None])
        fits &= lengths_in_order <= (budget - count)[:, None]
        found = tf.reduce_any(fits, axis=1)
        first = tf.argmax(tf.cast(fits, tf.int32), axis=1, output_type=tf.int32)
        picked = fits & (ranks == first[:, None]) & found[:, None]
        count += tf.reduce_sum(tf.where(picked, lengths_in_order, 0), axis=1)
        return count, tf.where(found, first, words), taken | picked

    zeros = tf.zeros_like(budget)
    _, _, taken = tf.while_loop(
        lambda count, last, taken: tf.reduce_any(last < words),
        take_next,
        (zeros, zeros - 1, tf.zeros_like(valid_in_order)),
        maximum_iterations=tf.reduce_max(budget),
    )
    return taken


def mask_batch(
    input_word_ids, input_mask, recipe: MaskingRecipe, draws, word_starts=None
) -> dict[str, tf.Tensor]:
    """Masks a batch of unmasked instances as the static writer would (15% budget,
    80/10/10, whole words when word_starts is given, at most max_predictions_per_seq).

    Args:
      input_word_ids: int32 [batch, seq_length], [CLS] A [SEP] (B [SEP]) then padding.
      input_mask: int32 [batch, seq_length], 1 at real tokens.
      recipe: MaskingRecipe.
      draws: each record's record_draws, batched (order keys, replacement draws float32,
        random ids int32, each [batch, seq_length]).
      word_starts: int32 [batch, seq_length], 1 at the first piece of each word (whole-word
        masking), or None: every piece is a word.

    Returns:
      input_word_ids int32 [batch, seq_length] with the replacements; masked_lm_positions,
      masked_lm_ids int32 [batch, max_predictions_per_seq] (positions ascending, zero padded);
      masked_lm_weights float32 (1.0 at real predictions); masked_lm_kinds int32 (0 [MASK],
      1 random, 2 unchanged, -1 padding: for statistics).
    """
    ids = tf.cast(input_word_ids, tf.int32)
    batch, seq_length = tf.shape(ids)[0], ids.shape[1]
    real = tf.cast(input_mask, tf.bool)
    candidate = real & (ids != recipe.cls_id) & (ids != recipe.sep_id)
    # The original's budget: round(len(tokens) * masked_lm_prob), [CLS]/[SEP] counted, at
    # least 1, at most max_predictions_per_seq (tf.round rounds half to even, as Python 3).
    lengths = tf.reduce_sum(tf.cast(real, tf.float64), axis=1)
    budget = tf.cast(tf.round(lengths * recipe.masked_lm_prob), tf.int32)
    budget = tf.clip_by_value(budget, 1, recipe.max_predictions_per_seq)

    order_keys, replacement_draws, random_ids = draws
    positions = tf.range(seq_length)[None, :]

    if word_starts is None:
        # Single pieces: the first `budget` candidates of a random order.
        keys = tf.where(candidate, order_keys, 2.0)
        rank = tf.argsort(tf.argsort(keys, axis=1, stable=True), axis=1, stable=True)
        chosen = candidate & (rank < budget[:, None])
        word_of = None
    else:
        # A piece continues the word before it unless marked as a start, or either of them is
        # not a candidate (a word never spans [CLS] or [SEP]).
        previous_candidate = tf.pad(candidate[:, :-1], [[0, 0], [1, 0]])
        starts = tf.cast(word_starts, tf.bool) | ~candidate | ~previous_candidate
        word_of = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1  # [batch, seq_length]
        segments = word_of + tf.range(batch)[:, None] * seq_length
        flat = tf.reshape(segments, [-1])
        words = batch * seq_length
        word_length = tf.math.unsorted_segment_sum(
            tf.reshape(tf.cast(real, tf.int32), [-1]), flat, words
        )
        # A word is a candidate when its first piece is (a special token is a word alone).
        first_key = tf.where(starts & candidate, order_keys, -1.0)
        word_key = tf.math.unsorted_segment_max(tf.reshape(first_key, [-1]), flat, words)
        word_key = tf.reshape(tf.where(word_key < 0, 2.0, word_key), [batch, seq_length])
        word_length = tf.reshape(word_length, [batch, seq_length])
        order = tf.argsort(word_key, axis=1, stable=True)
        taken_in_order = _take_words_within_budget(
            tf.gather(word_length, order, batch_dims=1),
            tf.gather(word_key, order, batch_dims=1) < 2.0,
            budget,
        )
        taken = tf.scatter_nd(
            tf.stack([tf.broadcast_to(tf.range(batch)[:, None], tf.shape(order)), order], -1),
            taken_in_order,
            tf.shape(order),
        )
        chosen = candidate & tf.gather(taken, word_of, batch_dims=1)
        if recipe.decide_per_word:
            # Every piece takes the draw of its word's first piece.
            first_draw = tf.where(starts, replacement_draws, -1.0)
            word_draw = tf.math.unsorted_segment_max(tf.reshape(first_draw, [-1]), flat, words)
            replacement_draws = tf.gather(
                tf.reshape(word_draw, [batch, seq_length]), word_of, batch_dims=1
            )

    # 80/10/10 as in the original masking: [MASK], a random token, unchanged.
    kind = tf.where(
        replacement_draws < recipe.mask_token_prob,
        0,
        tf.where(replacement_draws < recipe.mask_token_prob + recipe.random_token_prob, 1, 2),
    )
    replacement = tf.where(kind == 0, recipe.mask_id, tf.where(kind == 1, random_ids, ids))
    masked_ids = tf.where(chosen, replacement, ids)

    # The chosen positions, ascending (as the original sorts its predictions), then padding.
    width = recipe.max_predictions_per_seq
    sort_key = tf.where(chosen, positions, seq_length + positions)
    # More slots than positions (max_predictions_per_seq above a short max_seq_length, which
    # the original allows): the extra ones are padding.
    sort_key = tf.pad(
        sort_key,
        [[0, 0], [0, tf.maximum(width - tf.shape(sort_key)[1], 0)]],
        constant_values=2 * seq_length,
    )
    slots = -tf.math.top_k(-sort_key, k=width, sorted=True).values
    valid = slots < seq_length
    slot_positions = tf.where(valid, slots, 0)
    return {
        "input_word_ids": masked_ids,
        "masked_lm_positions": slot_positions,
        "masked_lm_ids": tf.where(valid, tf.gather(ids, slot_positions, batch_dims=1), 0),
        "masked_lm_weights": tf.cast(valid, tf.float32),
        "masked_lm_kinds": tf.where(valid, tf.gather(kind, slot_positions, batch_dims=1), -1),
    }


def word_starts_of(
    input_ids: np.ndarray,
    lengths: np.ndarray,
    special_ids: tuple[int, ...],
    is_continuation: np.ndarray,
    continues_word: np.ndarray | None,
) -> np.ndarray:
    """int32 [N, S] word starts for dynamic records: 1 at every real piece that does not
    continue the word before it (by a segmenter's marks `continues_word` bool [N, S], or else
    the "##" rule through bool [vocab] is_continuation), 0 at continuing pieces and padding.
    Special tokens ([CLS], [SEP]) are words alone, and so is a piece after them (as the static
    writer: a word never spans them)."""
    input_ids = np.asarray(input_ids)
    continues = continues_word if continues_word is not None else is_continuation[input_ids]
    special = np.isin(input_ids, special_ids)
    after_special = np.zeros_like(special)
    after_special[:, 1:] = special[:, :-1]
    real = np.arange(input_ids.shape[1])[None, :] < lengths[:, None]
    return (real & (~continues | special | after_special)).astype(np.int32)
