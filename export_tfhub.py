"""Exports BERT as TF Hub SavedModels: the encoder, the encoder with its masked-LM head, or the
text preprocessor.

Its flags: `python export_tfhub.py --helpshort`; its guide: docs/export_tfhub.md. The command
itself is official_bert/commands/export_tfhub.py, which an installed package also runs as
`official-bert export_tfhub`.
"""

import _quiet_start  # noqa: F401  # isort: skip  (first: no CUDA/oneDNN start-up lines)

from official_bert.commands import export_tfhub
from official_bert.script_main import run_command

if __name__ == "__main__":
    run_command(export_tfhub)
