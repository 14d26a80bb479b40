"""Pre-training train step: steps/s and sequences/s of ours beside the peers, one table.

Ours is one update through the training Runner's compiled loop, what run_pretraining.py runs
(`bench_hooks.runner_step_*`: OneDeviceStrategy, the original MLM + NSP loss, AdamWeightDecay,
global-norm clip 1.0, dropout on), timed by the peer harness's own `time_ours.py` so that ours
and the peers share configs, synthetic batches (`make_pretrain_batch`), warm-up, median and the
background-load record. Configs (../shared/bench/bench_common.py): small = L4 H256 A4 I1024,
batch 32; base = L12 H768 A12 I3072, batch 8; seq 128, 20 masked positions, vocab 30522.
Variants of ours: fp32, bf16 (mixed_bfloat16: float32 variables, bfloat16 compute), fp32-xla,
all with the fast kernels on (the scripts' default), and fp32-plain, bf16-plain with them off.
Peers (`--peers`, each its harness script under its venv, in float32): tfm, kh (custom loop),
kh-fit, orig, hf.

Each variant and peer runs each config in its own process (`--steps` timed steps after
`--warmup`), one after another; `--rounds N` repeats the whole sequence N times, ours first in
odd rounds and the peers first in even ones, so that a slow spell of this shared machine falls
on both sides.
Output: the JSON lines (appended to --jsonl, each with its round), then a markdown table and,
per config, each variant of ours over the fastest float32 peer: the ratio of the medians over
the rounds, and each round's own ratio. Figures are printed, never asserted.

  python3 bench/train_step.py --peers tfm,kh,orig                # the full comparison
  python3 bench/train_step.py --configs tiny --steps 2 --warmup 1 --quiet_wait 0   # smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from encoder_latency import (
    PROJECT_ROOT,
    add_harness_arguments,
    check_run_names,
    emit,
    log,
    peer_paths,
)

# name -> factory of bench_hooks, dtype policy.
OUR_VARIANTS = {
    "fp32": ("runner_step_fp32", "float32"),
    "bf16": ("runner_step_bf16", "mixed_bfloat16"),
    "fp32-xla": ("runner_step_fp32_xla", "float32"),
    # The same steps on the plain layers (official_bert.kernels off): the kernels' A/B.
    "fp32-plain": ("runner_step_fp32_plain", "float32"),
    "bf16-plain": ("runner_step_bf16_plain", "mixed_bfloat16"),
}
# name -> (venv, harness script, flags). The peers train in float32.
PEER_RUNS = {
    "tfm": ("tfm", "train_step_tfm.py", []),
    "kh": ("kh", "train_step_kh.py", ["--mode", "custom"]),
    "kh-fit": ("kh", "train_step_kh.py", ["--mode", "fit"]),
    "orig": ("orig", "train_step_orig.py", []),
    "hf": ("hf", "train_step_hf.py", ["--mlm", "gather"]),
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default="small,base", help="small, base, tiny (comma list)")
    parser.add_argument("--variants", default="fp32,bf16", help=f"of {','.join(OUR_VARIANTS)}")
    parser.add_argument("--peers", default="", help=f"comma list of {','.join(PEER_RUNS)}")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per config")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps (tracing)")
    parser.add_argument(
        "--rounds", type=int, default=1, help="repeat all runs, alternating which side goes first"
    )
    add_harness_arguments(parser)
    args = parser.parse_args(argv)
    args.variant_list = [v for v in args.variants.split(",") if v]
    args.peer_list = [p for p in args.peers.split(",") if p]
    check_run_names(parser, args.variant_list, OUR_VARIANTS, args.peer_list, PEER_RUNS)
    return args


def run_json_lines(name: str, command: list[str], env: dict) -> list[dict]:
    """Runs a harness script; returns its JSON lines. RuntimeError with its stderr tail if it
    fails."""
    log(f"== {time.strftime('%T')} {name}: {' '.join(command)}")
    process = subprocess.run(command, capture_output=True, text=True, env=env)
    if process.returncode != 0:
        raise RuntimeError(
            f"{name} failed (exit {process.returncode}): {' '.join(command)}\n"
            + process.stderr[-3000:]
        )
    return [json.loads(line) for line in process.stdout.splitlines() if line.startswith("{")]


def measure(args, round_number: int = 1) -> list[dict]:
    """One round: every config, each in a process of its own for every variant of ours and
    every peer (so that no run's figures depend on what its process ran before), ours first
    in odd rounds."""
    results = []
    for config in args.configs.split(","):
        results += measure_config(args, config, round_number)
    return results


def measure_config(args, config: str, round_number: int) -> list[dict]:
    """measure's runs for one config."""
    common = ["--config", config, "--steps", str(args.steps), "--warmup", str(args.warmup)]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", BENCH_QUIET_WAIT=str(args.quiet_wait))
    # We write every line to --jsonl ourselves.
    env.pop("BENCH_JSONL", None)
    bench_dir = os.path.dirname(os.path.abspath(__file__))
    time_ours = os.path.join(os.path.normpath(args.peer_bench_dir), "time_ours.py")
    ours_env = dict(env, PYTHONPATH=os.pathsep.join([bench_dir, PROJECT_ROOT]))
    runs = []  # (name, command, env, dtype)
    for variant in args.variant_list:
        factory, policy = OUR_VARIANTS[variant]
        command = [sys.executable, time_ours, "--bench", "train_step", *common]
        command += ["--factory", f"bench_hooks:{factory}", "--peer", f"ours-{variant}"]
        runs.append((f"ours-{variant}", command, ours_env, policy))
    peer_runs = []
    for name in args.peer_list:
        venv, script, flags = PEER_RUNS[name]
        python, script_path = peer_paths(args, name, venv, script)
        peer_runs.append((name, [python, script_path, *common, *flags], env, "float32"))
    runs = runs + peer_runs if round_number % 2 else peer_runs + runs
    results = []
    for name, command, run_env, dtype in runs:
        for result in run_json_lines(f"{name} (round {round_number})", command, run_env):
            result = dict(result, dtype=dtype, round=round_number)
            emit(result, args.jsonl)
            results.append(result)
    return results


def markdown_table(results: list[dict]) -> str:
    lines = [
        "| config | batch | peer | dtype | round | step median s (min) | steps/s | seq/s | bg cores |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for result in sorted(results, key=lambda r: (r["config"], r["peer"], r.get("round", 1))):
        step = result["step"]
        lines.append(
            f"| {result['config']} | {result['cfg']['B']} | {result['peer']} | "
            f"{result['dtype']} | {result.get('round', 1)} | "
            f"{step['median_s']:.3f} ({step['min_s']:.3f}) | "
            f"{1 / step['median_s']:.2f} | {result['seq_per_s']:.1f} | "
            f"{step.get('background_cores_mean', float('nan')):.2f} |"
        )
    lines.append("")
    rounds = sorted({r.get("round", 1) for r in results})
    for config in sorted({r["config"] for r in results}):
        rows = [r for r in results if r["config"] == config]
        by_peer: dict[str, dict[int, float]] = {}
        for r in rows:
            by_peer.setdefault(r["peer"], {})[r.get("round", 1)] = r["seq_per_s"]
        peers = {p: v for p, v in by_peer.items() if not p.startswith("ours")}
        if not peers:
            continue
        fastest = max(peers, key=lambda p: statistics.median(peers[p].values()))
        for ours, figures in by_peer.items():
            if not ours.startswith("ours"):
                continue
            ratio = statistics.median(figures.values()) / statistics.median(peers[fastest].values())
            line = f"{config}: {ours} / {fastest} (fastest peer) = {ratio:.2f}x sequences/s"
            if len(rounds) > 1:
                each = [
                    f"{figures[n] / peers[fastest][n]:.2f}"
                    for n in rounds
                    if n in figures and n in peers[fastest]
                ]
                line += f" (medians over {len(rounds)} rounds; each round: {', '.join(each)})"
            lines.append(line)
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    results = [r for n in range(1, args.rounds + 1) for r in measure(args, n)]
    log(
        f"median of all background loads: "
        f"{statistics.median(r['step'].get('background_cores_mean', 0) for r in results):.2f}"
    )
    print(markdown_table(results))


if __name__ == "__main__":
    main()
