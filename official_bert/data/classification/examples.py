"""Every classification and tagging task by name: `get_processor` and `processor_names`.

Importing this module registers the built-in tasks (the GLUE tasks, XNLI and generic from
`glue_processors.py`, conll from `data/tagging/examples.py`, chinese_ner and its aliases
from `data/tagging/character_ner.py`, swag and c3 from `data/multiple_choice/examples.py`). The processor base and the registry
are in `data_processor.py`, which the task modules import; their names are also importable from
here, where callers have always found them.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

import tensorflow as tf

import official_bert.data.classification.glue_processors  # noqa: F401  (registers the GLUE tasks)
import official_bert.data.multiple_choice.examples  # noqa: F401  (registers swag, c3)
import official_bert.data.tagging.character_ner  # noqa: F401  (registers chinese_ner, msra_ner)
import official_bert.data.tagging.examples  # noqa: F401  (registers conll)
from official_bert.data.classification.data_processor import (
    SPLITS,
    ClassifierDataError,
    ClassifierExample,
    DataProcessor,
    TsvRow,
    read_delimited_rows,
    register_processor,
    registered_processors,
)

__all__ = [
    "SPLITS",
    "ClassifierDataError",
    "ClassifierExample",
    "DataProcessor",
    "TsvRow",
    "get_processor",
    "import_processor_module",
    "processor_names",
    "read_delimited_rows",
    "register_processor",
]


def import_processor_module(module: str) -> None:
    """Imports `module`, a Python file's path (`my_tasks.py`) or an importable module name, so
    that the processors it registers (@register_processor) can be named by get_processor.

    Raises:
      ValueError: no such file or module (the module's own errors pass through: they are in
        the user's code, and its traceback is what finds them).
    """
    if module.endswith(".py"):
        path = os.path.abspath(os.path.expanduser(module))
        if not os.path.isfile(path):
            raise ValueError(f"--processor_module={module}: no such file")
        # A name of its own: a file named like a library module (json.py) must not replace it.
        name = "processor_module_" + os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[name] = loaded  # dataclasses and pickling look their module up by name
        spec.loader.exec_module(loaded)
        return
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name is None or not module.startswith(error.name):
            raise
        raise ValueError(
            f"--processor_module={module}: no module named {error.name!r} on the Python path "
            "(pass the file's path instead, e.g. ./my_tasks.py)"
        ) from None


def processor_names() -> list[str]:
    """The registered task names (the GLUE tasks, XNLI, generic, conll, and any registered
    since)."""
    return sorted(registered_processors())


def get_processor(task_name: str, data_dir: str, **kwargs):
    """The processor of `task_name` (case-insensitive) reading `data_dir`: a DataProcessor, a
    TaggingProcessor for a token tagging task or a MultipleChoiceProcessor.

    Keyword arguments go to the processor (e.g. the generic task's column settings).
    """
    cls = registered_processors().get(task_name.lower())
    if cls is None:
        raise ValueError(f"unknown task_name {task_name!r}; expected one of {processor_names()}")
    is_directory = False
    try:
        is_directory = bool(data_dir) and tf.io.gfile.stat(data_dir).is_directory
    except tf.errors.NotFoundError:
        pass
    except tf.errors.OpError as error:
        # A file system that cannot be reached (gs:// without a network or credentials, a
        # scheme this TensorFlow lacks): its cause, not "is not a directory".
        cause = error.message.strip().splitlines()[0]
        raise FileNotFoundError(f"data_dir {data_dir!r} cannot be read: {cause}") from None
    if not is_directory:
        raise FileNotFoundError(f"data_dir {data_dir!r} is not a directory")
    return cls(data_dir, **kwargs)
