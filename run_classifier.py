"""Fine-tunes BERT on a sentence (pair) classification task: GLUE, XNLI, or any TSV/CSV; or on a
token tagging task (named entities, part-of-speech) in the CoNLL layout (--task_name=conll);
with --task_name=generic --multi_label, on examples that each have a set of labels.

Its flags: `python run_classifier.py --helpshort`; its guide: docs/run_classifier.md. The command
itself is official_bert/commands/run_classifier.py, which an installed package also runs as
`official-bert run_classifier`.
"""

import _quiet_start  # noqa: F401  # isort: skip  (first: no CUDA/oneDNN start-up lines)

from official_bert.commands import run_classifier
from official_bert.script_main import run_command

if __name__ == "__main__":
    run_command(run_classifier)
