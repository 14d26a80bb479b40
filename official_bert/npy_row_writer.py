"""A float32 .npy matrix written row by row, so that its size never has to fit in memory."""

from __future__ import annotations

import numpy as np
import tensorflow as tf
from numpy.lib import format as npy_format


class NpyRowWriter:
    """Writes a [num_rows, num_columns] float32 .npy file (format 1.0, C order) to `path`, one
    batch of rows at a time: the header is written first for the row count given, so the caller
    counts its rows beforehand (a pass over the input) rather than holding them.

    Use as a context manager; closing checks that exactly `num_rows` rows came (a header that
    promised another count would make numpy read a wrong matrix). Paths go through tf.io.gfile.

    Raises (on close):
      ValueError: more or fewer rows written than `num_rows`.
    """

    def __init__(self, path: str, num_rows: int, num_columns: int):
        self.path = path
        self.num_rows = num_rows
        self.num_columns = num_columns
        self.rows_written = 0
        self._file = tf.io.gfile.GFile(path, "wb")
        header = {
            "descr": npy_format.dtype_to_descr(np.dtype("<f4")),
            "fortran_order": False,
            "shape": (num_rows, num_columns),
        }
        npy_format.write_array_header_1_0(self._file, header)

    def write(self, rows: np.ndarray) -> None:
        """Appends float [k, num_columns] (or one row, [num_columns]) as little-endian float32."""
        rows = np.asarray(rows, np.float32)
        if rows.ndim == 1:
            rows = rows[None]
        if rows.ndim != 2 or rows.shape[1] != self.num_columns:
            raise ValueError(
                f"{self.path}: rows must have {self.num_columns} columns, got shape {rows.shape}"
            )
        if self.rows_written + len(rows) > self.num_rows:
            raise ValueError(
                f"{self.path}: more than the {self.num_rows} rows its header announces"
            )
        self._file.write(np.ascontiguousarray(rows, "<f4").tobytes())
        self.rows_written += len(rows)

    def close(self) -> None:
        self._file.close()
        if self.rows_written != self.num_rows:
            raise ValueError(
                f"{self.path}: {self.rows_written} rows written, but its header announces "
                f"{self.num_rows} (did the input change while it was read?)"
            )

    def __enter__(self) -> NpyRowWriter:
        return self

    def __exit__(self, error_type, error, traceback) -> None:
        if error_type is None:
            self.close()
        else:
            self._file.close()
