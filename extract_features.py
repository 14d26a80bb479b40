"""Extracts contextual token features from a pre-trained BERT (the original's flags and format).

Its flags: `python extract_features.py --helpshort`; its guide: docs/extract_features.md. The
command itself is official_bert/commands/extract_features.py, which an installed package also runs
as `official-bert extract_features`.
"""

import _quiet_start  # noqa: F401  # isort: skip  (first: no CUDA/oneDNN start-up lines)

from official_bert.commands import extract_features
from official_bert.script_main import run_command

if __name__ == "__main__":
    run_command(extract_features)
