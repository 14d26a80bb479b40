import pytest

from official_bert.data.packing import pack_segments, pad_features, truncate_seq_pair


def test_truncate_pair_pops_from_the_longer_one():
    a, b = list("abcdefg"), list("xyz")
    truncate_seq_pair(a, b, 6)
    assert a == list("abc") and b == list("xyz")
    a, b = list("abcd"), list("wxyz")
    truncate_seq_pair(a, b, 5)
    # Ties pop from B (the original pops from A only when it is strictly longer).
    assert a == list("abc") and b == list("wx")


def test_pack_single_and_pair():
    tokens, segments = pack_segments(["a", "b", "c"], None, 4)
    assert tokens == ["[CLS]", "a", "b", "[SEP]"] and segments == [0, 0, 0, 0]
    tokens, segments = pack_segments(["a", "b"], ["c"], 10)
    assert tokens == ["[CLS]", "a", "b", "[SEP]", "c", "[SEP]"]
    assert segments == [0, 0, 0, 0, 1, 1]


def test_pad_features():
    ids, mask, segments = pad_features([5, 6], [0, 1], 4)
    assert (ids, mask, segments) == ([5, 6, 0, 0], [1, 1, 0, 0], [0, 1, 0, 0])
    with pytest.raises(ValueError, match="3 tokens do not fit max_seq_length 2"):
        pad_features([1, 2, 3], [0, 0, 0], 2)
