"""Fine-tunes BERT on SQuAD v1.1 or v2.0, writes the original prediction files, and scores them.

  python run_squad.py --vocab_file=$BERT_BASE_DIR/vocab.txt \
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --do_train=True \
    --train_file=$SQUAD_DIR/train-v1.1.json --do_predict=True \
    --predict_file=$SQUAD_DIR/dev-v1.1.json --train_batch_size=12 --learning_rate=3e-5 \
    --num_train_epochs=2.0 --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad_base/
"""

import os

from absl import app, flags

from official_bert.checkpoints.loading import find_bert_config, read_bert_config
from official_bert.kernels import use_fast_kernels
from official_bert.training.finetuning_flags import define_hub_module_flag, hub_module_defaults
from official_bert.training.runner_flags import define_runner_flags, runner_flag_values
from official_bert.training.squad_finetuning import SquadOptions, run_squad

FLAGS = flags.FLAGS

# === The original flags ===
flags.DEFINE_string(
    "bert_config_file", None, "bert_config.json (default: the one beside init_checkpoint)."
)
flags.DEFINE_string("vocab_file", None, "vocab.txt of the model (default: beside the config).")
flags.DEFINE_string("output_dir", None, "Checkpoints, records, predictions and results go here.")
flags.DEFINE_string("train_file", None, "SQuAD JSON for training, e.g. train-v1.1.json.")
flags.DEFINE_string("predict_file", None, "SQuAD JSON for predictions, e.g. dev-v1.1.json.")
flags.DEFINE_string("init_checkpoint", None, "Initial weights: TF1, safetensors or ours.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input (uncased models).")
flags.DEFINE_integer("max_seq_length", 384, "Wordpieces per window, question included.")
flags.DEFINE_integer("doc_stride", 128, "Wordpieces between the starts of two windows.")
flags.DEFINE_integer("max_query_length", 64, "Question wordpieces kept (the rest is cut).")
flags.DEFINE_bool("do_train", False, "Whether to train.")
flags.DEFINE_bool("do_predict", False, "Whether to predict predict_file.")
flags.DEFINE_integer("train_batch_size", 32, "Global training batch size.")
flags.DEFINE_integer("predict_batch_size", 8, "Prediction batch size.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate (Adam).")
flags.DEFINE_float("num_train_epochs", 3.0, "Training epochs.")
flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of the steps with linear warm-up.")
flags.DEFINE_integer("n_best_size", 20, "Candidates in nbest_predictions.json.")
flags.DEFINE_integer("max_answer_length", 30, "Longest answer, in wordpieces.")
flags.DEFINE_bool("verbose_logging", False, "Log answers that cannot be mapped back to the text.")
flags.DEFINE_bool("version_2_with_negative", False, "SQuAD v2.0: questions may have no answer.")
flags.DEFINE_float(
    "null_score_diff_threshold", 0.0, "v2.0: no answer when null - best span > this."
)
define_runner_flags()  # the original TPU/loop flags and the runner's TF2 flags
# === TF2 flags ===
flags.DEFINE_integer("seed", None, "Seed of the span head's initialization, dropout, shuffling.")
flags.DEFINE_bool(
    "trim_padding", True, "Cut each training batch to its longest window (same loss; not TPU)."
)
flags.DEFINE_bool(
    "tune_null_threshold",
    False,
    "v2.0: re-write predictions.json with the null_score_diff_threshold that gives the best F1 "
    "on predict_file (reported in eval_results.json either way).",
)
flags.DEFINE_bool(
    "eval_only", False, "Only score output_dir/predictions.json against predict_file."
)
define_hub_module_flag()
flags.mark_flags_as_required(["output_dir"])


def main(_):
    use_fast_kernels(FLAGS.fast_kernels)  # first: the host allocator is chosen before any tensor
    if FLAGS.eval_only:
        run_squad(
            SquadOptions(
                bert_config=None,
                vocab_file=None,
                output_dir=FLAGS.output_dir,
                predict_file=FLAGS.predict_file,
                version_2_with_negative=FLAGS.version_2_with_negative,
                null_score_diff_threshold=FLAGS.null_score_diff_threshold,
                eval_only=True,
            )
        )
        return
    module = hub_module_defaults()
    config_file = (
        FLAGS.bert_config_file
        or module.get("bert_config_file")
        or find_bert_config(FLAGS.init_checkpoint)
    )
    if not config_file:
        raise app.UsageError("--bert_config_file is required (none found beside init_checkpoint)")
    vocab_file = (
        FLAGS.vocab_file
        or module.get("vocab_file")
        or os.path.join(os.path.dirname(config_file), "vocab.txt")
    )
    do_lower_case = FLAGS.do_lower_case
    if "do_lower_case" in module and not FLAGS["do_lower_case"].present:
        do_lower_case = module["do_lower_case"]
    run_squad(
        SquadOptions(
            bert_config=read_bert_config(config_file),
            bert_config_file=config_file,
            vocab_file=vocab_file,
            output_dir=FLAGS.output_dir,
            train_file=FLAGS.train_file,
            **runner_flag_values(),
            predict_file=FLAGS.predict_file,
            init_checkpoint=FLAGS.init_checkpoint,
            do_lower_case=do_lower_case,
            max_seq_length=FLAGS.max_seq_length,
            doc_stride=FLAGS.doc_stride,
            max_query_length=FLAGS.max_query_length,
            do_train=FLAGS.do_train,
            do_predict=FLAGS.do_predict,
            train_batch_size=FLAGS.train_batch_size,
            predict_batch_size=FLAGS.predict_batch_size,
            learning_rate=FLAGS.learning_rate,
            num_train_epochs=FLAGS.num_train_epochs,
            warmup_proportion=FLAGS.warmup_proportion,
            n_best_size=FLAGS.n_best_size,
            max_answer_length=FLAGS.max_answer_length,
            verbose_logging=FLAGS.verbose_logging,
            version_2_with_negative=FLAGS.version_2_with_negative,
            null_score_diff_threshold=FLAGS.null_score_diff_threshold,
            seed=FLAGS.seed,
            trim_padding=FLAGS.trim_padding,
            tune_null_threshold=FLAGS.tune_null_threshold,
            hub_module_handle=FLAGS.hub_module_handle,
        )
    )


if __name__ == "__main__":
    app.run(main)
