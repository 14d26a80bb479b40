"""The pre-training step's matrix-product floor: every MatMul of one float32 train step, timed
alone with TensorFlow's own kernels on this machine, summed.

A BERT train step on a CPU is mostly matrix products. This prints, per config, each product of
one step (the forward and both gradients of every dense layer, the attention's six batched
products per layer, the masked-LM projection onto the 30,522-word table and its two
gradients), how many the step runs, the median time of one alone (a `tf.function` of just that
product, `calls` timed calls after warm-up, outputs fetched) and its GFLOP/s, then the sum: the
time a step would take if everything but the products were free and each product ran as fast
as it does alone. Their FLOPs add up to the harness's `flops_per_step_exact_matmul` (3x the
forward products, ../shared/bench/bench_common.py), which the script checks. Then the optimizer
update alone (the runner's global-norm clip factor and AdamWeightDecay on the model's weights:
memory-bound, it adds to that floor rather than hiding under the products) and an n x n GEMM
(--gemm_n), so that the floor reads as a share of the machine's product rate. With `--jsonl`
(the output of train_step.py) it also prints our measured step and the fastest peer's beside
the floor: what is left for the non-product work, and the highest ratio over that peer that
these kernels allow. Figures are printed, never asserted.

  python3 bench/train_step_gemm_floor.py --configs small,base
  python3 bench/train_step_gemm_floor.py --jsonl /tmp/train_step.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

from encoder_latency import PROJECT_ROOT


def step_products(cfg: dict) -> list[tuple[str, int, tuple, tuple, bool, bool]]:
    """(name, count per step, x shape, y shape, transpose_x, transpose_y) of every product of one
    pre-training step: the forward product and its two gradients for each weight."""
    L, H, A, intermediate = cfg["L"], cfg["H"], cfg["A"], cfg["I"]
    B, S, P, V = cfg["B"], cfg["S"], cfg["P"], cfg["V"]
    tokens, D, predictions = B * S, H // A, B * P

    def dense(name, count, rows, fan_in, fan_out):
        return [  # y = x @ w; dx = dy @ w^T; dw = x^T @ dy
            (f"{name} forward", count, (rows, fan_in), (fan_in, fan_out), False, False),
            (f"{name} d_input", count, (rows, fan_out), (fan_in, fan_out), False, True),
            (f"{name} d_kernel", count, (rows, fan_in), (rows, fan_out), True, False),
        ]

    heads = (B, A, S, D)
    square = (B, A, S, S)
    return [
        *dense("attention q/k/v/output", 4 * L, tokens, H, H),
        *dense("intermediate", L, tokens, H, intermediate),
        *dense("output", L, tokens, intermediate, H),
        # scores = q k^T; d_q = d_scores k; d_k = d_scores^T q
        ("attention scores forward", L, heads, heads, False, True),
        ("attention scores d_query", L, square, heads, False, False),
        ("attention scores d_key", L, square, heads, True, False),
        # context = p v; d_p = d_context v^T; d_v = p^T d_context
        ("attention context forward", L, square, heads, False, False),
        ("attention context d_probs", L, heads, heads, False, True),
        ("attention context d_value", L, square, heads, True, False),
        *dense("pooler", 1, B, H, H),
        *dense("next-sentence classifier", 1, B, H, 2),
        *dense("masked-LM transform", 1, predictions, H, H),
        # logits = h table^T (the table is [vocab, hidden]); d_h = d_logits table;
        # d_table = d_logits^T h
        ("masked-LM logits forward", 1, (predictions, H), (V, H), False, True),
        ("masked-LM logits d_hidden", 1, (predictions, V), (V, H), False, False),
        ("masked-LM logits d_table", 1, (predictions, V), (predictions, H), True, False),
    ]


def product_flops(x_shape, y_shape, transpose_x, transpose_y) -> int:
    *batch, m, k = x_shape
    if transpose_x:
        m, k = k, m
    n = y_shape[-2] if transpose_y else y_shape[-1]
    return 2 * math.prod(batch) * m * k * n


def median_call_seconds(function, calls: int) -> float:
    """Median seconds of `calls` calls of `function` (a tf.function returning one tensor, fetched
    each call), after 2 untimed warm-up calls."""
    for _ in range(2):
        function().numpy()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        function().numpy()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_product(x_shape, y_shape, transpose_x, transpose_y, calls: int) -> float:
    """Median seconds of one product alone (inputs made once, output fetched each call)."""
    import tensorflow as tf

    x = tf.random.stateless_normal(x_shape, seed=[1, 2])
    y = tf.random.stateless_normal(y_shape, seed=[3, 4])

    @tf.function(autograph=False)
    def product():
        return tf.matmul(x, y, transpose_a=transpose_x, transpose_b=transpose_y)

    return median_call_seconds(product, calls)


def time_optimizer_update(cfg: dict, calls: int) -> tuple[float, int]:
    """Median seconds of one optimizer update of the pre-training model's weights, as the
    runner applies it (global-norm clip factor, then the library's AdamWeightDecay with the
    fast kernels on: one fused loop per weight), on fixed random gradients; and the number of
    weights. Memory-bound: every call reads the gradients twice (norm, update) and the weights
    and both moments once, and writes those three."""
    import tensorflow as tf
    from bench_hooks import build_encoder

    from official_bert.models import BertPretrainer
    from official_bert.training.optimization import create_optimizer
    from official_bert.training.runner import _global_norm_clip_factor

    pretrainer = BertPretrainer(build_encoder(cfg))
    pretrainer.build()
    variables = pretrainer.trainable_variables
    gradients = [
        tf.random.stateless_normal(v.shape, seed=[5, i]) * 1e-3 for i, v in enumerate(variables)
    ]
    optimizer = create_optimizer(1e-4, num_train_steps=1_000_000, num_warmup_steps=0)
    # As the Runner does: it computes the clip factor itself and clears Keras's own clipping,
    # which would otherwise take the global norm and rescale every gradient a second time.
    clip_norm, optimizer.global_clipnorm = optimizer.global_clipnorm, None
    optimizer.build(variables)

    @tf.function
    def update():
        scale = _global_norm_clip_factor(gradients, clip_norm)
        optimizer.apply_gradients(zip(gradients, variables, strict=True), gradient_scale=scale)
        return scale

    weights = sum(int(v.shape.num_elements()) for v in variables)
    return median_call_seconds(update, calls), weights


def measured_steps(jsonl: str, config: str) -> tuple[float | None, tuple[str, float] | None]:
    """Our float32 runner step and the fastest float32 peer's (median of their rounds' medians)
    from train_step.py's JSON lines, or None where absent."""
    ours, peers = [], {}
    with open(jsonl, encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if record.get("bench") != "train_step" or record.get("config") != config:
                continue
            if record.get("dtype") != "float32" or "step" not in record:
                continue
            name = record.get("peer", "")
            if name == "ours-fp32":
                ours.append(record["step"]["median_s"])
            elif not name.startswith("ours"):
                peers.setdefault(name, []).append(record["step"]["median_s"])
    fastest = min(
        ((name, statistics.median(steps)) for name, steps in peers.items()),
        key=lambda item: item[1],
        default=None,
    )
    return (statistics.median(ours) if ours else None), fastest


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default="small,base", help="comma list of small, base, tiny")
    parser.add_argument("--calls", type=int, default=9, help="timed calls per product")
    parser.add_argument("--jsonl", default=None, help="train_step.py's output to compare with")
    parser.add_argument(
        "--gemm_n", type=int, default=4096, help="also time an n x n fp32 GEMM (0: do not)"
    )
    parser.add_argument(
        "--peer_bench_dir",
        default=os.path.join(PROJECT_ROOT, "..", "shared", "bench"),
        help="folder of the harness's bench_common.py (the configs)",
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.normpath(args.peer_bench_dir))
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import bench_common

    import official_bert  # noqa: F401  (its CPU allocator choice, as in a real run)

    for config in args.configs.split(","):
        cfg = bench_common.get_config(config)
        print(
            f"\n## {config}: L{cfg['L']} H{cfg['H']} A{cfg['A']} I{cfg['I']}, batch {cfg['B']}, "
            f"seq {cfg['S']}, {cfg['P']} predictions, vocab {cfg['V']}; float32\n"
        )
        print("| product | x | y | per step | ms alone | GFLOP/s | ms per step |")
        print("|---|---|---|---|---|---|---|")
        products = step_products(cfg)
        total_flops = sum(count * product_flops(*shapes) for _, count, *shapes in products)
        if total_flops != bench_common.train_flops(cfg)[0]:
            raise RuntimeError(f"{config}: the product list misses some of the step's FLOPs")
        floor = 0.0
        for name, count, x, y, tx, ty in products:
            seconds = time_product(x, y, tx, ty, args.calls)
            floor += count * seconds
            gflops = product_flops(x, y, tx, ty) / seconds / 1e9
            x_text = "x".join(map(str, x)) + ("ᵀ" if tx else "")
            y_text = "x".join(map(str, y)) + ("ᵀ" if ty else "")
            print(
                f"| {name} | {x_text} | {y_text} | {count} | {seconds * 1e3:.1f} | "
                f"{gflops:.0f} | {count * seconds * 1e3:.0f} |"
            )
        print(f"\n{config}: product floor {floor:.3f} s per step ({total_flops / 1e9:.0f} GFLOP)")
        update, weights = time_optimizer_update(cfg, args.calls)
        print(
            f"{config}: optimizer update alone {update:.3f} s ({weights / 1e6:.1f}M weights, "
            f"clip factor + AdamWeightDecay); products + update {floor + update:.3f} s: "
            f"{total_flops / (floor + update) / 1e9:.0f} GFLOP/s of useful products at most"
        )
        if args.gemm_n:
            n = args.gemm_n
            gemm = product_flops((n, n), (n, n), False, False) / time_product(
                (n, n), (n, n), False, False, args.calls
            )
            print(
                f"{config}: fp32 GEMM n = {n} {gemm / 1e9:.0f} GFLOP/s; a step at the products' "
                f"floor plus the update would run at {total_flops / (floor + update) / gemm:.0%} "
                "of it"
            )
        if args.jsonl:
            ours, fastest = measured_steps(args.jsonl, config)
            if ours:
                print(
                    f"{config}: our measured step {ours:.3f} s: {ours - floor:.3f} s "
                    f"({(ours - floor) / ours:.0%}) outside the products at their alone speed"
                )
            if fastest:
                name, peer = fastest
                print(
                    f"{config}: fastest float32 peer {name} {peer:.3f} s: at the floor ours "
                    f"would be {peer / floor:.2f}x it"
                    + (f" (measured: {peer / ours:.2f}x)" if ours else "")
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
