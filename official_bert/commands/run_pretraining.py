r"""Pre-trains BERT (masked LM + next sentence) on TFRecords of create_pretraining_data.py.

--use_next_sentence_label=false (MLM only) and --objective=ltr (a left-to-right LM, no NSP) are
the pre-training ablations of the BERT paper (section 5.1).

  python run_pretraining.py --input_file=/tmp/tf_examples.tfrecord --output_dir=/tmp/pretraining \
    --do_train=True --do_eval=True --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --train_batch_size=32 --max_seq_length=128 --max_predictions_per_seq=20 \
    --num_train_steps=20 --num_warmup_steps=10 --learning_rate=2e-5
"""

from absl import flags

from official_bert.kernels import use_fast_kernels
from official_bert.option_flags import define_option_flags, options_from_flags
from official_bert.tasks.pretraining import PretrainingOptions, run_pretraining

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the command's flags (once a process: absl keeps one set)."""
    # The original flags, the runner's TF2 flags and the ablations': one flag per field of
    # PretrainingOptions.
    define_option_flags(PretrainingOptions)
    flags.mark_flags_as_required(["input_file", "output_dir"])


def main(_):
    use_fast_kernels(FLAGS.fast_kernels)  # first: the host allocator is chosen before any tensor
    run_pretraining(options_from_flags(PretrainingOptions))
