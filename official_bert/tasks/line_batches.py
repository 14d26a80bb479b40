"""Running a forward function over the TokenFeatures of input lines in batches, the outputs
given back per line and in input order: batches cut to their longest line, a line's
doc_stride windows put back together, and optionally lines of similar lengths batched together
(length_sorted_line_outputs). extract_features.py's per-token features and sentence
embeddings both read their lines from here."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

import numpy as np

from official_bert.data.feature_extraction_inputs import TokenFeatures
from official_bert.data.record_batches import trimmed_length

# The most memory that the outputs of lines read ahead for length sorting may take (see
# length_sort_window): 160 lines of BERT-Base's four last layers, 672 of its last layer.
SORT_WINDOW_BYTES = 256 * 2**20


def _batches(features: Iterable[TokenFeatures], batch_size: int) -> Iterator[list[TokenFeatures]]:
    iterator = iter(features)
    while batch := list(itertools.islice(iterator, batch_size)):
        yield batch


def line_outputs(
    forward, features: Iterable[TokenFeatures], batch_size: int, trim_padding: bool = False
) -> Iterator[tuple[int, list[str], list[np.ndarray]]]:
    """Runs `forward` (inputs dict -> list of float32 [batch, seq_length, width] tensors) over
    the features, `batch_size` rows per call, and yields per input line, in order, (unique_id,
    its tokens, per output an array float32 [num_tokens, width]).

    A line cut into windows (features with line_tokens) is put together from its windows: each
    token's vectors from the window that carries it (its max-context window; see
    data/feature_extraction_inputs.py). Only the windows of one line are held at a time.

    `trim_padding` cuts each batch to its longest row (rounded up to a multiple of 8, as
    record_batches.trimmed_length): the outputs at real tokens do not depend on padding, so
    short sentences run several times faster (the forward function is traced for the first two
    lengths, then for any: reduce_retracing).
    """
    pending = None  # the arrays of the line whose windows are being put together
    for batch in _batches(features, batch_size):
        real = len(batch)
        # Pad the last batch to full size so the traced function is reused.
        padded = batch + [batch[-1]] * (batch_size - real)
        inputs = {
            "input_word_ids": np.array([f.input_ids for f in padded], np.int32),
            "input_mask": np.array([f.input_mask for f in padded], np.int32),
            "input_type_ids": np.array([f.input_type_ids for f in padded], np.int32),
        }
        if trim_padding:
            trimmed = int(trimmed_length(inputs["input_mask"], inputs["input_mask"].shape[1]))
            inputs = {name: value[:, :trimmed] for name, value in inputs.items()}
        values = [output.numpy() for output in forward(inputs)]
        for row, feature in enumerate(batch):
            if feature.line_tokens is None:
                length = len(feature.tokens)
                yield feature.unique_id, feature.tokens, [v[row, :length] for v in values]
                continue
            if feature.window_index == 0:
                pending = [
                    np.zeros([len(feature.line_tokens), v.shape[-1]], np.float32) for v in values
                ]
            for line_array, v in zip(pending, values, strict=True):
                line_array[feature.line_positions] = v[row, feature.row_positions]
            if feature.window_index == feature.num_windows - 1:
                yield feature.unique_id, feature.line_tokens, pending
                pending = None


def length_sort_window(batch_size: int, max_seq_length: int, output_width: int) -> int:
    """How many lines length_sorted_line_outputs may read ahead: as many whole batches as fit
    SORT_WINDOW_BYTES of outputs held for them (float32, `output_width` values a token, every
    line counted at max_seq_length tokens), at least one batch."""
    line_bytes = max_seq_length * output_width * 4
    return max(1, SORT_WINDOW_BYTES // (line_bytes * batch_size)) * batch_size


def _line_groups(features: Iterable[TokenFeatures]) -> Iterator[list[TokenFeatures]]:
    """The features of one input line at a time: its windows in order, or its one row."""
    iterator = iter(features)
    for first in iterator:
        group = [first, *itertools.islice(iterator, first.num_windows - 1)]
        if len(group) != first.num_windows:
            raise ValueError(
                f"line {first.unique_id}: the features end after {len(group)} of its "
                f"{first.num_windows} windows"
            )
        yield group


def length_sorted_line_outputs(
    forward,
    features: Iterable[TokenFeatures],
    batch_size: int,
    window_lines: int,
    trim_padding: bool = True,
) -> Iterator[tuple[int, list[str], list[np.ndarray]]]:
    """line_outputs' lines, in input order, with the rows of every `window_lines` lines run
    longest line first.

    Why: a batch cut to its longest line (trim_padding) still computes every row at that
    length, and in file order most batches hold one long line among short ones. Sorted, a
    batch's rows are of similar lengths: on 2,000 lines of Wikipedia text (32 wordpieces on
    average, max_seq_length 128) the batches hold less than half the positions
    (bench/RESULTS.md, sentence_embeddings.py). The
    outputs at real tokens do not depend on the batch (the padding is masked out), so the
    values are line_outputs' to float rounding. The lines of a window are held until the window
    is done (length_sort_window bounds their memory); a line's windows (doc_stride) stay
    together, in order. Longest first, so that a window's last, partial batch holds its
    shortest lines."""
    groups = _line_groups(features)
    while window := list(itertools.islice(groups, window_lines)):
        order = sorted(range(len(window)), key=lambda i: -max(len(f.tokens) for f in window[i]))
        rows = [feature for i in order for feature in window[i]]
        lines = [None] * len(window)
        computed = line_outputs(forward, rows, batch_size, trim_padding)
        for i, line in zip(order, computed, strict=True):
            lines[i] = line
        yield from lines


def lines_in_order(forward, features, batch_size: int, sort_window: int):
    """The lines' outputs in input order, batches trimmed; length-sorted with sort_window > 0."""
    if sort_window > 0:
        return length_sorted_line_outputs(forward, features, batch_size, sort_window)
    return line_outputs(forward, features, batch_size, trim_padding=True)
