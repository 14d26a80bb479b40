"""create_pretraining_data on Chinese text: throughput without a word segmenter and with jieba.

Writes the same corpus three ways in this process (one worker, so the figures compare the
segmenter's cost and not the pool): the original's rule (`--do_whole_word_mask`, each ideograph
its own word), `--word_segmenter=jieba`, and `--word_segmenter=jieba --max_ngram_size=3`. Prints
one JSON line per run and a markdown table. Not a test: nothing is asserted.

    python bench/pretraining_data_chinese.py                        # DRCD dev contexts if present
    python bench/pretraining_data_chinese.py --text corpus.txt --vocab_file vocab.txt

The default corpus is DRCD dev's paragraphs (../shared/data/zh, simplified Chinese Wikipedia
prose, a sentence per line, a paragraph per document) with the bert-base-chinese vocabulary;
without ../shared it is samples/zh repeated --repeats times with its own vocabulary.
"""

import argparse
import json
import pathlib
import re
import sys
import tempfile
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from official_bert.data.pretraining.data_writer import (  # noqa: E402
    PretrainingDataSettings,
    write_pretraining_examples,
)

SHARED_ZH = REPO_ROOT.parent / "shared" / "data" / "zh"


def _default_corpus(folder: pathlib.Path, repeats: int) -> tuple[str, str, str]:
    """(corpus path, vocab path, description)."""
    drcd = SHARED_ZH / "drcd" / "dev_simplified.json"
    vocab = SHARED_ZH / "vocab" / "bert-base-chinese_vocab.txt"
    corpus = folder / "corpus.txt"
    if drcd.exists() and vocab.exists():
        data = json.loads(drcd.read_text(encoding="utf-8"))
        documents = [
            "\n".join(s for s in re.split(r"(?<=[。！？])", p["context"].strip()) if s.strip())
            for article in data["data"]
            for p in article["paragraphs"]
        ]
        corpus.write_text("\n\n".join(documents) + "\n", encoding="utf-8")
        return str(corpus), str(vocab), "DRCD dev contexts, bert-base-chinese vocab"
    sample = (REPO_ROOT / "samples" / "zh" / "pretraining_corpus.txt").read_text(encoding="utf-8")
    corpus.write_text("\n".join([sample] * repeats), encoding="utf-8")
    vocab = REPO_ROOT / "samples" / "zh" / "vocab.txt"
    return str(corpus), str(vocab), f"samples/zh x{repeats}, its vocab"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", help="a corpus (one sentence a line, blank line between docs)")
    parser.add_argument("--vocab_file", help="the vocab of --text")
    parser.add_argument("--dupe_factor", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=20, help="copies of samples/zh (fallback)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        if args.text:
            corpus, vocab, description = args.text, args.vocab_file, args.text
        else:
            corpus, vocab, description = _default_corpus(folder, args.repeats)
        megabytes = pathlib.Path(corpus).stat().st_size / 1e6
        runs = [
            ("do_whole_word_mask (each ideograph a word)", dict(do_whole_word_mask=True)),
            ("word_segmenter=jieba", dict(word_segmenter="jieba", decide_per_word=True)),
            (
                "word_segmenter=jieba, max_ngram_size=3",
                dict(word_segmenter="jieba", decide_per_word=True, max_ngram_size=3),
            ),
        ]
        rows = []
        for index, (name, options) in enumerate(runs):
            settings = PretrainingDataSettings(
                vocab_file=vocab, dupe_factor=args.dupe_factor, **options
            )
            start = time.perf_counter()
            summary = write_pretraining_examples(
                [corpus], [str(folder / f"out{index}.tfrecord")], settings, num_workers=1
            )
            seconds = time.perf_counter() - start
            row = {
                "run": name,
                "input_mb": round(megabytes, 3),
                "seconds": round(seconds, 2),
                "mb_per_s": round(megabytes / seconds, 3),
                "instances_per_s": round(summary["instances"] / seconds),
                "predicted": round(summary["fraction_predicted_of_eligible"], 4),
            }
            print(json.dumps(row), flush=True)
            rows.append(row)
    print(f"\n{description}, {megabytes:.2f} MB, dupe_factor {args.dupe_factor}, 1 worker\n")
    print("| run | s | MB/s | instances/s | predicted |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['run']} | {row['seconds']} | {row['mb_per_s']} | "
            f"{row['instances_per_s']} | {row['predicted']:.1%} |"
        )


if __name__ == "__main__":
    main()
