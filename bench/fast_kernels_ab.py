"""The fast kernels (official_bert.kernels) on against off, in one process, timed interleaved.

Builds the same model twice from bench_hooks' factories, once with the speed paths on and once
plain, traces both, then times their calls alternately (on, off, off, on, ...) so that the
background load of this shared machine falls on both sides alike. Two benches: `train_step`
(one update through the Runner's compiled loop, `runner_step_*`) and `infer` (one eval-mode
encoder forward, `encoder_forward_*`), each on a harness config (../shared/bench). Both sides
share the process's host allocator (the BFC one, asked for by the first, fast, build); its own
A/B is bench/cpu_allocator_page_faults.py. Prints a markdown table of the medians and the
median of the paired ratios (plain / fast: above 1 means the kernels are faster); never asserts.

  python bench/fast_kernels_ab.py --bench train_step --config small --pairs 10
  python bench/fast_kernels_ab.py --bench infer --config small --batch 32 --pairs 10

`--plain last_layer` (train_step only) makes the plain side the fast one but for the pre-training
model's last layer, run whole instead of at [CLS] and the masked positions alone
(BertPretrainer's last_layer_at_predictions_only): that one change's own A/B.

  python bench/fast_kernels_ab.py --bench train_step --config base --plain last_layer --pairs 8
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", choices=["train_step", "infer"], default="train_step")
    parser.add_argument("--config", default="small", help="small, base or tiny")
    parser.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--batch", type=int, default=32, help="infer only (train: the config's)")
    parser.add_argument(
        "--plain",
        choices=["kernels", "last_layer"],
        default="kernels",
        help="the plain side: every kernel off, or (train_step) only the whole last layer",
    )
    parser.add_argument("--pairs", type=int, default=10, help="timed (fast, plain) pairs")
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls per side")
    parser.add_argument(
        "--peer_bench_dir",
        default=os.path.join(PROJECT_ROOT, "..", "shared", "bench"),
        help="the peer harness (bench_common.py)",
    )
    return parser.parse_args(argv)


def build_sides(args) -> dict:
    """{"fast": call, "plain": call}, each traced once, the fast side built first."""
    import bench_common
    import bench_hooks

    cfg = dict(bench_common.CONFIGS[args.config], name=args.config)
    kind = "runner_step" if args.bench == "train_step" else "encoder_forward"
    if args.bench == "train_step":
        batch = bench_common.make_pretrain_batch(cfg)
    else:
        batch = bench_common.make_infer_batch(args.batch, cfg["S"])
    if args.plain == "last_layer":
        if args.bench != "train_step":
            raise SystemExit("--plain last_layer is a train_step A/B")
        dtype = bench_hooks.FP32 if args.dtype == "fp32" else bench_hooks.BF16
        factories = {
            side: lambda cfg, batch, at_predictions=at_predictions: bench_hooks.make_runner_step(
                cfg, batch, dtype, last_layer_at_predictions_only=at_predictions
            )
            for side, at_predictions in (("fast", True), ("plain", False))
        }
    else:
        factories = {
            side: getattr(bench_hooks, f"{kind}_{args.dtype}{suffix}")
            for side, suffix in (("fast", ""), ("plain", "_plain"))
        }
    sides = {}
    for side, factory in factories.items():
        call = factory(cfg, batch)
        for _ in range(args.warmup):
            sync(call())  # traces now: the loss reads the switch at its trace
        sides[side] = call
    return sides


def sync(result) -> None:
    values = result.values() if isinstance(result, dict) else [result]
    for value in values:
        value.numpy()


def timed(call) -> float:
    start = time.perf_counter()
    sync(call())
    return time.perf_counter() - start


def main(argv=None):
    args = parse_args(argv)
    sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), PROJECT_ROOT, args.peer_bench_dir]
    sides = build_sides(args)
    times = {"fast": [], "plain": []}
    for pair in range(args.pairs):
        order = ("fast", "plain") if pair % 2 == 0 else ("plain", "fast")
        for side in order:
            times[side].append(timed(sides[side]))
    ratios = [plain / fast for fast, plain in zip(times["fast"], times["plain"], strict=True)]
    batch = "config" if args.bench == "train_step" else args.batch
    print(
        "| bench | plain side | config | dtype | batch | pairs | fast ms | plain ms | plain / fast |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {args.bench} | {args.plain} | {args.config} | {args.dtype} | {batch} | {args.pairs} "
        f"| {1000 * statistics.median(times['fast']):.1f} "
        f"| {1000 * statistics.median(times['plain']):.1f} "
        f"| {statistics.median(ratios):.3f} |"
    )


if __name__ == "__main__":
    main()
