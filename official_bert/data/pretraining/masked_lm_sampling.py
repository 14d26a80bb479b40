"""Choosing the masked-LM predictions of pre-training instances (the original's
create_masked_lm_predictions), vectorized over many instances at once."""

from __future__ import annotations

import dataclasses

import numpy as np


def check_replacement_shares(
    mask_token_prob: float, random_token_prob: float, keep_token_prob: float
) -> None:
    """Raises ValueError unless the three shares of the predictions ([MASK], random token,
    unchanged) are each in [0, 1] and sum to 1 within 1e-6."""
    shares = {
        "mask_token_prob": mask_token_prob,
        "random_token_prob": random_token_prob,
        "keep_token_prob": keep_token_prob,
    }
    for name, value in shares.items():
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {value}")
    total = sum(shares.values())
    if abs(total - 1.0) > 1e-6:
        given = " + ".join(f"{name} ({value:g})" for name, value in shares.items())
        raise ValueError(
            f"{given} = {total:.6g}; the shares of [MASK], random and unchanged predictions "
            "must sum to 1 (e.g. 0.8, 0.1, 0.1 as the original)"
        )


@dataclasses.dataclass(frozen=True)
class MaskingOptions:
    """How predictions are chosen.

    masked_lm_prob: fraction of the sequence length to predict (the original's 0.15).
    max_predictions_per_seq: cap on predictions per instance.
    mask_id, vocab_size: the [MASK] id and the range random replacements are drawn from (the
      original draws uniformly from the whole vocab, special and unused tokens included).
    special_ids: ids never predicted ([CLS], [SEP]).
    is_continuation: bool [vocab_size], True for "##" pieces; needed for whole-word masking.
    whole_word_mask: mask every piece of a word together (do_whole_word_mask).
    max_ngram_size: mask spans of up to n whole words (1 = single words), n drawn with
      probability proportional to 1/n as in ALBERT's n-gram masking.
    mask_token_prob, random_token_prob, keep_token_prob: the shares of predictions replaced by
      [MASK], by a random token and left unchanged (the original's 80/10/10); they must sum to 1.
    decide_per_word: with whole-word masking, draw the [MASK]/random/keep decision once per
      word instead of once per piece (google-research/bert#910).
    """

    masked_lm_prob: float
    max_predictions_per_seq: int
    mask_id: int
    vocab_size: int
    special_ids: tuple[int, ...]
    is_continuation: np.ndarray | None = None
    whole_word_mask: bool = False
    max_ngram_size: int = 1
    mask_token_prob: float = 0.8
    random_token_prob: float = 0.1
    keep_token_prob: float = 0.1
    decide_per_word: bool = False

    def __post_init__(self):
        # 0 is the original's too: max(1, round(n * 0)) is one prediction per instance.
        if not 0.0 <= self.masked_lm_prob <= 1.0:
            raise ValueError(f"masked_lm_prob must be in [0, 1], got {self.masked_lm_prob}")
        check_replacement_shares(self.mask_token_prob, self.random_token_prob, self.keep_token_prob)
        if (self.whole_word_mask or self.max_ngram_size > 1) and self.is_continuation is None:
            raise ValueError("whole-word and n-gram masking need is_continuation")


@dataclasses.dataclass
class MaskedBatch:
    """Masked instances. input_ids int32 [N, S] (with replacements), masked_lm_positions and
    masked_lm_ids int32 [N, P] (positions sorted, zero-padded), masked_lm_weights float32 [N, P]
    (1.0 for real predictions), and how each prediction was replaced (int8 [N, P]: 0 [MASK],
    1 random token, 2 unchanged, -1 padding)."""

    input_ids: np.ndarray
    masked_lm_positions: np.ndarray
    masked_lm_ids: np.ndarray
    masked_lm_weights: np.ndarray
    replacement_kind: np.ndarray


def num_to_predict(lengths: np.ndarray, options: MaskingOptions) -> np.ndarray:
    """min(max_predictions_per_seq, max(1, round(length * masked_lm_prob))) per instance.

    np.rint rounds half to even, as Python's round() in the original.
    """
    counts = np.rint(lengths * options.masked_lm_prob).astype(np.int64)
    return np.minimum(options.max_predictions_per_seq, np.maximum(1, counts))


def _candidates(input_ids: np.ndarray, lengths: np.ndarray, options: MaskingOptions) -> np.ndarray:
    positions = np.arange(input_ids.shape[1])
    candidates = positions[None, :] < lengths[:, None]
    for special in options.special_ids:
        candidates &= input_ids != special
    return candidates


def _in_position_order(chosen, valid):
    """chosen, valid [N, P] with the valid positions first, ascending (the original sorts its
    predictions by index); the slots after them keep their (unused) positions."""
    sort_keys = np.where(valid, chosen, np.iinfo(np.int64).max)
    order = np.argsort(sort_keys, axis=1, kind="stable")
    return (
        np.take_along_axis(chosen, order, axis=1),
        np.take_along_axis(valid, order, axis=1),
        order,
    )


def _smallest_keys(keys, counts, width):
    """The positions of the `counts` smallest finite keys of each row of keys [N, S], via the
    `width` smallest in key order (the reference way; `_choose_tokens` takes it when keys tie).
    Returns positions [N, width] (valid ones first, ascending) and validity."""
    if width < keys.shape[1]:
        smallest = np.argpartition(keys, width - 1, axis=1)[:, :width]
    else:
        smallest = np.broadcast_to(np.arange(width), keys.shape).copy()
    order = np.argsort(np.take_along_axis(keys, smallest, axis=1), axis=1, kind="stable")
    chosen = np.take_along_axis(smallest, order, axis=1)
    valid = (np.arange(width)[None, :] < counts[:, None]) & np.isfinite(
        np.take_along_axis(keys, chosen, axis=1)
    )
    return _in_position_order(chosen, valid)[:2]


def _choose_tokens(candidates, counts, max_predictions, rng):
    """Uniform random subsets of the candidate positions: the `counts` with the smallest random
    keys (as the first of the original's shuffle of the candidates). Returns positions [N, P]
    (the chosen ones first, ascending; 0 after them) and validity.

    Every row's chosen positions are those whose key is at most its count-th smallest key: one
    comparison over the keys, which yields them in position order (no sort of the picks by key
    and again by position). Equal keys at that threshold (doubles from `rng.random`: at most one
    row in about 10**12) would pick too many; then the whole batch takes the reference way
    (`_smallest_keys`), so the result is always the same.
    """
    keys = rng.random(candidates.shape)
    keys[~candidates] = np.inf
    num_rows, length = keys.shape
    width = min(max_predictions, length)
    if width < length:
        smallest = np.partition(keys, width - 1, axis=1)[:, :width]
    else:
        smallest = keys.copy()
    smallest.sort(axis=1)
    wanted = np.minimum(counts, width)
    threshold = smallest[np.arange(num_rows), wanted - 1]
    picked = (keys <= threshold[:, None]) & candidates
    per_row = picked.sum(axis=1)
    if (per_row != np.minimum(wanted, candidates.sum(axis=1))).any():
        return _smallest_keys(keys, counts, width)
    rows, positions = np.nonzero(picked)  # row by row, positions ascending
    slots = np.arange(len(rows)) - np.repeat(np.cumsum(per_row) - per_row, per_row)
    chosen = np.zeros((num_rows, width), np.int64)
    chosen[rows, slots] = positions
    valid = np.arange(width)[None, :] < per_row[:, None]
    return chosen, valid


def _choose_words(input_ids, candidates, counts, options, rng, continues_word=None):
    """Whole words (and n-grams of words) per instance, in Python: word boundaries differ per
    instance, so this path is not vectorized. A piece joins the word before it when it is a "##"
    piece, or, given bool continues_word [N, S] (a word segmenter's marks), when that says so.
    As the original, a word that no longer fits the budget is skipped. Returns positions
    [N, P], validity and a word id per chosen position (for per-word decisions)."""
    num_instances, max_predictions = input_ids.shape[0], options.max_predictions_per_seq
    positions = np.zeros((num_instances, max_predictions), np.int64)
    valid = np.zeros((num_instances, max_predictions), bool)
    word_ids = np.full((num_instances, max_predictions), -1, np.int64)
    ngram_sizes = np.arange(1, options.max_ngram_size + 1)
    ngram_probs = (1.0 / ngram_sizes) / (1.0 / ngram_sizes).sum()
    for row in range(num_instances):
        words = []
        for position in np.flatnonzero(candidates[row]):
            # A "##" piece joins the word before it, unless that is not a candidate ([CLS], [SEP]).
            if continues_word is None:
                joins = words and options.is_continuation[input_ids[row, position]]
            else:
                joins = words and continues_word[row, position]
            if joins and words[-1][-1] == position - 1:
                words[-1].append(position)
            else:
                words.append([position])
        order = rng.permutation(len(words))
        covered = np.zeros(input_ids.shape[1], bool)
        count = 0
        target = counts[row]
        for word_index in order:
            if count >= target:
                break
            size = 1
            if options.max_ngram_size > 1:
                size = int(rng.choice(ngram_sizes, p=ngram_probs))
            span = [p for word in words[word_index : word_index + size] for p in word]
            if count + len(span) > target or covered[span].any():
                continue
            covered[span] = True
            positions[row, count : count + len(span)] = span
            valid[row, count : count + len(span)] = True
            word_ids[row, count : count + len(span)] = word_index
            count += len(span)
    return positions, valid, word_ids


def sample_masked_lm(
    input_ids: np.ndarray,
    lengths: np.ndarray,
    options: MaskingOptions,
    rng: np.random.Generator,
    continues_word: np.ndarray | None = None,
) -> MaskedBatch:
    """Chooses and applies the masked-LM predictions of a batch of instances.

    Args:
      input_ids: int [N, S] packed instances ([CLS] A [SEP] B [SEP] then zero padding).
      lengths: int [N], the number of real tokens of each instance.
      options: MaskingOptions.
      rng: numpy Generator (all randomness comes from it: same seed, same output).
      continues_word: bool [N, S], True for a piece that continues the word before it (a word
        segmenter's marks, "##" pieces included; word_segmentation), or None for the "##" rule
        alone. Used with whole-word or n-gram masking.
    """
    input_ids = np.asarray(input_ids, np.int32)
    lengths = np.asarray(lengths, np.int64)
    if options.max_predictions_per_seq == 0:  # the original's next-sentence-only instances
        empty = np.zeros((input_ids.shape[0], 0), np.int32)
        return MaskedBatch(
            input_ids.copy(), empty, empty.copy(), empty.astype(np.float32), empty.astype(np.int8)
        )
    counts = num_to_predict(lengths, options)
    candidates = _candidates(input_ids, lengths, options)
    word_ids = None
    if options.whole_word_mask or options.max_ngram_size > 1:
        chosen, valid, word_ids = _choose_words(
            input_ids, candidates, counts, options, rng, continues_word
        )
        chosen, valid, order = _in_position_order(chosen, valid)
        word_ids = np.take_along_axis(word_ids, order, axis=1)
    else:  # in position order already
        chosen, valid = _choose_tokens(candidates, counts, options.max_predictions_per_seq, rng)
    draws = rng.random(chosen.shape)
    if word_ids is not None and options.decide_per_word:
        # One draw per word: every piece takes the draw of its word's first piece.
        first_piece = np.zeros(word_ids.shape, np.int64)
        for column in range(1, word_ids.shape[1]):
            same = word_ids[:, column] == word_ids[:, column - 1]
            first_piece[:, column] = np.where(same, first_piece[:, column - 1], column)
        draws = np.take_along_axis(draws, first_piece, axis=1)
    kind = np.where(
        draws < options.mask_token_prob,
        0,
        np.where(draws < options.mask_token_prob + options.random_token_prob, 1, 2),
    ).astype(np.int8)
    random_ids = rng.integers(0, options.vocab_size, size=chosen.shape)

    rows = np.arange(input_ids.shape[0])[:, None]
    original_ids = input_ids[rows, chosen]
    replacement = np.where(
        kind == 0, options.mask_id, np.where(kind == 1, random_ids, original_ids)
    )
    # Unused slots point at position 0 ([CLS], never a candidate) and write back its own id.
    positions = np.where(valid, chosen, 0)
    output_ids = input_ids.copy()
    output_ids[rows, positions] = np.where(valid, replacement, input_ids[rows, positions])
    padded = np.zeros((input_ids.shape[0], options.max_predictions_per_seq), np.int32)
    padded_ids = np.zeros_like(padded)
    weights = np.zeros(padded.shape, np.float32)
    kinds = np.full(padded.shape, -1, np.int8)
    width = positions.shape[1]
    padded[:, :width] = positions
    padded_ids[:, :width] = np.where(valid, original_ids, 0)
    weights[:, :width] = valid
    kinds[:, :width] = np.where(valid, kind, -1)
    return MaskedBatch(output_ids, padded, padded_ids, weights, kinds)
