"""import_quietly: imports a library that imports setuptools' pkg_resources without the warning
setuptools 81 and later print for that import.

jieba 0.42.1 and tensorflow_hub 0.16.1 import pkg_resources; the venvs of Python 3.12 and 3.13
get a setuptools that warns about it on stderr ("pkg_resources is deprecated as an API"), which
the scripts' quiet start-up would show in the middle of a run. The warning concerns those
libraries, not the user's code, so it is left out for that import only.
"""

from __future__ import annotations

import importlib
import warnings
from types import ModuleType


def import_quietly(module_name: str) -> ModuleType:
    """`importlib.import_module(module_name)` without setuptools' pkg_resources warning (any other
    warning shows); ImportError as the import raises it."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="pkg_resources is deprecated", category=UserWarning
        )
        return importlib.import_module(module_name)
