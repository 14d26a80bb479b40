"""Writing a SavedModel so that its final name only ever holds a complete export."""

from __future__ import annotations

import contextlib
import os

import tensorflow as tf

from official_bert.atomic_output import remove_stale_temporaries
from official_bert.config import write_text_atomically
from official_bert.side_file_names import temporary_glob, temporary_path

try:  # TensorFlow's own save context; private, hence the fallback below.
    from tensorflow.python.saved_model import save_context as _save_context
except ImportError:  # pragma: no cover  (a TensorFlow without the module: trace twice)
    _save_context = None

# The options of every save_atomically, and of the traces made for it (traced_for_saving).
SAVE_OPTIONS = tf.saved_model.SaveOptions()


def traced_for_saving():
    """A context for the `get_concrete_function` calls of a module about to be saved.

    `tf.saved_model.save` traces again every function of the module in its own save context:
    whether a trace was made in one (and with which variable policy) is part of the trace's
    cache key. A function with Python arguments (`training=True/False`) has to be traced before
    saving, so that the save knows its signatures; traced outside a save context, the save then
    traces each one a second time, which is most of the export time of a BERT encoder. Traced
    in this context, with the options save_atomically passes, the save finds them in the cache.
    Hand-written because TensorFlow has no public way to enter its save context; where the
    private module is missing, this context does nothing and the functions are traced twice, as
    before.
    """
    if _save_context is None or _save_context.in_save_context():
        return contextlib.nullcontext()
    return _save_context.save_context(SAVE_OPTIONS)


def check_export_path_replaceable(export_path: str, name: str = "export path") -> None:
    """Raises FileExistsError where `export_path` exists but is not what an export may replace:
    a SavedModel (`saved_model.pb` or `.pbtxt` inside) or an empty folder. A folder of the user's
    own (their data, a run's output_dir, a parent of either) is never removed to make room.

    `name` says which flag gave the path (e.g. "--export_dir")."""
    export_path = export_path.rstrip("/")
    if not tf.io.gfile.exists(export_path):
        return
    if not tf.io.gfile.isdir(export_path):
        raise FileExistsError(f"{name} {export_path} is a file; expected a folder for a SavedModel")
    entries = tf.io.gfile.listdir(export_path)
    if not entries or {"saved_model.pb", "saved_model.pbtxt"} & set(entries):
        return
    shown = ", ".join(sorted(entry.rstrip("/") for entry in entries)[:5])
    more = ", ..." if len(entries) > 5 else ""
    raise FileExistsError(
        f"{name} {export_path} exists and is not a SavedModel (it holds {shown}{more}); an "
        "export replaces only an earlier export: choose a new or empty folder"
    )


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
      overwrite: replace an existing `export_path` that holds a SavedModel (or nothing);
        otherwise an existing one is an error.

    Returns:
      export_path.

    Raises:
      FileExistsError: `export_path` exists and `overwrite` is False, or it exists and is not a
        SavedModel (check_export_path_replaceable).
    """
    export_path = export_path.rstrip("/")
    if tf.io.gfile.exists(export_path) and not overwrite:
        raise FileExistsError(
            f"export path {export_path} already exists; choose another one or pass --overwrite"
        )
    check_export_path_replaceable(export_path)
    remove_stale_temporaries(temporary_glob(export_path))
    temporary = temporary_path(export_path)
    if tf.io.gfile.exists(temporary):
        tf.io.gfile.rmtree(temporary)
    try:
        tf.saved_model.save(module, temporary, signatures=signatures, options=SAVE_OPTIONS)
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
