"""Fine-tunes BERT on SQuAD v1.1 or v2.0, writes the original prediction files, and scores them.

Its flags: `python run_squad.py --helpshort`; its guide: docs/run_squad.md. The command itself is
official_bert/commands/run_squad.py, which an installed package also runs as `official-bert
run_squad`.
"""

import _quiet_start  # noqa: F401  # isort: skip  (first: no CUDA/oneDNN start-up lines)

from official_bert.commands import run_squad
from official_bert.script_main import run_command

if __name__ == "__main__":
    run_command(run_squad)
