"""Encoder forward latency of our BertEncoder, optionally side by side with the peers.

Measures one eval-mode forward (sequence_output + pooled_output fetched to the host) of the
base encoder (L=12, H=768, A=12, I=3072, vocab 30522), seq 128, random init, on the same
deterministic batch as the peer harness of ../shared/bench (`make_infer_batch`: random ids,
no padding, segment 0), in fp32 and mixed_bfloat16, optionally with XLA. Warm-up calls
(tracing, XLA compilation) are not timed; each timed call ends with a host sync.

With `--peers tfm,kh,orig,hf` the peers' own scripts (`infer_<peer>.py` of the harness, each
under its venv `$PEERS_DIR/venv-<peer>`, built by `setup_peers.sh`) run as subprocesses in the
same run, with the same batches and warm-up, so that one table holds ours and the peers
measured on the same machine. `--rounds N` alternates ours and the peers N times; the table
takes the median over rounds of each row's median latency.

Output: one JSON line per measurement on stdout (the peers' fields: bench="infer", peer,
config, batch, seq, latency {median_s, min_s, ...}, latency_ms_median, seq_per_s,
gflops_exact_matmul, dtype, background_cores_mean), appended to --jsonl when given, then a
markdown table. Progress goes to stderr. Figures are printed, never asserted.

  python3 bench/encoder_latency.py                               # ours: fp32, bf16
  python3 bench/encoder_latency.py --xla --peers tfm,kh --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

# The peers' names for the configs, from ../shared/bench/bench_common.py.
CONFIGS = {
    "base": dict(L=12, H=768, A=12, I=3072, V=30522),
    "small": dict(L=4, H=256, A=4, I=1024, V=30522),
    "tiny": dict(L=2, H=128, A=2, I=512, V=30522),
}
# Our variants: name -> (factory in bench_hooks, dtype policy, XLA).
OUR_VARIANTS = {
    "fp32": ("encoder_forward_fp32", "float32", False),
    "bf16": ("encoder_forward_bf16", "mixed_bfloat16", False),
    "fp32-xla": ("encoder_forward_fp32_xla", "float32", True),
    "bf16-xla": ("encoder_forward_bf16_xla", "mixed_bfloat16", True),
    # FusedInferenceEncoder (official_bert.kernels): the eval forward as fused products, its
    # weights stored in float32 or bfloat16 (no per-call cast).
    "fp32-fused": ("encoder_forward_fp32_fused", "float32", False),
    "bf16-fused": ("encoder_forward_bf16_fused", "bfloat16", False),
    # The same forwards on the plain layers (official_bert.kernels off): the kernels' A/B.
    "fp32-plain": ("encoder_forward_fp32_plain", "float32", False),
    "bf16-plain": ("encoder_forward_bf16_plain", "mixed_bfloat16", False),
}
# Peer runs: name -> (venv, script, extra flags). The peers compute in float32.
PEER_RUNS = {
    "tfm": ("tfm", "infer_tfm.py", []),
    "tfm-xla": ("tfm", "infer_tfm.py", ["--xla"]),
    "kh": ("kh", "infer_kh.py", ["--mode", "call"]),
    "kh-xla": ("kh", "infer_kh.py", ["--mode", "call", "--jit", "true"]),
    "orig": ("orig", "infer_orig.py", []),
    "orig-xla": ("orig", "infer_orig.py", ["--xla"]),
    "hf": ("hf", "infer_hf.py", []),
}
PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def add_harness_arguments(parser: argparse.ArgumentParser) -> None:
    """--peers_dir, --peer_bench_dir, --quiet_wait, --jsonl: where the peer harness and its
    venvs are, how long to wait for a quiet machine, where the JSON lines go."""
    parser.add_argument(
        "--peers_dir",
        default=os.environ.get("PEERS_DIR") or os.path.expanduser("~/.cache/bert_peers"),
        help="where setup_peers.sh put the venvs ($PEERS_DIR)",
    )
    parser.add_argument(
        "--peer_bench_dir",
        default=os.path.join(PROJECT_ROOT, "..", "shared", "bench"),
        help="folder of the harness's scripts (infer_*.py, train_step_*.py, time_ours.py)",
    )
    parser.add_argument(
        "--quiet_wait",
        type=float,
        default=float(os.environ.get("BENCH_QUIET_WAIT", "30")),
        help="seconds to wait for other processes to drop below 0.25 cores before timing",
    )
    parser.add_argument("--jsonl", default=os.environ.get("BENCH_JSONL"), help="append lines here")


def check_run_names(parser, variants, known_variants, peers, known_peers) -> None:
    """Exits with a usage error naming an unknown --variants or --peers entry."""
    for flag, names, known in (
        ("variants", variants, known_variants),
        ("peers", peers, known_peers),
    ):
        for name in names:
            if name not in known:
                parser.error(f"--{flag}: unknown {name!r}; expected one of {list(known)}")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="base", choices=sorted(CONFIGS))
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument(
        "--batches", default="1:30,32:5", help="comma list of batch:timed_calls (as the peers)"
    )
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls per batch")
    parser.add_argument(
        "--variants",
        default="fp32,bf16",
        help=f"our variants, comma list of {','.join(OUR_VARIANTS)}; '' for none",
    )
    parser.add_argument("--xla", action="store_true", help="add fp32-xla and bf16-xla")
    parser.add_argument(
        "--peers",
        default="",
        help=f"peer runs, comma list of {','.join(PEER_RUNS)} (and 'xla' = the -xla of each)",
    )
    add_harness_arguments(parser)
    parser.add_argument("--rounds", type=int, default=1, help="alternate ours and peers N times")
    parser.add_argument(
        "--frozen_weights",
        action="store_true",
        help="run ours with oneDNN's frozen-weight products (TF_ONEDNN_ASSUME_FROZEN_WEIGHTS, "
        "official_bert.kernels.frozen_weights), named ours-<variant>-frozen; the peers run "
        "without it, as published",
    )
    parser.add_argument(
        "--summarize",
        nargs="+",
        metavar="JSONL",
        help="measure nothing: print the table of these files' lines (several runs pool rounds)",
    )
    args = parser.parse_args(argv)
    args.variant_list = [v for v in args.variants.split(",") if v]
    if args.xla:
        args.variant_list += [v + "-xla" for v in args.variant_list if not v.endswith("-xla")]
    args.peer_list = [p for p in args.peers.split(",") if p]
    if "xla" in args.peer_list:
        args.peer_list.remove("xla")
        args.peer_list += [p + "-xla" for p in args.peer_list if p + "-xla" in PEER_RUNS]
    check_run_names(parser, args.variant_list, OUR_VARIANTS, args.peer_list, PEER_RUNS)
    args.batch_list = []
    for item in args.batches.split(","):
        batch, _, calls = item.partition(":")
        args.batch_list.append((int(batch), int(calls or 10)))
    return args


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


# === Inputs and FLOPs (as ../shared/bench/bench_common.py) ===
def make_infer_batch(batch: int, seq: int, seed: int = 1, vocab: int = 30522) -> dict:
    """The peers' inference batch: int32 [batch, seq] ids ([CLS] ... [SEP]), mask 1, types 0."""
    rng = np.random.RandomState(seed)
    ids = rng.randint(1000, vocab, size=(batch, seq)).astype(np.int32)
    ids[:, 0] = 101
    ids[:, -1] = 102
    return dict(input_ids=ids, token_type_ids=np.zeros_like(ids), input_mask=np.ones_like(ids))


def encoder_matmul_flops(cfg: dict, batch: int, seq: int) -> int:
    """Forward matmul FLOPs (2*m*n*k) of the encoder and pooler: QKV, scores, context,
    attention output, FFN in and out; gathers, softmax, LayerNorm, GELU and biases are not
    counted."""
    hidden, intermediate, tokens = cfg["H"], cfg["I"], batch * seq
    per_layer = 2 * tokens * hidden * 3 * hidden
    per_layer += 2 * 2 * batch * seq * seq * hidden
    per_layer += 2 * tokens * hidden * hidden
    per_layer += 2 * 2 * tokens * hidden * intermediate
    return cfg["L"] * per_layer + 2 * batch * hidden * hidden


# === Timing ===
def busy_cpu_seconds() -> float | None:
    """System-wide busy CPU seconds so far (all cores), from /proc/stat."""
    try:
        with open("/proc/stat") as stat:
            ticks = [int(x) for x in stat.readline().split()[1:9]]
    except OSError:
        return None
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def background_cores(seconds: float = 0.5) -> float | None:
    """Cores' worth of CPU that OTHER processes used over the next `seconds`."""
    busy0, own0, t0 = busy_cpu_seconds(), time.process_time(), time.perf_counter()
    time.sleep(seconds)
    busy1, own1, t1 = busy_cpu_seconds(), time.process_time(), time.perf_counter()
    if busy0 is None:
        return None
    return max(0.0, (busy1 - busy0) - (own1 - own0)) / (t1 - t0)


def wait_quiet(max_wait: float, threshold: float = 0.25) -> float | None:
    """Waits up to max_wait s for the background load to drop below threshold; returns it."""
    deadline = time.time() + max_wait
    load = background_cores()
    while load is not None and load > threshold and time.time() < deadline:
        time.sleep(1.5)
        load = background_cores()
    return load


def fetch(outputs: dict) -> None:
    """Host sync: copies every output to numpy, as the peers' scripts do."""
    for value in outputs.values():
        value.numpy()


def time_forward(forward, warmup: int, calls: int, quiet_wait: float) -> dict:
    """Times `calls` forwards after `warmup` untimed ones; returns the latency summary."""
    for _ in range(warmup):
        fetch(forward())
    load_before = wait_quiet(quiet_wait)
    seconds, loads = [], []
    for _ in range(calls):
        busy0, own0 = busy_cpu_seconds(), time.process_time()
        t0 = time.perf_counter()
        fetch(forward())
        elapsed = time.perf_counter() - t0
        busy1, own1 = busy_cpu_seconds(), time.process_time()
        seconds.append(elapsed)
        if busy0 is not None:
            loads.append(max(0.0, (busy1 - busy0) - (own1 - own0)) / elapsed)
    ordered = sorted(seconds)
    summary = dict(
        median_s=statistics.median(ordered),
        min_s=ordered[0],
        max_s=ordered[-1],
        p10_s=ordered[int(0.1 * (len(ordered) - 1))],
        p90_s=ordered[int(0.9 * (len(ordered) - 1))],
        n=len(ordered),
        background_cores_before=load_before,
    )
    if loads:
        # /proc/stat counts 10 ms ticks: per-call loads of short calls are coarse.
        summary["background_cores_mean"] = sum(
            load * elapsed for load, elapsed in zip(loads, seconds, strict=True)
        ) / sum(seconds)
        # As the harness: the calls during which other processes used < 0.15 cores.
        quiet = [t for t, load in zip(seconds, loads, strict=True) if load < 0.15]
        summary["n_quiet"] = len(quiet)
        summary["median_s_quiet"] = statistics.median(quiet) if len(quiet) >= 3 else None
    return summary


# === Results ===
def emit(result: dict, jsonl: str | None) -> None:
    result.setdefault(
        "machine",
        dict(python=platform.python_version(), cpus=os.cpu_count(), host=platform.node()),
    )
    result.setdefault(
        "process_max_rss_mb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    )
    result.setdefault("timestamp", time.strftime("%Y-%m-%dT%H:%M:%S"))
    line = json.dumps(result, sort_keys=True, default=str)
    print(line, flush=True)
    if jsonl:
        with open(jsonl, "a") as out:
            out.write(line + "\n")


def measure_ours(args, round_index: int) -> list[dict]:
    """Times each of our variants at each batch size in this process."""
    import bench_hooks
    import keras
    import tensorflow as tf

    cfg = dict(CONFIGS[args.config], name=args.config)
    framework = f"official_bert, keras {keras.__version__}, tensorflow {tf.__version__}"
    results = []
    for variant in args.variant_list:
        factory_name, policy, xla = OUR_VARIANTS[variant]
        factory = getattr(bench_hooks, factory_name)
        for batch, calls in args.batch_list:
            log(f"== {time.strftime('%T')} ours-{variant} batch {batch}")
            forward = factory(cfg, make_infer_batch(batch, args.seq))
            latency = time_forward(forward, args.warmup, calls, args.quiet_wait)
            flops = encoder_matmul_flops(cfg, batch, args.seq)
            median = latency["median_s"]
            result = dict(
                bench="infer",
                peer=f"ours-{variant}{'-frozen' if args.frozen_weights else ''}",
                config=args.config,
                batch=batch,
                seq=args.seq,
                latency=latency,
                latency_ms_median=median * 1e3,
                seq_per_s=batch / median,
                forward_matmul_flops=flops,
                gflops_exact_matmul=flops / median / 1e9,
                dtype=policy,
                output_dtypes=bench_hooks.output_dtypes(forward()),
                xla=xla,
                framework=framework,
                factory=f"bench_hooks:{factory_name}",
                round=round_index,
            )
            emit(result, args.jsonl)
            results.append(result)
            # Frees this variant's weights before the next one is built.
            del forward
            keras.backend.clear_session()
    return results


def check_peer(args, name: str) -> tuple[str, str, list[str]]:
    """(interpreter, script, flags) of a peer run; FileNotFoundError naming what is missing."""
    venv, script, flags = PEER_RUNS[name]
    return (*peer_paths(args, name, venv, script), flags)


def peer_paths(args, name: str, venv: str, script: str) -> tuple[str, str]:
    """(interpreter of $PEERS_DIR/venv-<venv>, path of the harness's script) for peer run
    `name`; FileNotFoundError naming what is missing and how to build it."""
    python = os.path.join(args.peers_dir, f"venv-{venv}", "bin", "python")
    script_path = os.path.join(os.path.normpath(args.peer_bench_dir), script)
    if not os.path.exists(python):
        raise FileNotFoundError(
            f"peer {name}: no interpreter at {python}; build it with "
            f"`bash {os.path.normpath(args.peer_bench_dir)}/setup_peers.sh {venv}` "
            "or set --peers_dir / $PEERS_DIR"
        )
    if not os.path.exists(script_path):
        raise FileNotFoundError(f"peer {name}: no {script_path}; set --peer_bench_dir")
    return python, script_path


def measure_peer(args, name: str, round_index: int) -> list[dict]:
    """Runs one peer's infer script under its venv; returns its JSON lines.

    Raises RuntimeError with the peer's stderr tail if it fails.
    """
    python, script_path, flags = check_peer(args, name)
    command = [python, script_path, "--config", args.config, "--seq", str(args.seq)]
    command += ["--batches", args.batches, "--warmup", str(args.warmup), *flags]
    log(f"== {time.strftime('%T')} peer {name}: {' '.join(command)}")
    # The peers append to $BENCH_JSONL themselves; we write their lines (with round) instead.
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", BENCH_QUIET_WAIT=str(args.quiet_wait))
    env.pop("BENCH_JSONL", None)
    if args.frozen_weights:  # ours only
        from official_bert.kernels.frozen_weights import FROZEN_WEIGHTS_VARIABLE

        env.pop(FROZEN_WEIGHTS_VARIABLE, None)
    process = subprocess.run(command, capture_output=True, text=True, env=env)
    if process.returncode != 0:
        raise RuntimeError(
            f"peer {name} failed (exit {process.returncode}): {' '.join(command)}\n"
            + process.stderr[-3000:]
        )
    results = []
    for line in process.stdout.splitlines():
        if not line.startswith("{"):
            continue
        result = json.loads(line)
        result.setdefault("dtype", "float32")
        result["round"] = round_index
        emit(result, args.jsonl)
        results.append(result)
    return results


def markdown_table(results: list[dict]) -> str:
    """One row per (batch, peer): median over rounds of the median latency, min of the mins,
    the median of the quiet calls of all rounds (other processes < 0.15 cores; needs 3), and
    the highest background load (cores) seen during a round's timed calls."""
    rows = {}
    for result in results:
        rows.setdefault((result["batch"], result["peer"]), []).append(result)
    lines = [
        "| batch | peer | dtype | latency median ms (min) | quiet median ms (calls) | seq/s "
        "| GFLOP/s | bg cores (max) | rounds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    # By batch, then in the order measured (ours first).
    for (batch, peer), group in sorted(rows.items(), key=lambda item: item[0][0]):
        median = statistics.median(r["latency"]["median_s"] for r in group)
        minimum = min(r["latency"]["min_s"] for r in group)
        loads = [r["latency"].get("background_cores_mean") for r in group]
        loads = [load for load in loads if load is not None]
        load = f"{max(loads):.2f}" if loads else "-"
        quiet_calls = sum(r["latency"].get("n_quiet") or 0 for r in group)
        quiet_medians = [r["latency"].get("median_s_quiet") for r in group]
        quiet_medians = [q for q in quiet_medians if q is not None]
        quiet = (
            f"{statistics.median(quiet_medians) * 1e3:.1f} ({quiet_calls})"
            if quiet_medians
            else "-"
        )
        flops = group[0]["forward_matmul_flops"]
        lines.append(
            f"| {batch} | {peer} | {group[0].get('dtype', 'float32')} | "
            f"{median * 1e3:.1f} ({minimum * 1e3:.1f}) | {quiet} | {batch / median:.1f} | "
            f"{flops / median / 1e9:.0f} | {load} | {len(group)} |"
        )
    return "\n".join(lines)


def read_jsonl(paths: list[str]) -> list[dict]:
    """The infer lines of JSONL files written by this script (or by the peers)."""
    results = []
    for path in paths:
        with open(path) as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    result = json.loads(line)
                except json.JSONDecodeError as error:
                    raise ValueError(f"{path}:{number}: not a JSON line ({error})") from error
                if result.get("bench") == "infer":
                    results.append(result)
    return results


def main(argv=None):
    args = parse_args(argv)
    if args.summarize:
        print(markdown_table(read_jsonl(args.summarize)))
        return
    # bench_hooks sits next to this script; the official_bert it times is this checkout's (not
    # whichever one the environment has installed), as train_step.py's PYTHONPATH does.
    sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), PROJECT_ROOT]
    if args.frozen_weights:
        from official_bert.kernels.frozen_weights import use_frozen_weight_products

        use_frozen_weight_products(True)  # before this process runs any product
    for name in args.peer_list:
        check_peer(args, name)
    results = []
    for round_index in range(args.rounds):
        if args.variant_list:
            results += measure_ours(args, round_index)
        for name in args.peer_list:
            results += measure_peer(args, name, round_index)
    print()
    print(markdown_table(results))


if __name__ == "__main__":
    main()
