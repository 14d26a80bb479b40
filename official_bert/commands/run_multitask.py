r"""Fine-tunes one BERT encoder on several GLUE-style tasks at once, a classification or
regression head per task; each step trains on one task's batch. --do_eval evaluates every task
on its dev set, --do_predict writes every task's test predictions to
output_dir/<task>/test_results.tsv (run_classifier.py's format).

  python run_multitask.py --task_names=mrpc,sts-b,cola \
    --data_dirs=$GLUE_DIR/MRPC,$GLUE_DIR/STS-B,$GLUE_DIR/CoLA \
    --do_train=true --do_eval=true --do_predict=true \
    --vocab_file=$BERT_BASE_DIR/vocab.txt --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
    --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3.0 --output_dir=/tmp/multitask/

The layout of output_dir: official_bert/tasks/multitask.py.
"""

from absl import flags

from official_bert.kernels import use_fast_kernels
from official_bert.option_flags import define_option_flags, options_from_flags
from official_bert.tasks.multitask import MultiTaskOptions, run_multitask

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the command's flags (once a process: absl keeps one set)."""
    # run_classifier.py's model, data, training and prediction flags, the runner's flags, and the
    # tasks': one flag per field of MultiTaskOptions.
    define_option_flags(MultiTaskOptions)
    flags.mark_flags_as_required(["task_names", "data_dirs", "output_dir"])


def main(_):
    use_fast_kernels(FLAGS.fast_kernels)  # first: the host allocator is chosen before any tensor
    run_multitask(options_from_flags(MultiTaskOptions))
