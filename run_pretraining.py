"""Pre-trains BERT (masked LM + next sentence) on TFRecords of create_pretraining_data.py.

Its flags: `python run_pretraining.py --helpshort`; its guide: docs/run_pretraining.md. The command
itself is official_bert/commands/run_pretraining.py, which an installed package also runs as
`official-bert run_pretraining`.
"""

import _quiet_start  # noqa: F401  # isort: skip  (first: no CUDA/oneDNN start-up lines)

from official_bert.commands import run_pretraining
from official_bert.script_main import run_command

if __name__ == "__main__":
    run_command(run_pretraining)
