"""FusedInferenceEncoder with its feed-forward whole or in two halves, side by side in one process.

`split_feed_forward=True` runs each layer's feed-forward as two independent halves of its
intermediate units (official_bert/kernels/inference_encoder.py); this times one forward of the
same random-initialised encoder both ways, in a tf.function whose batch and length are unknown
when traced (as in a serving signature), alternating the two forms over --rounds rounds, and
prints the median of each round's median latency (train_step_gemm_floor.median_call_seconds).
Figures are printed, never asserted.

  python bench/feed_forward_halves.py                        # MiniLM sizes, float32
  python bench/feed_forward_halves.py --dtype bfloat16 --config base
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_hooks  # noqa: E402
import encoder_latency  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from train_step_gemm_floor import median_call_seconds  # noqa: E402

from official_bert.kernels import FusedInferenceEncoder  # noqa: E402

# all-MiniLM-L6-v2's sizes and BERT-Base's, in the peer harness's names (bench_hooks).
CONFIGS = {
    "minilm": dict(L=6, H=384, A=12, I=1536, V=30522),
    "base": encoder_latency.CONFIGS["base"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", choices=sorted(CONFIGS), default="minilm")
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    parser.add_argument("--shapes", default="1x12,1x32,1x128,32x24", help="batchxseq,...")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    encoder = bench_hooks.build_encoder(CONFIGS[args.config])
    names = ("input_word_ids", "input_mask", "input_type_ids")
    spec = {name: tf.TensorSpec([None, None], tf.int32) for name in names}
    # One graph per form for every shape (batch and length unknown when traced).
    forwards = {}
    for split in (False, True):
        form = FusedInferenceEncoder(encoder, dtype=args.dtype, split_feed_forward=split)
        forwards[split] = tf.function(
            lambda x, form=form: form(x)["sequence_output"], input_signature=[spec]
        )
    rng = np.random.default_rng(0)
    print(f"| {args.config}, {args.dtype} | whole ms | halves ms | whole / halves |")
    print("|---|---|---|---|")
    for shape in args.shapes.split(","):
        batch, seq = (int(n) for n in shape.split("x"))
        ids = rng.integers(1000, 30000, (batch, seq)).astype(np.int32)
        inputs = {
            "input_word_ids": tf.constant(ids),
            "input_mask": tf.ones_like(ids),
            "input_type_ids": tf.zeros_like(ids),
        }
        calls = 100 if batch * seq <= 128 else 20
        rounds = {split: [] for split in forwards}
        for _ in range(args.rounds):
            for split, forward in forwards.items():
                call = functools.partial(forward, inputs)
                rounds[split].append(median_call_seconds(call, calls) * 1e3)
        whole, halves = (statistics.median(rounds[split]) for split in (False, True))
        print(
            f"| batch {batch}, {seq} tokens | {whole:.2f} | {halves:.2f} | {whole / halves:.2f}x |"
        )


if __name__ == "__main__":
    main()
