"""doc_stride windows and the max-context rule in graph ops, for the serving SavedModels that
window long inputs (SQuAD's context, a tagger's sentence, a classifier's text).

They are data/document_windows.py's `doc_spans` and `max_context_span` over a batch: window k
of a text starts at k * min(doc_stride, room) and holds at most `room` pieces, the last one
reaching the end; a text of no pieces has no window (or one empty window, text_windows' rule
for a classifier's text). A piece is scored in the windows holding it by min(left, right)
context + 0.01 * the window's length, the earliest best window winning. `combine_windows` is
tasks/window_aggregation.py's `aggregate_windows` (a classifier's windows' logits back to one
row per text).
"""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf

from official_bert.tasks.window_aggregation import WINDOW_AGGREGATIONS


def first_index_of_max(values: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """The max along the last axis and the first index holding it (Python's stable sort keeps
    the first of equal scores; tf.argmax does not promise which tie it returns).

    Args: values float64 [rows, columns]. Returns (float64 [rows], int64 [rows]).
    """
    best = tf.reduce_max(values, axis=-1)
    columns = tf.shape(values, out_type=tf.int64)[-1]
    positions = tf.range(columns, dtype=tf.int64)
    index = tf.reduce_min(
        tf.where(tf.equal(values, best[:, None]), positions[None, :], columns), axis=-1
    )
    return best, index


def with_equal_batch_sizes(
    first: tf.Tensor, second: tf.Tensor, first_name: str, second_name: str
) -> tuple[tf.Tensor, tf.Tensor]:
    """[batch] tf.string `first` and `second` (a pair's texts), checked to hold the same number
    of texts: a request that does not fails with an InvalidArgumentError naming them, not an
    index out of range deep in the windowing. Nothing reads the texts returned before the check
    has run."""
    check = tf.debugging.assert_equal(
        tf.shape(first)[0],
        tf.shape(second)[0],
        message=f"{first_name} and {second_name} must hold the same number of texts",
    )
    with tf.control_dependencies([check]):
        return tf.identity(first), tf.identity(second)


class Windows(NamedTuple):
    """The windows of a batch of texts, all texts' windows in one list (text order, then window
    order): int64 [windows] text (the text each belongs to), number (k of its text's
    windows), start (its first piece among its text's pieces), length (its pieces) and base
    (its first piece's index into the texts' flat pieces); int64 [texts] counts (each text's
    windows) and pieces, [windows, (pieces)] the windows' pieces (the texts' dtype)."""

    text: tf.Tensor
    number: tf.Tensor
    start: tf.Tensor
    length: tf.Tensor
    base: tf.Tensor
    counts: tf.Tensor
    pieces: tf.RaggedTensor


def slide_windows(
    pieces: tf.RaggedTensor, room: tf.Tensor, doc_stride: int, empty_text_window: bool = False
) -> Windows:
    """The doc_stride windows (see the module docstring) of `pieces`, [texts, (pieces)], each at
    most `room` (int64 [texts], at least 1) pieces long, starting doc_stride (>= 1) apart.

    A text of no pieces has no window, or with `empty_text_window` one window of no pieces
    (start 0, length 0: data/document_windows.py text_windows, so that a classifier's empty
    text still gets a prediction)."""
    num_pieces = pieces.row_lengths()
    stride = tf.minimum(tf.cast(doc_stride, tf.int64), room)
    # 1 for a text of no pieces (stride <= room), or of at most `room` pieces.
    counts = 1 + tf.maximum(num_pieces - room + stride - 1, 0) // stride
    if not empty_text_window:
        counts = tf.where(num_pieces == 0, tf.zeros_like(num_pieces), counts)
    text = tf.repeat(tf.range(tf.size(counts, tf.int64)), counts)
    number = tf.ragged.range(counts).flat_values
    start = number * tf.gather(stride, text)
    length = tf.minimum(tf.gather(num_pieces, text) - start, tf.gather(room, text))
    base = tf.gather(pieces.row_starts(), text) + start
    window_pieces = tf.gather(pieces.flat_values, tf.ragged.range(base, base + length))
    return Windows(text, number, start, length, base, counts, window_pieces)


def max_context_windows(windows: Windows, text: tf.Tensor, position: tf.Tensor) -> tf.Tensor:
    """int64 [...]: for piece `position` of text `text` (int64, same shape [...]), the number
    (k of that text's windows) of the window where it has the most context (see the module
    docstring); meaningless for a position no window of its text holds."""
    shape = tf.shape(position, out_type=tf.int64)
    text = tf.reshape(text, [-1])
    position = tf.reshape(position, [-1])
    # The windows of each position's text, [positions, most windows], -1 past the last.
    window_ids = tf.range(tf.size(windows.start, tf.int64))
    siblings = tf.gather(
        tf.RaggedTensor.from_row_lengths(window_ids, windows.counts), text
    ).to_tensor(default_value=-1)
    exists = siblings >= 0
    sibling_start = tf.gather(windows.start, tf.maximum(siblings, 0))
    sibling_length = tf.gather(windows.length, tf.maximum(siblings, 0))
    left = position[:, None] - sibling_start
    right = sibling_start + sibling_length - 1 - position[:, None]
    contains = tf.logical_and(tf.logical_and(left >= 0, right >= 0), exists)
    context_score = tf.cast(tf.minimum(left, right), tf.float64) + 0.01 * tf.cast(
        sibling_length, tf.float64
    )
    context_score = tf.where(contains, context_score, -float("inf"))
    _, best = first_index_of_max(context_score)
    return tf.reshape(best, shape)


def combine_windows(logits: tf.Tensor, counts: tf.Tensor, aggregation: str) -> tf.Tensor:
    """tasks/window_aggregation.py `aggregate_windows` in graph ops: each text's windows' logits
    combined into one row, "mean" (summed, then divided by the count), "max" (per class) or
    "first" (its first window's).

    Args: logits float32 [windows, classes] (text order, then window order, as slide_windows
      lists them), counts int64 [texts] (each text's windows, every one at least 1),
      aggregation one of WINDOW_AGGREGATIONS. Returns float32 [texts, classes].
    """
    num_texts = tf.size(counts, tf.int64)
    text = tf.repeat(tf.range(num_texts), counts)
    if aggregation == "first":
        return tf.gather(logits, tf.cumsum(counts, exclusive=True))
    if aggregation == "max":
        return tf.math.unsorted_segment_max(logits, text, num_texts)
    if aggregation == "mean":
        total = tf.math.unsorted_segment_sum(logits, text, num_texts)
        return total / tf.cast(counts, logits.dtype)[:, None]
    raise ValueError(
        f"window_aggregation must be one of {list(WINDOW_AGGREGATIONS)}, got {aggregation!r}"
    )
