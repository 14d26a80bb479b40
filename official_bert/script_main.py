"""How a top-level script runs its main: absl's app.run, with a mistake in the user's input
reported as its message alone.

A flag that is missing or contradicts another, a file that is absent or malformed: the library
raises each with a message that names the flag, the file and its line, what was found and what
was expected. The twenty to forty lines of traceback above such a message say nothing a user can
act on and push it out of sight, so it is printed as

  run_classifier.py: error: --bert_config_file is required (none found beside --init_checkpoint)

and the script exits with status 1. Such an error is an exception of one of the library's own
classes (ClassifierDataError, CheckpointMismatchError, RecordFileError, ...) or a ValueError or
OSError that the library or the script raised itself (the innermost frame of its traceback is
their code). Anything else (a ValueError from inside Keras, a TensorFlow runtime error) may be a
bug and keeps its traceback, and --verbosity=1 (-v 1) shows the traceback of every error.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from absl import app, logging

_LIBRARY_DIRECTORY = os.path.dirname(os.path.abspath(__file__)) + os.sep


def run_main(main: Callable[[list[str]], object]) -> None:
    """app.run(main), an input error printed as "<script>: error: <message>" (exit status 1)."""
    script_file = os.path.abspath(main.__code__.co_filename)

    def main_reporting_input_errors(argv: list[str]):
        try:
            return main(argv)
        except Exception as error:
            if logging.level_debug() or not is_input_error(error, script_file):
                raise
            message = str(error) or type(error).__name__
            sys.stderr.write(f"{os.path.basename(script_file)}: error: {message}\n")
            sys.stderr.flush()
            sys.exit(1)

    app.run(main_reporting_input_errors)


def is_input_error(error: BaseException, script_file: str) -> bool:
    """Whether `error` reports a mistake in the input with a message of its own: an exception
    of a class defined in the library, or a ValueError or OSError raised in the library's code
    or in `script_file` (the innermost frame of its traceback)."""
    if type(error).__module__.split(".")[0] == "official_bert":
        return True
    if not isinstance(error, (ValueError, OSError)):
        return False
    innermost = error.__traceback__
    if innermost is None:
        return False
    while innermost.tb_next is not None:
        innermost = innermost.tb_next
    raised_in = os.path.abspath(innermost.tb_frame.f_code.co_filename)
    return raised_in == script_file or raised_in.startswith(_LIBRARY_DIRECTORY)
