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

import contextlib
import os
import re
import signal
import sys
from collections.abc import Callable
from types import ModuleType

import tensorflow as tf
from absl import app, flags, logging

from official_bert.data.record_batches import TOKEN_ID_CHECK

_LIBRARY_DIRECTORY = os.path.dirname(os.path.abspath(__file__)) + os.sep


def run_command(command: ModuleType) -> None:
    """Runs a module of official_bert.commands: defines its flags (`command.define_flags()`),
    makes its docstring the usage text that absl prints for --help (absl reads the docstring of
    `__main__`: a top-level script's, or the `official-bert` program's), then
    run_main(command.main)."""
    command.define_flags()
    main_module = sys.modules.get("__main__")
    if main_module is not None and main_module is not command:
        main_module.__doc__ = command.__doc__
        # --helpshort lists the key flags of the module named by sys.argv[0] ("run_squad.py",
        # "official-bert run_squad"), absl's name for the main module: the command's.
        for flag in flags.FLAGS.get_key_flags_for_module(command.__name__):
            flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)
    run_main(command.main)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler's or `kill`'s) raised in the main thread as Ctrl-C's
    KeyboardInterrupt is: the writers' cleanup runs (no temporary file is left behind, as
    Python's default for SIGTERM, an exit with no cleanup at all, would leave it)."""


def _raise_terminated(signum, frame):
    raise Terminated()


@contextlib.contextmanager
def _sigterm_raises():
    """SIGTERM raises Terminated while the block runs (in the main thread; training installs its
    own handler, which stops at a checkpoint, and puts this one back)."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread: signals are not delivered here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _is_broken_pipe(error: BaseException) -> bool:
    """A write to a pipe whose reader has gone: Python's BrokenPipeError, or TensorFlow's file
    writer's FailedPreconditionError ("/dev/stdout; Broken pipe")."""
    return isinstance(error, BrokenPipeError) or (
        isinstance(error, tf.errors.FailedPreconditionError)
        and str(error).rstrip().endswith("Broken pipe")
    )


def run_main(main: Callable[[list[str]], object]) -> None:
    """app.run(main), an input error printed as "<program>: error: <message>" (exit status 1),
    the program being what sys.argv[0] names (`run_classifier.py`, `official-bert run_squad`)."""
    script_file = os.path.abspath(main.__code__.co_filename)

    def main_reporting_input_errors(argv: list[str]):
        program = os.path.basename(sys.argv[0] if sys.argv and sys.argv[0] else script_file)
        try:
            with _sigterm_raises():
                return main(argv)
        except KeyboardInterrupt as interrupt:
            # Ctrl-C or SIGTERM outside training (which stops with a checkpoint:
            # TrainingStopped), e.g. while evaluating, exporting or writing records: every
            # output is written under a temporary name, removed on the way out, so nothing
            # half-written is left; no traceback. 130 / 143: as the signal's exit.
            if logging.level_debug():
                raise
            terminated = isinstance(interrupt, Terminated)
            what = "terminated (SIGTERM)" if terminated else "interrupted"
            sys.stderr.write(f"{program}: {what}; nothing half-written was kept\n")
            sys.stderr.flush()
            sys.exit(128 + signal.SIGTERM if terminated else 130)
        except Exception as error:
            if _is_broken_pipe(error) and not logging.level_debug():
                # The reader of an output pipe went away (`--output_file=/dev/stdout | head`):
                # as a shell tool does, stop quietly with SIGPIPE's status; stdout goes to
                # /dev/null first, so that the interpreter's last flush fails no more.
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                sys.exit(128 + signal.SIGPIPE)
            message = input_check_message(error) or remote_path_message(error)
            if logging.level_debug() or (
                message is None and not is_input_error(error, script_file)
            ):
                raise
            message = message or str(error) or type(error).__name__
            sys.stderr.write(f"{program}: error: {message}\n")
            sys.stderr.flush()
            # 128 + a signal's number where training stopped at one (TrainingStopped), as a
            # process killed by it exits; else 1.
            sys.exit(getattr(error, "exit_status", 1))

    app.run(main_reporting_input_errors)


# tf.debugging.Assert's failure: "assertion failed: [text] [value] [text] ..." on one line.
_FAILED_ASSERTION = re.compile(r"assertion failed: ((?:\[[^\]\n]*\] ?)+)")


def input_check_message(error: BaseException) -> str | None:
    """The message of a check on the input that the library makes inside a TensorFlow graph
    (the token ids of the records against the model's vocabulary, record_batches), when
    `error` is its failure; else None. Such a check fails as an InvalidArgumentError from the
    input pipeline, its message buried in TensorFlow's node names and stack traces."""
    if not isinstance(error, tf.errors.InvalidArgumentError):
        return None
    match = _FAILED_ASSERTION.search(getattr(error, "message", None) or str(error))
    if match is None:
        return None
    text = " ".join(re.findall(r"\[([^\]\n]*)\]", match.group(1))).replace("\\'", "'")
    return text if text.startswith(TOKEN_ID_CHECK) else None


# TensorFlow's errors where a `scheme://` path cannot be reached: a scheme this TensorFlow has no
# file system for (UnimplementedError), Cloud Storage without a network or credentials
# (FailedPrecondition: "Could not resolve host", Unauthenticated, PermissionDenied,
# Unavailable, DeadlineExceeded), an object that is not there (NotFound).
_REMOTE_FILE_SYSTEM_ERRORS = (
    tf.errors.UnimplementedError,
    tf.errors.FailedPreconditionError,
    tf.errors.UnauthenticatedError,
    tf.errors.PermissionDeniedError,
    tf.errors.UnavailableError,
    tf.errors.DeadlineExceededError,
    tf.errors.NotFoundError,
)
_REMOTE_PATH = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"]+")


def remote_path_message(error: BaseException) -> str | None:
    """One line naming the `scheme://` path (as the flag that gave it, where one did) and the
    cause, when `error` is TensorFlow's failure to reach it (_REMOTE_FILE_SYSTEM_ERRORS); else
    None. TensorFlow's own message is several lines under a traceback of thirty, and names the
    file the library probed (`.../bert_model.ckpt/tfhub_module.pb`), not the one given."""
    if not isinstance(error, _REMOTE_FILE_SYSTEM_ERRORS):
        return None
    text = (getattr(error, "message", None) or str(error)).strip()
    match = _REMOTE_PATH.search(text)
    if match is None:
        return None
    path = match.group(0)
    cause = text.splitlines()[0].strip()
    return f"{_flag_giving(path) or path} cannot be reached: {cause}"


def _flag_giving(path: str) -> str | None:
    """`--name=value` of the parsed flag whose value (or one of its comma-separated parts) is
    `path` or a folder or file name that `path` extends; None when no flag gave it."""
    if not flags.FLAGS.is_parsed():
        return None
    for name, value in flags.FLAGS.flag_values_dict().items():
        if not isinstance(value, str) or "://" not in value:
            continue
        for part in (p.strip() for p in value.split(",")):
            if part and (path == part or path.startswith(part.rstrip("/") + "/")):
                return f"--{name}={part}"
    return None


def is_input_error(error: BaseException, script_file: str) -> bool:
    """Whether `error` reports a mistake in the input with a message of its own: an exception
    of a class defined in the library, TensorFlow's PermissionDeniedError (a file or folder the
    user may not write, named in its message), or a ValueError or OSError raised in the
    library's code or in `script_file` (the innermost frame of its traceback), or TensorFlow's
    failure to reach a `scheme://` path (remote_path_message)."""
    if type(error).__module__.split(".")[0] == "official_bert":
        return True
    if remote_path_message(error) is not None:
        return True
    if isinstance(error, tf.errors.PermissionDeniedError):
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
