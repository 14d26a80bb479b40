"""Properties of masked-LM sampling, on real wordpieces."""

import numpy as np
import pytest

from official_bert.data.pretraining.masked_lm_sampling import (
    MaskingOptions,
    _choose_tokens,
    _smallest_keys,
    num_to_predict,
    sample_masked_lm,
)

CLS, SEP, MASK, VOCAB = 1, 2, 3, 500


def _batch(seed=0, count=400, seq=64):
    rng = np.random.default_rng(seed)
    ids = np.zeros((count, seq), np.int32)
    lengths = rng.integers(5, seq + 1, count)
    for row, length in enumerate(lengths):
        ids[row, :length] = rng.integers(10, VOCAB, length)
        split = rng.integers(2, length - 2)
        ids[row, [0, split, length - 1]] = [CLS, SEP, SEP]
    return ids, lengths


def _options(**overrides):
    is_continuation = np.zeros(VOCAB, bool)
    is_continuation[250:] = True  # ids >= 250 are "##" pieces
    values = dict(
        masked_lm_prob=0.15,
        max_predictions_per_seq=8,
        mask_id=MASK,
        vocab_size=VOCAB,
        special_ids=(CLS, SEP),
        is_continuation=is_continuation,
    )
    values.update(overrides)
    return MaskingOptions(**values)


@pytest.mark.parametrize("whole_word", [False, True])
def test_properties(whole_word):
    ids, lengths = _batch()
    options = _options(whole_word_mask=whole_word)
    out = sample_masked_lm(ids, lengths, options, np.random.default_rng(1))
    counts = num_to_predict(lengths, options)
    for row in range(len(ids)):
        valid = out.masked_lm_weights[row] > 0
        positions = out.masked_lm_positions[row][valid]
        # Unique, sorted, within the sequence, never [CLS]/[SEP]; the cap holds.
        assert list(positions) == sorted(set(positions.tolist()))
        assert len(positions) <= options.max_predictions_per_seq
        assert np.all(positions < lengths[row])
        assert not np.isin(ids[row, positions], [CLS, SEP]).any()
        if not whole_word:
            assert len(positions) == counts[row]
        # Padding slots are zero.
        assert not out.masked_lm_positions[row][~valid].any()
        assert not out.masked_lm_ids[row][~valid].any()
        # Labels are the original tokens; rebuilding gives the input back.
        np.testing.assert_array_equal(out.masked_lm_ids[row][valid], ids[row, positions])
        rebuilt = out.input_ids[row].copy()
        rebuilt[positions] = out.masked_lm_ids[row][valid]
        np.testing.assert_array_equal(rebuilt, ids[row])
        # Only predicted positions changed; each holds [MASK], a vocab id or the original.
        changed = np.flatnonzero(out.input_ids[row] != ids[row])
        assert set(changed) <= set(positions)
        assert np.all(
            (out.input_ids[row, positions] >= 0) & (out.input_ids[row, positions] < VOCAB)
        )
        if whole_word:
            chosen = set(positions.tolist())
            for position in range(1, lengths[row]):
                if ids[row, position] >= 250 and ids[row, position - 1] not in (CLS, SEP):
                    # A "##" piece is predicted exactly when the piece before it is.
                    assert (position in chosen) == (position - 1 in chosen), (row, position)


@pytest.mark.parametrize("shares", [(0.8, 0.1, 0.1), (0.5, 0.3, 0.2)])
def test_replacement_split_and_rate(shares):
    ids, lengths = _batch(count=4000, seq=128)
    mask_share, random_share, keep_share = shares
    options = _options(
        max_predictions_per_seq=40,
        mask_token_prob=mask_share,
        random_token_prob=random_share,
        keep_token_prob=keep_share,
    )
    out = sample_masked_lm(ids, lengths, options, np.random.default_rng(2))
    valid = out.masked_lm_weights > 0
    kinds = out.replacement_kind[valid]
    n = len(kinds)
    assert n > 35_000
    for kind, share in enumerate(shares):
        observed = (kinds == kind).mean()
        assert abs(observed - share) < 4 * np.sqrt(share * (1 - share) / n), (kind, observed)
    # What the inputs hold agrees with the recorded kinds: [MASK], a token drawn from the
    # whole vocab (the original token again with probability 1/VOCAB), the original token.
    rows = np.nonzero(valid)[0]
    inputs = out.input_ids[rows, out.masked_lm_positions[valid]]
    labels = out.masked_lm_ids[valid]
    assert np.all(inputs[kinds == 0] == MASK)
    assert np.all(inputs[kinds == 2] == labels[kinds == 2])
    assert (inputs[kinds == 1] == labels[kinds == 1]).mean() < 0.01
    positions_total = valid.sum()
    assert positions_total == num_to_predict(lengths, options).sum()


@pytest.mark.parametrize("whole_word", [False, True])
def test_all_mask_and_all_keep(whole_word):
    ids, lengths = _batch()
    all_mask, keep = (
        sample_masked_lm(
            ids,
            lengths,
            _options(
                whole_word_mask=whole_word,
                mask_token_prob=mask_share,
                random_token_prob=0.0,
                keep_token_prob=1.0 - mask_share,
            ),
            np.random.default_rng(4),
        )
        for mask_share in (1.0, 0.0)
    )
    # The same predictions are chosen either way (the split only decides what replaces them).
    np.testing.assert_array_equal(all_mask.masked_lm_positions, keep.masked_lm_positions)
    np.testing.assert_array_equal(all_mask.masked_lm_weights, keep.masked_lm_weights)
    valid = all_mask.masked_lm_weights > 0
    assert valid.sum() > 1000
    rows = np.nonzero(valid)[0]
    positions = all_mask.masked_lm_positions[valid]
    # 1/0/0: every prediction is [MASK], and nothing else changed.
    assert np.all(all_mask.input_ids[rows, positions] == MASK)
    assert (all_mask.input_ids != ids).sum() == valid.sum()
    # 0/0/1: the inputs are unchanged, the labels are still recorded.
    np.testing.assert_array_equal(keep.input_ids, ids)
    np.testing.assert_array_equal(keep.masked_lm_ids[valid], ids[rows, positions])
    assert np.all(keep.replacement_kind[valid] == 2)


def test_num_to_predict_rounds_half_to_even_like_python():
    options = _options(masked_lm_prob=0.5, max_predictions_per_seq=100)
    lengths = np.array([1, 3, 5, 7, 9, 0])
    expected = [min(100, max(1, round(n * 0.5))) for n in lengths]
    assert num_to_predict(lengths, options).tolist() == expected


def test_per_word_decisions_and_ngrams():
    ids, lengths = _batch(count=300)
    options = _options(whole_word_mask=True, decide_per_word=True, max_ngram_size=3)
    out = sample_masked_lm(ids, lengths, options, np.random.default_rng(3))
    for row in range(len(ids)):
        valid = out.masked_lm_weights[row] > 0
        positions = out.masked_lm_positions[row][valid]
        kinds = out.replacement_kind[row][valid]
        for k in range(1, len(positions)):
            # Pieces of one word (a "##" right after its predecessor) share one decision.
            if positions[k] == positions[k - 1] + 1 and ids[row, positions[k]] >= 250:
                assert kinds[k] == kinds[k - 1]


def test_the_originals_zero_values():
    # masked_lm_prob 0: max(1, round(n * 0)), one prediction an instance; max_predictions_per_seq
    # 0: none (next-sentence instances alone), as the original writes them.
    ids, lengths = _batch(count=50)
    one = sample_masked_lm(ids, lengths, _options(masked_lm_prob=0.0), np.random.default_rng(0))
    np.testing.assert_array_equal(one.masked_lm_weights.sum(axis=1), np.ones(50))
    none = sample_masked_lm(
        ids, lengths, _options(max_predictions_per_seq=0), np.random.default_rng(0)
    )
    assert none.masked_lm_positions.shape == none.masked_lm_weights.shape == (50, 0)
    np.testing.assert_array_equal(none.input_ids, ids)


def test_invalid_options():
    with pytest.raises(ValueError, match=r"masked_lm_prob must be in \[0, 1\], got -0.1"):
        _options(masked_lm_prob=-0.1)
    with pytest.raises(ValueError, match=r"keep_token_prob \(0.1\) = 1.2; .* must sum to 1"):
        _options(mask_token_prob=0.9, random_token_prob=0.2)
    # Only the [MASK] share changed: the other two keep their defaults, so the sum is off.
    with pytest.raises(ValueError, match=r"mask_token_prob \(1\) .* = 1.2"):
        _options(mask_token_prob=1.0)
    with pytest.raises(ValueError, match=r"random_token_prob must be in \[0, 1\], got -0.1"):
        _options(mask_token_prob=1.0, random_token_prob=-0.1, keep_token_prob=0.1)
    _options(mask_token_prob=0.7, random_token_prob=0.2, keep_token_prob=0.1 + 5e-7)  # within 1e-6
    with pytest.raises(ValueError, match="need is_continuation"):
        _options(is_continuation=None, whole_word_mask=True)


class _TiedKeys:
    """A generator stand-in whose keys repeat (one decimal): many rows tie at the threshold."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def random(self, shape):
        return np.round(self.rng.random(shape), 1)


@pytest.mark.parametrize("tied", [False, True])
def test_token_choice_by_threshold_equals_sorting_the_keys(tied):
    # The positions with the count smallest keys, found by one comparison with the count-th
    # smallest key, equal those of sorting the keys (the reference); with tied keys the
    # comparison alone would pick too many, and the batch takes the reference way.
    ids, lengths = _batch(seed=4, count=300, seq=40)
    candidates = (np.arange(40)[None, :] < lengths[:, None]) & (ids != CLS) & (ids != SEP)
    counts = np.random.default_rng(5).integers(1, 30, len(ids))
    for max_predictions in (8, 20, 40, 60):
        make = _TiedKeys if tied else np.random.default_rng
        chosen, valid = _choose_tokens(candidates, counts, max_predictions, make(max_predictions))
        keys = make(max_predictions).random(candidates.shape)
        keys[~candidates] = np.inf
        expected_chosen, expected_valid = _smallest_keys(keys, counts, min(max_predictions, 40))
        assert (valid == expected_valid).all()
        assert (np.where(valid, chosen, -1) == np.where(expected_valid, expected_chosen, -1)).all()
        # Chosen positions come first and ascend; as many as wanted (or all candidates).
        assert (
            valid.sum(axis=1)
            == np.minimum(np.minimum(counts, max_predictions), candidates.sum(axis=1))
        ).all()
        assert all((np.diff(row[mask]) > 0).all() for row, mask in zip(chosen, valid, strict=True))
        assert candidates[np.arange(len(ids))[:, None], chosen][valid].all()
    if tied:  # the ties reach the threshold: the comparison alone would pick more
        keys = _TiedKeys(8).random(candidates.shape)
        keys[~candidates] = np.inf
        wanted = np.minimum(counts, 8)
        threshold = np.sort(keys, axis=1)[np.arange(len(ids)), wanted - 1]
        assert (((keys <= threshold[:, None]) & candidates).sum(axis=1) > wanted).any()
