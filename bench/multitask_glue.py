"""Multi-task against single-task fine-tuning from all-MiniLM-L6-v2 on GLUE MRPC, STS-B and CoLA,
at the same budget of training steps.

(a) run_multitask: one encoder, a head per task, --total_steps steps, each step's task drawn
    with probability p_i proportional to n_i ** (1 / T) (n_i: the task's training examples).
(b) run_classifier on each task alone for exactly as many steps as (a) trains that task (the
    task sequence is fixed by the seed, so the counts are known before (a) runs; they are within
    a few steps of total_steps * p_i). Both sides then see the same number of batches of each
    task and spend the same compute in all (total_steps steps); giving every single-task run
    total_steps steps would hand the single-task side three times the data and compute.

Everything else is the same on both sides: max_seq_length, batch, learning rate, 10% warm-up
and linear decay over each run's own steps, the original AdamWeightDecay, the seed, trimmed
padding. Dev metrics of each task are printed as a Markdown table (one JSON line per run goes to
--jsonl when given).

  nice python bench/multitask_glue.py                          # the defaults: about 20-25 min
  python bench/multitask_glue.py --total_steps 40 --tasks mrpc,sts-b   # a smoke run (~8 min)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from glue_finetune import SHARED, minilm_dir  # noqa: E402  (the MiniLM and GLUE locations)

# --tasks name: (GLUE folder, task name, the metrics shown)
TASKS = {
    "mrpc": ("MRPC", "mrpc", ("accuracy", "f1")),
    "sts-b": ("STS-B", "sts-b", ("pearson", "spearman")),
    "cola": ("CoLA", "cola", ("mcc", "accuracy")),
}


def _shared_settings(args, model: str) -> dict:
    """The FinetuningOptions both sides use."""
    from official_bert.checkpoints.loading import read_bert_config

    return dict(
        bert_config=read_bert_config(os.path.join(model, "config.json")),
        vocab_file=os.path.join(model, "vocab.txt"),
        init_checkpoint=model,
        max_seq_length=args.max_seq_length,
        do_train=True,
        do_eval=True,
        train_batch_size=args.batch_size,
        eval_batch_size=64,
        learning_rate=args.learning_rate,
        warmup_proportion=0.1,
        steps_per_loop=25,
        log_steps=50,
        save_checkpoints_steps=100_000,  # the runner still saves at the end
        seed=args.seed,
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--glue_dir", default=os.path.join(SHARED, "data", "glue"))
    parser.add_argument("--tasks", default="mrpc,sts-b,cola")
    parser.add_argument("--total_steps", type=int, default=300)
    parser.add_argument("--sampling_temperature", type=float, default=1.0)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--jsonl", help="append one JSON line per run here")
    args = parser.parse_args(argv)
    import numpy as np
    from absl import logging

    logging.set_verbosity(logging.INFO)  # the runner's progress lines

    from official_bert.data.classification.examples import get_processor
    from official_bert.data.classification.multitask_dataset import (
        task_choice_dataset,
        task_sampling_probabilities,
    )
    from official_bert.tasks.classification import ClassifierOptions
    from official_bert.tasks.multitask import MultiTaskOptions, run_multitask
    from official_bert.tasks.registry import run_classifier

    tasks = args.tasks.split(",")
    data_dirs = [os.path.join(args.glue_dir, TASKS[task][0]) for task in tasks]
    sizes = [
        len(get_processor(TASKS[task][1], data_dir).get_train_examples())
        for task, data_dir in zip(tasks, data_dirs, strict=True)
    ]
    probabilities = task_sampling_probabilities(sizes, args.sampling_temperature)
    # The tasks run_multitask will draw (its sampler seed is --seed).
    draws = list(
        task_choice_dataset(probabilities, args.seed).take(args.total_steps).as_numpy_iterator()
    )
    single_steps = np.bincount(np.array(draws, np.int64), minlength=len(tasks)).tolist()
    model = minilm_dir()
    runs = []
    with tempfile.TemporaryDirectory() as output_dir:
        start = time.time()
        multi = run_multitask(
            MultiTaskOptions(
                **_shared_settings(args, model),
                output_dir=os.path.join(output_dir, "multitask"),
                task_names=[TASKS[task][1] for task in tasks],
                data_dirs=data_dirs,
                sampling_temperature=args.sampling_temperature,
                num_train_steps=args.total_steps,
            )
        )
        runs.append(
            {
                "run": "multi-task",
                "steps": args.total_steps,
                "wall_s": time.time() - start,
                "dev_metrics": multi["eval"],
            }
        )
        for task, data_dir, size, steps in zip(tasks, data_dirs, sizes, single_steps, strict=True):
            start = time.time()
            single = run_classifier(
                ClassifierOptions(
                    **_shared_settings(args, model),
                    output_dir=os.path.join(output_dir, task),
                    task_name=TASKS[task][1],
                    data_dir=data_dir,
                    # run_classifier trains int(size / batch * epochs) steps: exactly `steps`.
                    num_train_epochs=(steps + 0.5) * args.batch_size / size,
                    export_dir="",
                )
            )
            runs.append(
                {
                    "run": f"single-task {task}",
                    "steps": single["history"][-1][0],
                    "wall_s": time.time() - start,
                    "dev_metrics": {TASKS[task][1]: single["eval"]},
                }
            )
    if args.jsonl:
        with open(args.jsonl, "a", encoding="utf-8") as writer:
            for run in runs:
                writer.write(json.dumps({"bench": "multitask_glue", **vars(args), **run}) + "\n")

    print()
    print(
        f"{args.total_steps} steps in all, batch {args.batch_size}, seq {args.max_seq_length}, "
        f"lr {args.learning_rate}, T {args.sampling_temperature}, seed {args.seed}"
    )
    print()
    print("| task | train examples | p | steps (both sides) | metric | single-task | multi-task |")
    print("|---|---|---|---|---|---|---|")
    multi_metrics = runs[0]["dev_metrics"]
    for index, task in enumerate(tasks):
        name = TASKS[task][1]
        single_metrics = runs[1 + index]["dev_metrics"][name]
        for metric in TASKS[task][2]:
            print(
                f"| {name} | {sizes[index]} | {probabilities[index]:.3f} | "
                f"{runs[1 + index]['steps']} | {metric} | "
                f"{100 * single_metrics['eval_' + metric]:.2f} | "
                f"{100 * multi_metrics[name]['eval_' + metric]:.2f} |"
            )
    print()
    print(
        f"wall: multi-task {runs[0]['wall_s']:.0f} s, single-task "
        + ", ".join(
            f"{task} {run['wall_s']:.0f} s" for task, run in zip(tasks, runs[1:], strict=True)
        )
    )


if __name__ == "__main__":
    main()
