"""Packing wordpieces into BERT inputs: [CLS] A [SEP] (B [SEP]), segment ids, mask, padding."""

from __future__ import annotations

CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"


def truncate_seq_pair(tokens_a: list, tokens_b: list, max_length: int) -> None:
    """Shortens the pair in place to at most `max_length` tokens in total.

    As the original: one token at a time is removed from the end of the longer sequence, which
    keeps more of the shorter one than cutting each to a fixed share would.
    """
    while len(tokens_a) + len(tokens_b) > max_length:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        longer.pop()


def pack_segments(
    tokens_a: list[str], tokens_b: list[str] | None, max_seq_length: int
) -> tuple[list[str], list[int]]:
    """[CLS] A [SEP] (B [SEP]) truncated to `max_seq_length`; returns (tokens, segment_ids).

    A is segment 0 (with [CLS] and its [SEP]), B is segment 1. The inputs are not modified.
    """
    tokens_a = list(tokens_a)
    if tokens_b is not None:
        tokens_b = list(tokens_b)
        truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    else:
        del tokens_a[max_seq_length - 2 :]
    tokens = [CLS_TOKEN, *tokens_a, SEP_TOKEN]
    segment_ids = [0] * len(tokens)
    if tokens_b is not None:
        tokens += [*tokens_b, SEP_TOKEN]
        segment_ids += [1] * (len(tokens_b) + 1)
    return tokens, segment_ids


def pad_features(
    input_ids: list[int], segment_ids: list[int], max_seq_length: int
) -> tuple[list[int], list[int], list[int]]:
    """Zero-pads to `max_seq_length`; returns (input_ids, input_mask, segment_ids)."""
    padding = max_seq_length - len(input_ids)
    if padding < 0:
        raise ValueError(f"{len(input_ids)} tokens do not fit max_seq_length {max_seq_length}")
    input_mask = [1] * len(input_ids) + [0] * padding
    return list(input_ids) + [0] * padding, input_mask, list(segment_ids) + [0] * padding
