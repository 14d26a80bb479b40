"""Windows over long documents and the max-context rule, against numbers worked out by hand."""

import pytest

from official_bert.data.document_windows import (
    DocSpan,
    check_is_max_context,
    doc_spans,
    max_context_span,
    text_windows,
)


def test_ten_tokens_in_windows_of_six_every_two():
    # Starts 0, 2, 4; the window at 4 reaches token 9, the end: no fourth window.
    assert doc_spans(10, 6, 2) == [DocSpan(0, 6), DocSpan(2, 6), DocSpan(4, 6)]
    # A stride longer than a window skips nothing it should not: 0-3, 4-7, 8-9.
    assert doc_spans(10, 4, 4) == [DocSpan(0, 4), DocSpan(4, 4), DocSpan(8, 2)]
    assert doc_spans(5, 6, 2) == [DocSpan(0, 5)]  # fits: one window
    assert doc_spans(0, 6, 2) == []


def test_max_context_by_hand():
    spans = doc_spans(10, 6, 2)  # [0, 5], [2, 7], [4, 9]
    # Token 5: min(left, right) + 0.01 * 6 is 0.06 in [0, 5], 2.06 in [2, 7], 1.06 in [4, 9].
    assert max_context_span(spans, 5) == 1
    # Token 4: 1.06 in [0, 5], 2.06 in [2, 7], 0.06 in [4, 9].
    assert max_context_span(spans, 4) == 1
    # Token 3: min(3, 2) + 0.06 = 2.06 in [0, 5]; min(1, 4) + 0.06 = 1.06 in [2, 7].
    assert max_context_span(spans, 3) == 0
    # Tokens 0, 1 only in the first window; 8, 9 only in the last.
    assert [max_context_span(spans, t) for t in (0, 1, 8, 9)] == [0, 0, 2, 2]
    # Token 6: [2, 7] min(4, 1) = 1.06; [4, 9] min(2, 3) = 2.06.
    assert max_context_span(spans, 6) == 2
    assert max_context_span(spans, 10) is None
    # Every token has exactly one owner.
    for token in range(10):
        owners = [i for i in range(len(spans)) if check_is_max_context(spans, i, token)]
        assert len(owners) == 1


def test_an_exact_tie_goes_to_the_first_window():
    spans = [DocSpan(0, 4), DocSpan(1, 4)]  # token 2: min(2, 1) = 1 and min(1, 2) = 1
    assert max_context_span(spans, 2) == 0


@pytest.mark.parametrize("length, stride", [(0, 2), (4, 0)])
def test_empty_windows_or_stride_are_an_error(length, stride):
    with pytest.raises(ValueError, match="max_tokens_for_doc >= 1 and doc_stride >= 1"):
        doc_spans(10, length, stride)


def test_text_windows_cover_every_position_once_in_order():
    """The property long-document tagging and extract_features rely on: taken window after
    window, the positions each carries are 0, 1, ..., the whole input's length - 1."""
    for pieces in range(0, 40):
        for room in range(1, 12):
            for stride in range(1, 14):
                windows = text_windows(pieces, None, room + 2, stride, "a line")
                lines = [p for window in windows for p in window.line_positions]
                assert lines == list(range(pieces + 2)), (pieces, room, stride)
                for window in windows:  # [CLS] before the window's first piece
                    assert all(
                        line - row == window.start
                        for row, line in zip(
                            window.row_positions, window.line_positions, strict=True
                        )
                        if 0 < row <= window.length
                    )
    # A pair: [CLS] A [SEP] in the first window, B windowed after it.
    windows = text_windows(2, 10, 10, 2, "a pair")
    assert [(w.start, w.length) for w in windows] == [(0, 5), (2, 5), (4, 5), (6, 4)]
    assert windows[0].line_positions[:4] == [0, 1, 2, 3]
    assert windows[-1].line_positions[-1] == 2 + 10 + 2
    assert windows[-1].row_positions[-1] == 4 + 4
