"""Fine-tunes one BERT encoder on several GLUE-style tasks at once, a classification or
regression head per task; each step trains on one task's batch. --do_eval evaluates every task
on its dev set, --do_predict writes every task's test predictions to
output_dir/<task>/test_results.tsv (run_classifier.py's format).

Its flags: `python run_multitask.py --helpshort`; its guide: docs/run_multitask.md. The command
itself is official_bert/commands/run_multitask.py, which an installed package also runs as
`official-bert run_multitask`.
"""

import _quiet_start  # noqa: F401  # isort: skip  (first: no CUDA/oneDNN start-up lines)

from official_bert.commands import run_multitask
from official_bert.script_main import run_command

if __name__ == "__main__":
    run_command(run_multitask)
