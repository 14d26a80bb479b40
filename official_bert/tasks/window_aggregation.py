"""The windows of a long document back to one prediction (run_classifier.py --doc_stride).

A classification example cut into windows is predicted once per window; its prediction is the
windows' logits combined (--window_aggregation): "mean" (every window has a say; the default),
"max" (per class, the strongest window: a label decided by one passage anywhere), or "first"
(the window the original's truncation would have kept).
"""

from __future__ import annotations

import numpy as np

WINDOW_AGGREGATIONS = ("mean", "max", "first")


def aggregate_windows(
    logits: np.ndarray, example_index: np.ndarray, aggregation: str = "mean"
) -> tuple[np.ndarray, np.ndarray]:
    """Combines the windows' logits per example.

    Args:
      logits: float [windows, num_classes] (scores [windows, 1] for regression), windows in
        file order.
      example_index: int [windows], the example of each window: 0, 0, 1, 2, 2, 2, ... (each
        example's windows together, examples in order, none missing).
      aggregation: one of WINDOW_AGGREGATIONS.

    Returns:
      (float32 [examples, num_classes] combined logits, int64 [examples] the row of each
      example's first window, to read its label).

    Raises:
      ValueError: an unknown aggregation, or example indexes that are not 0, 1, 2, ... in
        runs (the records do not hold whole examples in order).
    """
    if aggregation not in WINDOW_AGGREGATIONS:
        raise ValueError(
            f"window_aggregation must be one of {list(WINDOW_AGGREGATIONS)}, got {aggregation!r}"
        )
    logits = np.asarray(logits, np.float32)
    example_index = np.asarray(example_index).reshape(-1)
    if len(example_index) == 0:
        return np.zeros([0, *logits.shape[1:]], np.float32), np.zeros([0], np.int64)
    starts = np.flatnonzero(np.r_[True, example_index[1:] != example_index[:-1]])
    if not np.array_equal(example_index[starts], np.arange(len(starts))):
        raise ValueError(
            "the windows' example indexes are not each example's windows together in order "
            f"(0, 0, 1, 2, ...); found {example_index[:20].tolist()}..."
        )
    if aggregation == "first":
        combined = logits[starts]
    elif aggregation == "max":
        combined = np.maximum.reduceat(logits, starts, axis=0)
    else:
        counts = np.diff(np.r_[starts, len(example_index)])
        combined = np.add.reduceat(logits, starts, axis=0) / counts[:, None]
    return combined.astype(np.float32), starts.astype(np.int64)
