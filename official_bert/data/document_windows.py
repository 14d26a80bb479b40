"""Overlapping windows over a token sequence too long for one input, and the max-context rule.

The original run_squad.py cut a long document into windows ("doc spans") of at most
`max_tokens` tokens, each starting `doc_stride` tokens after the previous one, and scored a token
seen by several windows only in the one where it has the most context. SQuAD, long-document
classification and tagging (run_classifier.py --doc_stride) and extract_features.py
--doc_stride all window with these functions.

`text_windows` lays windows over a packed input: a single text is windowed whole; of a pair, the
first text is repeated in every window and the second is windowed (as SQuAD's question and
context).
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


@dataclasses.dataclass(frozen=True)
class TextWindow:
    """One window of a packed input [CLS] A [SEP] (B [SEP]) whose windowed text (A of a single
    text, B of a pair) is cut to pieces [start, start + length).

    row_positions[k], a position in this window's packed row, holds the whole input's position
    line_positions[k] (the untruncated [CLS] A [SEP] (B [SEP])): the windowed text's pieces
    whose max-context window this is, [CLS] (and A [SEP] of a pair) in the first window, the
    closing [SEP] in the last. Every position of the whole input is in exactly one window.
    """

    start: int
    length: int
    row_positions: list[int]
    line_positions: list[int]


def text_windows(
    length_a: int, length_b: int | None, max_seq_length: int, doc_stride: int, where: str
) -> list[TextWindow]:
    """The windows of an input whose texts have `length_a` and `length_b` (None: a single
    text) wordpieces, each packed row at most max_seq_length long, starting `doc_stride`
    pieces apart. An input that fits is one window; a text of no pieces one empty window.

    Raises:
      ValueError: a pair whose first text leaves no room for the second (naming `where`).
    """
    if length_b is None:
        fixed, windowed = 1, length_a  # [CLS] comes before the window
        room = max_seq_length - 2
    else:
        fixed, windowed = length_a + 2, length_b  # [CLS] A [SEP] before the window
        room = max_seq_length - 3 - length_a
        if room < 1:
            raise ValueError(
                f"{where}: with a doc_stride the first text of a pair is repeated in every "
                f"window, but its {length_a} wordpieces leave no room for the second in "
                f"max_seq_length={max_seq_length}; shorten it or raise max_seq_length"
            )
    spans = doc_spans(windowed, room, doc_stride) or [DocSpan(0, 0)]
    windows = []
    for index, span in enumerate(spans):
        rows = list(range(fixed)) if index == 0 else []
        lines = list(rows)
        for offset in range(span.length):
            if max_context_span(spans, span.start + offset) == index:
                rows.append(fixed + offset)
                lines.append(fixed + span.start + offset)
        if index == len(spans) - 1:  # the closing [SEP]
            rows.append(fixed + span.length)
            lines.append(fixed + windowed)
        windows.append(TextWindow(span.start, span.length, rows, lines))
    return windows
