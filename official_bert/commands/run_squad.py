r"""Fine-tunes BERT on SQuAD v1.1 or v2.0, writes the original prediction files, and scores them.

  python run_squad.py --vocab_file=$BERT_BASE_DIR/vocab.txt \
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --do_train=True \
    --train_file=$SQUAD_DIR/train-v1.1.json --do_predict=True \
    --predict_file=$SQUAD_DIR/dev-v1.1.json --train_batch_size=12 --learning_rate=3e-5 \
    --num_train_epochs=2.0 --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad_base/
"""

from absl import flags

from official_bert.kernels import use_fast_kernels
from official_bert.option_flags import define_option_flags, options_from_flags
from official_bert.tasks.squad import SquadOptions, run_squad

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the command's flags (once a process: absl keeps one set)."""
    # The original flags, the runner's TF2 flags and SQuAD's: one flag per field of SquadOptions.
    define_option_flags(SquadOptions)
    flags.mark_flags_as_required(["output_dir"])


def main(_):
    use_fast_kernels(FLAGS.fast_kernels)  # first: the host allocator is chosen before any tensor
    run_squad(options_from_flags(SquadOptions))
