"""Creates masked-LM + next-sentence pre-training TFRecords (the original's flags and features).

Its flags: `python create_pretraining_data.py --helpshort`; its guide:
docs/create_pretraining_data.md. The command itself is
official_bert/commands/create_pretraining_data.py, which an installed package also runs as
`official-bert create_pretraining_data`.
"""

import _quiet_start  # noqa: F401  # isort: skip  (first: no CUDA/oneDNN start-up lines)

from official_bert.commands import create_pretraining_data
from official_bert.script_main import run_command

if __name__ == "__main__":
    run_command(create_pretraining_data)
