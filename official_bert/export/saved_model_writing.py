"""Writing a SavedModel so that its final name only ever holds a complete export."""

from __future__ import annotations

import os

import tensorflow as tf

from official_bert.config import write_text_atomically
from official_bert.side_file_names import temporary_path


def save_atomically(
    module,
    export_path: str,
    signatures=None,
    extra_files: dict[str, str] | None = None,
    overwrite: bool = False,
) -> str:
    """`tf.saved_model.save(module, ...)` under a temporary name, renamed to `export_path` when done.

    A failed save removes its `.<export name>.tmp-<pid>` (beside it); a killed one leaves only that, never a
    half-written `export_path`.

    Args:
      module: the trackable object to save.
      export_path: the final directory.
      signatures: passed to `tf.saved_model.save`.
      extra_files: {path relative to the export: text} written before the rename (e.g.
        "assets.extra/labels.txt").
      overwrite: replace an existing `export_path`; otherwise an existing one is an error.

    Returns:
      export_path.

    Raises:
      FileExistsError: `export_path` exists and `overwrite` is False.
    """
    export_path = export_path.rstrip("/")
    if tf.io.gfile.exists(export_path) and not overwrite:
        raise FileExistsError(
            f"export path {export_path} already exists; choose another one or pass --overwrite"
        )
    temporary = temporary_path(export_path)
    if tf.io.gfile.exists(temporary):
        tf.io.gfile.rmtree(temporary)
    try:
        tf.saved_model.save(module, temporary, signatures=signatures)
        for relative_path, text in (extra_files or {}).items():
            write_text_atomically(os.path.join(temporary, relative_path), text)
    except BaseException:
        # Nothing half-written is left behind, and the error still propagates.
        if tf.io.gfile.exists(temporary):
            tf.io.gfile.rmtree(temporary)
        raise
    if tf.io.gfile.exists(export_path):
        tf.io.gfile.rmtree(export_path)
    tf.io.gfile.rename(temporary, export_path)
    return export_path
