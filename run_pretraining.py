"""Pre-trains BERT (masked LM + next sentence) on TFRecords of create_pretraining_data.py.

--use_next_sentence_label=false (MLM only) and --objective=ltr (a left-to-right LM, no NSP) are
the pre-training ablations of the BERT paper (section 5.1).

  python run_pretraining.py --input_file=/tmp/tf_examples.tfrecord --output_dir=/tmp/pretraining \
    --do_train=True --do_eval=True --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --train_batch_size=32 --max_seq_length=128 --max_predictions_per_seq=20 \
    --num_train_steps=20 --num_warmup_steps=10 --learning_rate=2e-5
"""

from absl import app, flags, logging

from official_bert.checkpoints.loading import read_bert_config
from official_bert.kernels import use_fast_kernels
from official_bert.training.pretraining import PretrainingOptions, run_pretraining
from official_bert.training.runner_flags import define_runner_flags, runner_flag_values

FLAGS = flags.FLAGS

# === The original flags ===
flags.DEFINE_string("bert_config_file", None, "bert_config.json of the model to pre-train.")
flags.DEFINE_string("input_file", None, "Input TFRecord file(s): comma-separated globs.")
flags.DEFINE_string("output_dir", None, "Checkpoints, summaries and eval_results.txt go here.")
flags.DEFINE_string("init_checkpoint", None, "Initial weights: TF1, safetensors or ours.")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length of the input files.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked-LM predictions per sequence.")
flags.DEFINE_bool("do_train", False, "Whether to train.")
flags.DEFINE_bool("do_eval", False, "Whether to evaluate.")
flags.DEFINE_integer("train_batch_size", 32, "Global training batch size.")
flags.DEFINE_integer("eval_batch_size", 8, "Evaluation batch size.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate (Adam).")
flags.DEFINE_integer("num_train_steps", 100000, "Training steps.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Warm-up steps.")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum evaluation batches.")
define_runner_flags()  # the original TPU/loop flags and the runner's TF2 flags
# === TF2 flags ===
flags.DEFINE_bool("use_next_sentence_label", True, "False: MLM-only pre-training.")
flags.DEFINE_enum(
    "objective",
    "mlm",
    ["mlm", "ltr"],
    "mlm: the masked LM. ltr: the paper's 'LTR & No NSP' ablation, a left-to-right LM (causal "
    "attention, next-token loss over all real positions) on the same files, their original "
    "tokens restored; next-sentence prediction is off (an explicit "
    "--use_next_sentence_label=true is an error).",
)
flags.DEFINE_integer("seed", None, "Seed for initialization, dropout and input order.")
flags.DEFINE_integer(
    "gradient_accumulation_steps",
    1,
    "Micro-batches per update: each update's --train_batch_size examples run as this many "
    "micro-batches of train_batch_size / k, their gradients summed (the memory of one).",
)
flags.DEFINE_bool(
    "enable_xla", False, "Compile the train step with XLA (for GPU/TPU; slower on CPU)."
)
flags.mark_flags_as_required(["bert_config_file", "input_file", "output_dir"])


def use_next_sentence_label() -> bool:
    """--use_next_sentence_label, off by default under --objective=ltr (the paper's LTR model
    has no NSP); asking for both explicitly is an error."""
    if FLAGS.objective != "ltr":
        return FLAGS.use_next_sentence_label
    if FLAGS["use_next_sentence_label"].present and FLAGS.use_next_sentence_label:
        raise app.UsageError(
            "--objective=ltr is the paper's 'LTR & No NSP' model: it has no next-sentence "
            "prediction, so --use_next_sentence_label=true cannot go with it"
        )
    logging.info("--objective=ltr: next-sentence prediction is off")
    return False


def main(_):
    use_fast_kernels(FLAGS.fast_kernels)  # first: the host allocator is chosen before any tensor
    if not FLAGS.do_train and not FLAGS.do_eval:
        raise app.UsageError("At least one of --do_train or --do_eval must be True.")
    next_sentence = use_next_sentence_label()
    run_pretraining(
        PretrainingOptions(
            bert_config=read_bert_config(FLAGS.bert_config_file),
            input_file=FLAGS.input_file,
            output_dir=FLAGS.output_dir,
            init_checkpoint=FLAGS.init_checkpoint,
            **runner_flag_values(),
            max_seq_length=FLAGS.max_seq_length,
            max_predictions_per_seq=FLAGS.max_predictions_per_seq,
            do_train=FLAGS.do_train,
            do_eval=FLAGS.do_eval,
            train_batch_size=FLAGS.train_batch_size,
            eval_batch_size=FLAGS.eval_batch_size,
            learning_rate=FLAGS.learning_rate,
            num_train_steps=FLAGS.num_train_steps,
            num_warmup_steps=FLAGS.num_warmup_steps,
            max_eval_steps=FLAGS.max_eval_steps,
            use_next_sentence_label=next_sentence,
            objective=FLAGS.objective,
            seed=FLAGS.seed,
            gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
            enable_xla=FLAGS.enable_xla,
        )
    )


if __name__ == "__main__":
    app.run(main)
