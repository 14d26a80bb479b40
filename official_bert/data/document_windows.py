"""Overlapping windows over a token sequence too long for one input, and the max-context rule.

The original run_squad.py cut a long document into windows ("doc spans") of at most
`max_tokens` tokens, each starting `doc_stride` tokens after the previous one, and scored a token
seen by several windows only in the one where it has the most context. SQuAD, long-document
classification and tagging (run_classifier.py --doc_stride) and extract_features.py
--doc_stride all window with these functions.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class DocSpan:
    """A window: tokens [start, start + length) of the document."""

    start: int
    length: int


def doc_spans(num_doc_tokens: int, max_tokens_for_doc: int, doc_stride: int) -> list[DocSpan]:
    """The original's sliding windows: each at most max_tokens_for_doc long, starting
    min(length, doc_stride) after the previous one, the last one reaching the end.

    A document that fits is one window; an empty document is no window at all."""
    if max_tokens_for_doc < 1 or doc_stride < 1:
        raise ValueError(
            f"windows need max_tokens_for_doc >= 1 and doc_stride >= 1, got {max_tokens_for_doc} "
            f"and {doc_stride}"
        )
    spans = []
    start_offset = 0
    while start_offset < num_doc_tokens:
        length = min(num_doc_tokens - start_offset, max_tokens_for_doc)
        spans.append(DocSpan(start_offset, length))
        if start_offset + length == num_doc_tokens:
            break
        start_offset += min(length, doc_stride)
    return spans


def check_is_max_context(spans: list[DocSpan], span_index: int, position: int) -> bool:
    """Whether span `span_index` is the one where document token `position` has the most context:
    the largest min(left, right) context, ties broken by 0.01 * span length (the original's
    score; the first span wins an exact tie)."""
    return max_context_span(spans, position) == span_index


def max_context_span(spans: list[DocSpan], position: int) -> int | None:
    """The index of the span where document token `position` has the most context (the rule of
    check_is_max_context), or None when no span holds it."""
    best_score, best_index = None, None
    for index, span in enumerate(spans):
        end = span.start + span.length - 1
        if position < span.start or position > end:
            continue
        score = min(position - span.start, end - position) + 0.01 * span.length
        if best_score is None or score > best_score:
            best_score, best_index = score, index
    return best_index
