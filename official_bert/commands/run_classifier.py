r"""Fine-tunes BERT on a sentence (pair) classification task: GLUE, XNLI, or any TSV/CSV; or
on a token tagging task (named entities, part-of-speech) in the CoNLL layout (--task_name=conll);
with --task_name=generic --multi_label, on examples that each have a set of labels.

  python run_classifier.py --task_name=MRPC --do_train=true --do_eval=true \
    --data_dir=$GLUE_DIR/MRPC --vocab_file=$BERT_BASE_DIR/vocab.txt \
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
    --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3.0 --output_dir=/tmp/mrpc_output/
"""

from absl import flags

from official_bert.kernels import use_fast_kernels
from official_bert.option_flags import define_option_flags, options_from_flags
from official_bert.tasks.classification import ClassifierOptions
from official_bert.tasks.registry import run_classifier

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the command's flags (once a process: absl keeps one set)."""
    # The original model, data, training and TPU flags, the runner's TF2 flags, and the task's:
    # one flag per field of ClassifierOptions.
    define_option_flags(ClassifierOptions)
    flags.mark_flags_as_required(["task_name", "data_dir", "output_dir"])


def main(_):
    use_fast_kernels(FLAGS.fast_kernels)  # first: the host allocator is chosen before any tensor
    run_classifier(options_from_flags(ClassifierOptions))
