"""The encoder's feed-forward products at few rows in three layouts, and its LayerNorm in three
forms: what bounds float32 inference at batch 1.

At batch 1 (128 tokens) a BERT-Base forward is mostly products with 128 rows, where TensorFlow's
oneDNN kernels run below their large-GEMM rate. This times, in one `tf.function` each, a chain
of `--pairs` feed-forward pairs [rows, H] -> [rows, I] -> [rows, H] with distinct random
weights:

- rows: activations [rows, H], kernels [in, out], `x @ kernel` with bias_add + GELU and bias_add
  + residual add after each product, the form FusedInferenceEncoder uses in float32 (the graph
  rewriter fuses those into the product);
- rows_transposed: the same with kernels stored [out, in] and `x @ kernel^T` (the bfloat16
  encoder's layout);
- hidden_major: activations [H, rows], `kernel^T @ x` with the bias, GELU and residual as their
  own ops (the rewriter fuses a bias only along the last axis);

each also bare (no bias, GELU, residual), which isolates the products. Then `--norms` LayerNorms
of [rows, H] chained: one oneDNN kernel (FusedInferenceEncoder's form from 64k elements), the
written-out ops (its form below that), and each LayerNorm as its own XLA cluster. Every row is
the median over `--rounds` rounds of the median of `--calls` calls; the chains' outputs are
compared with the rows form. Figures are printed, never asserted.

  python3 bench/product_layouts.py                       # BERT-Base sizes, float32, 128 rows
  python3 bench/product_layouts.py --rows 32,128 --hidden 384 --intermediate 1536
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys

from cpu_allocator_page_faults import cpu_description
from encoder_latency import PROJECT_ROOT
from train_step_gemm_floor import median_call_seconds


def feed_forward_chains(hidden: int, intermediate: int, pairs: int, dtype) -> dict:
    """name -> (tf.function of the activations, True when it takes them [H, rows])."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)

    def variable(value):
        return tf.Variable(value.astype(np.float32), dtype=dtype, trainable=False)

    weights = []
    for _ in range(pairs):
        weights.append(
            [
                rng.standard_normal((hidden, intermediate)) * 0.02,
                rng.standard_normal(intermediate) * 0.02,
                rng.standard_normal((intermediate, hidden)) * 0.02,
                rng.standard_normal(hidden) * 0.02,
            ]
        )
    as_given = [[variable(w) for w in pair] for pair in weights]
    # [out, in] kernels; biases as columns for the hidden-major form.
    transposed = [
        [variable(w1.T), variable(b1), variable(w2.T), variable(b2)] for w1, b1, w2, b2 in weights
    ]
    columns = [
        [variable(w1.T), variable(b1[:, None]), variable(w2.T), variable(b2[:, None])]
        for w1, b1, w2, b2 in weights
    ]

    def gelu(x):
        return tf.nn.gelu(x, approximate=True)

    @tf.function(autograph=False)
    def rows(x):
        for w1, b1, w2, b2 in as_given:
            x = tf.nn.bias_add(tf.matmul(gelu(tf.nn.bias_add(tf.matmul(x, w1), b1)), w2), b2) + x
        return x

    @tf.function(autograph=False)
    def rows_transposed(x):
        for w1, b1, w2, b2 in transposed:
            inner = gelu(tf.nn.bias_add(tf.matmul(x, w1, transpose_b=True), b1))
            x = tf.nn.bias_add(tf.matmul(inner, w2, transpose_b=True), b2) + x
        return x

    @tf.function(autograph=False)
    def hidden_major(x):
        for w1, b1, w2, b2 in columns:
            x = tf.matmul(w2, gelu(tf.matmul(w1, x) + b1)) + b2 + x
        return x

    @tf.function(autograph=False)
    def rows_bare(x):
        for w1, _, w2, _ in as_given:
            x = tf.matmul(tf.matmul(x, w1), w2)
        return x

    @tf.function(autograph=False)
    def rows_transposed_bare(x):
        for w1, _, w2, _ in transposed:
            x = tf.matmul(tf.matmul(x, w1, transpose_b=True), w2, transpose_b=True)
        return x

    @tf.function(autograph=False)
    def hidden_major_bare(x):
        for w1, _, w2, _ in columns:
            x = tf.matmul(w2, tf.matmul(w1, x))
        return x

    return {
        "rows": (rows, False),
        "rows_transposed": (rows_transposed, False),
        "hidden_major": (hidden_major, True),
        "rows bare": (rows_bare, False),
        "rows_transposed bare": (rows_transposed_bare, False),
        "hidden_major bare": (hidden_major_bare, True),
    }


def layer_norm_chains(hidden: int, norms: int) -> dict:
    """name -> tf.function chaining `norms` float32 LayerNorms of [rows, hidden] (each input
    scaled, so that none is folded away)."""
    import numpy as np
    import tensorflow as tf

    from official_bert.kernels.inference_encoder import _layer_norm

    gamma = tf.Variable(np.ones(hidden, np.float32), trainable=False)
    beta = tf.Variable(np.zeros(hidden, np.float32), trainable=False)

    def chain(fused_from):
        @tf.function(autograph=False)
        def normalize(x):
            for _ in range(norms):
                x = _layer_norm(x * 1.01, gamma, beta, 1e-12, fused_from)
            return x

        return normalize

    @tf.function(jit_compile=True, autograph=False)
    def one_in_xla(x):
        return _layer_norm(x, gamma, beta, 1e-12, None)

    @tf.function(autograph=False)
    def xla_each(x):
        for _ in range(norms):
            x = one_in_xla(x * 1.01)
        return x

    return {"one oneDNN kernel": chain(0), "written out": chain(None), "XLA each": xla_each}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="128", help="comma list of row counts (tokens)")
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--intermediate", type=int, default=3072)
    parser.add_argument("--pairs", type=int, default=4, help="feed-forward pairs per chain")
    parser.add_argument("--norms", type=int, default=24, help="LayerNorms per chain (0: none)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    sys.path.insert(0, PROJECT_ROOT)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    import official_bert  # noqa: F401  (its CPU allocator choice, as in a real run)

    dtype = tf.as_dtype(args.dtype)
    print(f"# {cpu_description()}; TensorFlow {tf.__version__}; {args.dtype}")
    chains = feed_forward_chains(args.hidden, args.intermediate, args.pairs, dtype)
    norms = layer_norm_chains(args.hidden, args.norms) if args.norms else {}
    print("\n| chain | rows | ms (rounds) | GFLOP/s of products | max diff from rows |")
    print("|---|---|---|---|---|")
    for rows in [int(r) for r in args.rows.split(",")]:
        x = tf.constant(np.random.default_rng(1).standard_normal((rows, args.hidden)), dtype)
        flops = args.pairs * 2 * 2 * rows * args.hidden * args.intermediate
        rounds = {name: [] for name in chains}
        inputs = {
            name: tf.transpose(x) if hidden_major else x
            for name, (_, hidden_major) in chains.items()
        }
        for _ in range(args.rounds):  # forms alternate within each round
            for name, (function, _) in chains.items():
                call = functools.partial(function, inputs[name])
                rounds[name].append(median_call_seconds(call, args.calls))
        outputs = {}  # [rows, H] float32, whatever the form's layout
        for name, (function, hidden_major) in chains.items():
            output = function(inputs[name])
            outputs[name] = tf.cast(tf.transpose(output) if hidden_major else output, tf.float32)
        for name in chains:
            reference = outputs["rows bare" if name.endswith("bare") else "rows"]
            difference = float(tf.reduce_max(tf.abs(outputs[name] - reference)))
            seconds = statistics.median(rounds[name])
            print(
                f"| {name} | {rows} | {seconds * 1e3:.2f} "
                f"({', '.join(f'{t * 1e3:.2f}' for t in rounds[name])}) | "
                f"{flops / seconds / 1e9:.0f} | {difference:.1e} |"
            )
        if norms:
            x32 = tf.cast(x, tf.float32)
            times = {name: [] for name in norms}
            for _ in range(args.rounds):
                for name, function in norms.items():
                    times[name].append(
                        median_call_seconds(functools.partial(function, x32), args.calls)
                    )
            for name in norms:
                seconds = statistics.median(times[name])
                print(
                    f"| {args.norms} LayerNorms, {name} | {rows} | {seconds * 1e3:.2f} "
                    f"({', '.join(f'{t * 1e3:.2f}' for t in times[name])}) | | |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
