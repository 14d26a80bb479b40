"""The `official-bert` command, and the quiet TensorFlow start that every script makes first.

  official-bert run_classifier --task_name=MRPC --do_train=true --data_dir=... --output_dir=...
  official-bert --help          # the commands
  official-bert run_squad --helpshort

`pip install` puts `official-bert` on the environment's PATH; its first argument names one of the
original release's scripts (COMMANDS), the rest are that script's flags, as
`python run_squad.py ...` takes them in a checkout. `python -m official_bert_cli ...` is the same.

Quiet start (start_tensorflow_quietly). On a machine without a GPU, `import tensorflow` prints,
from C++ and before TensorFlow reads TF_CPP_MIN_LOG_LEVEL (so that variable cannot hide them),
"oneDNN custom operations are on", "Could not find cuda drivers on your machine" and the CPU
instruction note, twice (two of its shared libraries log them); the first device listing then
logs "failed call to cuInit". None of them says anything a CPU user can act on, and they bury
the script's own output. So TensorFlow is imported and its devices listed with the process's
stderr (file descriptor 2, where C++ writes) sent to a temporary file; afterwards every captured
line is written back to stderr except those start-up lines. Anything else TensorFlow says, a
failed import's traceback included, still shows.

TensorFlow's own C++ INFO and WARNING lines (tf.data buffer sizes, XLA's service) are off too:
TF_CPP_MIN_LOG_LEVEL=2 while TensorFlow loads, which is when it reads the level once for the
process. TensorFlow's Python modules' INFO records (logged through absl's logger, which the
scripts share: "Sharding callback duration" at every checkpoint save) are dropped by a filter
on that logger (TensorFlowInfoFilter). The variable is removed again afterwards, so that a
script started by this one (the demo's stages) decides for itself, as here. The scripts' own
progress lines (absl logging, with rate and ETA) are Python's and stay.

Asked for, the lines stay: when TF_CPP_MIN_LOG_LEVEL=0 is set in the environment (the user asked
for all of TensorFlow's lines) or when the command line asks absl for --verbosity=1 or more (`-v
1`, `--v=1`, ...). absl parses flags only after the imports, so the arguments are read here. A
level of 1-3 asks for fewer lines, which the quiet start gives (TensorFlow 2.21 prints its
start-up lines whatever the level); the user's level is kept for the process and its children.

The objects the import made (TensorFlow's modules, about 300k) are then frozen (gc.freeze), as
they live as long as the process: Python's full collections, the one at the interpreter's exit
included, no longer walk them.

A module of its own at the top level, not in official_bert: importing the library imports
TensorFlow (before anything here could run), and the library changes neither the process's
output nor its environment. The checkout's scripts get the same start from `_quiet_start.py`.
"""

import gc
import importlib
import logging
import os
import re
import sys
import tempfile

# Substrings of the start-up lines dropped (TensorFlow 2.21 on a machine without CUDA drivers).
START_UP_LINES = (
    "All log messages before absl::InitializeLog() is called are written to STDERR",
    "oneDNN custom operations are on",
    "Could not find cuda drivers on your machine",
    "failed call to cuInit",
    "This TensorFlow binary is optimized to use available CPU instructions",
    "To enable the following instructions:",
)
_VERBOSITY_FLAG = re.compile(r"^--?(?:verbosity|v)(?:=(.*))?$")


def asked_for_start_up_lines(argv: list[str], environ: dict[str, str]) -> bool:
    """True when TF_CPP_MIN_LOG_LEVEL is 0 (every line of TensorFlow's) or argv (the script's
    flags) asks for --verbosity (short -v) of 1 or more; an unreadable value is left to absl
    to reject. A level of 1-3 asks for fewer lines: the quiet start honours it."""
    if environ.get("TF_CPP_MIN_LOG_LEVEL", "").strip() == "0":
        return True
    for index, argument in enumerate(argv):
        if argument == "--":
            break
        match = _VERBOSITY_FLAG.match(argument)
        if not match:
            continue
        value = match.group(1)
        if value is None and index + 1 < len(argv):
            value = argv[index + 1]
        try:
            if int(value) >= 1:
                return True
        except (TypeError, ValueError):
            pass
    return False


def without_start_up_lines(text: str) -> str:
    """text less its lines that contain one of START_UP_LINES (line ends kept)."""
    return "".join(
        line
        for line in text.splitlines(keepends=True)
        if not any(start_up in line for start_up in START_UP_LINES)
    )


# TensorFlow's C++ logging while quiet: ERROR and above (2 hides INFO and WARNING).
QUIET_LOG_LEVEL = "2"


def import_tensorflow_quietly() -> None:
    """Imports tensorflow and lists its devices with fd 2 captured and TF_CPP_MIN_LOG_LEVEL at
    QUIET_LOG_LEVEL, then writes back to stderr what was captured, less the start-up lines (all
    of it when the import raised). TF_CPP_MIN_LOG_LEVEL is set back to the user's (or unset) on
    return."""
    users_level = os.environ.get("TF_CPP_MIN_LOG_LEVEL")
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3" if users_level == "3" else QUIET_LOG_LEVEL
    sys.stderr.flush()
    saved_stderr = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        failed = True
        try:
            import tensorflow as tf

            tf.config.list_physical_devices()  # initializes the platforms: the cuInit line
            failed = False
        finally:
            if users_level is None:
                del os.environ["TF_CPP_MIN_LOG_LEVEL"]
            else:  # the user's, for the script's children
                os.environ["TF_CPP_MIN_LOG_LEVEL"] = users_level
            sys.stderr.flush()
            os.dup2(saved_stderr, 2)
            os.close(saved_stderr)
            captured.seek(0)
            text = captured.read().decode("utf-8", errors="replace")
            # A Ctrl-C during the import is said in one line by the caller.
            interrupted = isinstance(sys.exc_info()[1], KeyboardInterrupt)
            kept = "" if interrupted else text if failed else without_start_up_lines(text)
            if kept:
                sys.stderr.write(kept)
                sys.stderr.flush()


class TensorFlowInfoFilter(logging.Filter):
    """Drops the INFO (and DEBUG) records that TensorFlow's own Python modules log through
    absl's logger, e.g. "Sharding callback duration" at every checkpoint save: they repeat
    between a script's progress lines without telling a user anything. The scripts' own lines,
    and TensorFlow's warnings and errors, pass. A filter on the logger, not a level: TensorFlow
    and the scripts log through the same logger (absl's)."""

    def __init__(self, tensorflow_dir: str):
        super().__init__()
        self.tensorflow_dir = os.path.join(tensorflow_dir, "")

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or not record.pathname.startswith(
            self.tensorflow_dir
        )


def quiet_tensorflow_info_records() -> None:
    """Installs TensorFlowInfoFilter (once) on absl's logger and on TensorFlow's own, which
    some of its modules log through ("Assets written to: <temporary name>" at every SavedModel
    export), and takes away the handler TensorFlow gives its logger: made before absl's handler
    is on the root logger (app.run puts it there), it would print each of its records a second
    time ("WARNING:tensorflow:..."). Its records then reach absl's handler, in the scripts'
    format."""
    import tensorflow as tf
    from absl import logging as absl_logging

    tensorflow_logger = tf.get_logger()
    for handler in list(tensorflow_logger.handlers):
        tensorflow_logger.removeHandler(handler)
    for logger in (absl_logging.get_absl_logger(), tensorflow_logger):
        if not any(isinstance(f, TensorFlowInfoFilter) for f in logger.filters):
            logger.addFilter(TensorFlowInfoFilter(os.path.dirname(tf.__file__)))


def start_tensorflow_quietly(arguments: list[str]) -> None:
    """Imports TensorFlow without its start-up lines (unless `arguments`, the command's flags,
    or the environment ask for them; see the module docstring), then freezes what the import
    made out of Python's collections."""
    try:
        if not asked_for_start_up_lines(arguments, os.environ):
            import_tensorflow_quietly()
            quiet_tensorflow_info_records()
        else:
            import tensorflow  # noqa: F401  (its start-up lines show, as asked)
    except KeyboardInterrupt:
        # Ctrl-C in the seconds TensorFlow's import takes: one line, not the import's traceback
        # through TensorFlow, Keras and IPython; nothing was written yet.
        sys.stderr.write(f"{os.path.basename(sys.argv[0])}: interrupted while starting\n")
        sys.exit(130)
    # TensorFlow's modules, made by the import above, live as long as the process: out of
    # Python's collections (gc.freeze), every full collection and the last one, at the
    # interpreter's exit, skip them instead of walking all of them again. What the command
    # makes from here on is collected as usual.
    gc.freeze()


# The original release's scripts and this project's own, each a module of
# official_bert.commands; the checkout's top-level scripts of the same names run the same.
COMMANDS = {
    "create_pretraining_data": "masked-LM / next-sentence pre-training TFRecords from text",
    "run_pretraining": "pre-trains BERT from those records",
    "run_classifier": "fine-tunes on sentence (pair) classification or token tagging",
    "run_classifier_with_tfhub": "run_classifier with the encoder from a TF Hub handle",
    "run_multitask": "fine-tunes one encoder on several classification tasks",
    "run_squad": "fine-tunes for SQuAD v1.1 / v2.0 and writes its predictions",
    "extract_features": "per-token activations or sentence embeddings as JSON lines / .npy",
    "export_tfhub": "exports TF Hub SavedModels (encoder, preprocessor, ...)",
    "convert_checkpoint": "converts weights between checkpoint layouts",
}
PROGRAM = "official-bert"


def usage() -> str:
    """The command's own help: how to call it and its commands."""
    width = max(len(name) for name in COMMANDS)
    lines = [
        f"usage: {PROGRAM} COMMAND [--flag=value ...]",
        "",
        "Runs one of official_bert's scripts with the flags that follow, as `python COMMAND.py`",
        f"does in a checkout. `{PROGRAM} COMMAND --helpshort` lists a command's flags.",
        "",
        "commands:",
        *(f"  {name:<{width}}  {summary}" for name, summary in COMMANDS.items()),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """`official-bert COMMAND FLAGS...`: the command's script with those flags (absl parses them
    from sys.argv, which becomes ["official-bert COMMAND", *FLAGS]); its exit status."""
    argv = list(sys.argv if argv is None else argv)
    if len(argv) < 2 or argv[1] in ("-h", "--help", "help"):
        (sys.stdout if len(argv) >= 2 else sys.stderr).write(usage())
        return 0 if len(argv) >= 2 else 2
    name = argv[1].removesuffix(".py")
    if name not in COMMANDS:
        sys.stderr.write(
            f"{PROGRAM}: error: no command {argv[1]!r}; one of: {', '.join(COMMANDS)}\n"
        )
        return 2
    sys.argv = [f"{PROGRAM} {name}", *argv[2:]]
    start_tensorflow_quietly(sys.argv[1:])
    from official_bert.script_main import run_command  # after the quiet start: it imports TF

    run_command(importlib.import_module(f"official_bert.commands.{name}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
