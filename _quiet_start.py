"""Loads TensorFlow for a top-level script without its start-up lines about CUDA and oneDNN.

Each script imports this module first, before anything else imports tensorflow:

  import _quiet_start  # noqa: F401  # isort: skip  (first: no CUDA/oneDNN start-up lines)

(`isort: skip` keeps it first: ruff would sort it, a first-party module, after absl.) What it
hides and when the lines show anyway: official_bert_cli.py, whose `official-bert` command starts
an installed package's commands the same way.
"""

import sys

from official_bert_cli import start_tensorflow_quietly

start_tensorflow_quietly(sys.argv[1:])
