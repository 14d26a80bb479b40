"""Fine-tunes a BERT encoder from TF Hub on a classification task: run_classifier.py with the
encoder given by --bert_hub_module_handle (the original release's script of this name).

Its flags: `python run_classifier_with_tfhub.py --helpshort`; its guide:
docs/run_classifier_with_tfhub.md. The command itself is
official_bert/commands/run_classifier_with_tfhub.py, which an installed package also runs as
`official-bert run_classifier_with_tfhub`.
"""

import _quiet_start  # noqa: F401  # isort: skip  (first: no CUDA/oneDNN start-up lines)

from official_bert.commands import run_classifier_with_tfhub
from official_bert.script_main import run_command

if __name__ == "__main__":
    run_command(run_classifier_with_tfhub)
