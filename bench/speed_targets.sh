#!/usr/bin/env bash
# Every speed target of the project in one run, with the peers, on one machine: the pre-training
# train step (small and base, float32 and mixed bfloat16) and its product floor, the base encoder's
# forward latency (float32 and bfloat16 weights, with and without frozen-weight products), the
# classifier's serving SavedModel against Hugging Face's pipeline, and create_pretraining_data.py
# against the original. TensorFlow's sustained float32 GEMM rate is read before, between and after
# the benches (the machine is shared: the rate moves), and the CPU's model and flags first.
#
#   bash bench/speed_targets.sh [OUTPUT_DIR]      (default /tmp/speed_targets; about 45 minutes
#                                                  on 2 cores)
#
# Needs the peers of ../shared/bench (setup_peers.sh hf tfm kh orig minilm) in $PEERS_DIR
# (default ~/.cache/bert_peers). PYTHON names the project's interpreter (default .venv/bin/python),
# SHARED the shared folder (default ../shared beside the checkout). Each bench prints its own
# table; the JSON lines go to OUTPUT_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
SHARED=${SHARED:-../shared}
OUT=${1:-/tmp/speed_targets}
mkdir -p "$OUT"
# The benches append to their JSON lines, and the floor script reads the train step's: a rerun
# into the same folder starts from none.
rm -f "$OUT"/*.jsonl

stamp() { echo "== $(date -u +%FT%TZ) $*"; }
gemm() {
  stamp "TensorFlow float32 GEMM (n = 4096)"
  "$PYTHON" "$SHARED/bench/peak_matmul.py" --only tensorflow --sizes 4096 2>/dev/null | tail -1
}

stamp "machine"
grep -m1 'model name' /proc/cpuinfo
grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|avx512f|avx512_vnni|avx512_bf16|avx512_fp16|amx_bf16|amx_int8|amx_tile)$' | tr '\n' ' ' || true
echo
nproc
gemm
stamp "train_step.py"
"$PYTHON" bench/train_step.py --configs small,base --variants fp32,bf16 --peers tfm,hf \
  --steps 8 --warmup 2 --rounds 3 --jsonl "$OUT/train_step.jsonl"
gemm
stamp "train_step_gemm_floor.py"
"$PYTHON" bench/train_step_gemm_floor.py --configs base --calls 15 --jsonl "$OUT/train_step.jsonl"
stamp "encoder_latency.py"
"$PYTHON" bench/encoder_latency.py --variants fp32-fused,bf16-fused --peers tfm,kh,hf --rounds 3 \
  --jsonl "$OUT/encoder_latency.jsonl"
stamp "encoder_latency.py --frozen_weights"
"$PYTHON" bench/encoder_latency.py --variants fp32-fused,bf16-fused --peers hf --rounds 3 \
  --frozen_weights --jsonl "$OUT/encoder_latency_frozen.jsonl"
gemm
stamp "serving_throughput.py"
"$PYTHON" bench/serving_throughput.py --rounds 3
stamp "serving_throughput.py --frozen_weights"
"$PYTHON" bench/serving_throughput.py --rounds 3 --frozen_weights
gemm
stamp "pretraining_data.py"
"$PYTHON" bench/pretraining_data.py --sizes 6,12 --repeats 3 --no_stats --impls original,ours_w2 \
  --jsonl "$OUT/pretraining_data.jsonl"
gemm
stamp "end"
