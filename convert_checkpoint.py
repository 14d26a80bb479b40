"""Converts BERT weights between the original TF1 layout, safetensors (HF names), keras-hub
presets and ours; reads PyTorch's pytorch_model.bin (without PyTorch) and transformers'
tf_model.h5 too.

Its flags: `python convert_checkpoint.py --helpshort`; its guide: docs/checkpoints.md. The command
itself is official_bert/commands/convert_checkpoint.py, which an installed package also runs as
`official-bert convert_checkpoint`.
"""

import _quiet_start  # noqa: F401  # isort: skip  (first: no CUDA/oneDNN start-up lines)

from official_bert.commands import convert_checkpoint
from official_bert.script_main import run_command

if __name__ == "__main__":
    run_command(convert_checkpoint)
