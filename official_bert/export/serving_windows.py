"""doc_stride windows and the max-context rule in graph ops, for the serving SavedModels that
window long inputs (SQuAD's context, a tagger's sentence).

They are data/document_windows.py's `doc_spans` and `max_context_span` over a batch: window k
of a text starts at k * min(doc_stride, room) and holds at most `room` pieces, the last one
reaching the end; a text of no pieces has no window. A piece is scored in the windows holding it
by min(left, right) context + 0.01 * the window's length, the earliest best window winning.
"""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf


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


def slide_windows(pieces: tf.RaggedTensor, room: tf.Tensor, doc_stride: int) -> Windows:
    """The doc_stride windows (see the module docstring) of `pieces`, [texts, (pieces)], each at
    most `room` (int64 [texts], at least 1) pieces long, starting doc_stride (>= 1) apart."""
    num_pieces = pieces.row_lengths()
    stride = tf.minimum(tf.cast(doc_stride, tf.int64), room)
    counts = tf.where(
        num_pieces == 0,
        tf.zeros_like(num_pieces),
        1 + tf.maximum(num_pieces - room + stride - 1, 0) // stride,
    )
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
