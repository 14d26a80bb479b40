"""Fine-tunes one BERT encoder on several GLUE-style tasks at once, a classification or
regression head per task; each step trains on one task's batch. --do_eval evaluates every task
on its dev set, --do_predict writes every task's test predictions to
output_dir/<task>/test_results.tsv (run_classifier.py's format).

  python run_multitask.py --task_names=mrpc,sts-b,cola \
    --data_dirs=$GLUE_DIR/MRPC,$GLUE_DIR/STS-B,$GLUE_DIR/CoLA \
    --do_train=true --do_eval=true --do_predict=true \
    --vocab_file=$BERT_BASE_DIR/vocab.txt --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
    --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3.0 --output_dir=/tmp/multitask/

The layout of output_dir: official_bert/training/multitask_finetuning.py.
"""

from absl import app, flags

from official_bert.data.classification.examples import processor_names
from official_bert.kernels import use_fast_kernels
from official_bert.training.finetuning_flags import define_finetuning_flags, finetuning_flag_values
from official_bert.training.multitask_finetuning import MultiTaskOptions, run_multitask

FLAGS = flags.FLAGS

# run_classifier.py's model, data, training and prediction flags (--do_predict,
# --predict_batch_size), the runner's flags, --seed, ...
define_finetuning_flags()
# === The tasks ===
flags.DEFINE_list(
    "task_names", None, f"The tasks, comma-separated: each one of {processor_names()}."
)
flags.DEFINE_list(
    "data_dirs",
    None,
    "Each task's folder (train.tsv, dev.tsv; test.tsv for --do_predict), comma-separated, in task "
    "order.",
)
flags.DEFINE_float(
    "sampling_temperature",
    1.0,
    "A step trains task i with probability proportional to n_i ** (1 / T), n_i its training "
    "examples: 1 samples in proportion to the data, a large T (e.g. 100) nearly uniformly.",
)
flags.DEFINE_integer(
    "num_train_steps",
    None,
    "Training steps over all tasks (default: num_train_epochs * total examples / batch size).",
)
flags.mark_flags_as_required(["task_names", "data_dirs", "output_dir"])


def main(_):
    use_fast_kernels(FLAGS.fast_kernels)  # first: the host allocator is chosen before any tensor
    run_multitask(
        MultiTaskOptions(
            **finetuning_flag_values(),
            task_names=FLAGS.task_names,
            data_dirs=FLAGS.data_dirs,
            sampling_temperature=FLAGS.sampling_temperature,
            num_train_steps=FLAGS.num_train_steps,
        )
    )


if __name__ == "__main__":
    app.run(main)
