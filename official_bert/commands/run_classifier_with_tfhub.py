r"""Fine-tunes a BERT encoder from TF Hub on a classification task: run_classifier.py with the
encoder given by --bert_hub_module_handle (the original release's script of this name).

  python run_classifier_with_tfhub.py --task_name=MRPC --do_train=true --do_eval=true \
    --data_dir=$GLUE_DIR/MRPC \
    --bert_hub_module_handle=https://tfhub.dev/tensorflow/bert_en_uncased_L-12_H-768_A-12/4 \
    --max_seq_length=128 --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3.0 \
    --output_dir=/tmp/mrpc_output/

The module's vocab and casing are used; a URL is downloaded once into TFHUB_CACHE_DIR. Every
flag of run_classifier.py applies.
"""

from absl import flags

from official_bert.kernels import use_fast_kernels
from official_bert.option_flags import define_option_flags, options_from_flags
from official_bert.tasks.classification import ClassifierOptions
from official_bert.tasks.registry import run_classifier

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the command's flags (once a process: absl keeps one set)."""
    define_option_flags(ClassifierOptions)
    flags.DEFINE_string(
        "bert_hub_module_handle",
        None,
        "The BERT encoder to fine-tune: a TF2 SavedModel of the TF Hub BERT encoder API, as a "
        "folder (export_tfhub.py writes one) or a URL (tfhub.dev, Kaggle), the same as "
        "run_classifier.py's --hub_module_handle.",
    )
    flags.mark_flags_as_required(["task_name", "data_dir", "output_dir", "bert_hub_module_handle"])


def main(_):
    use_fast_kernels(FLAGS.fast_kernels)  # first: the host allocator is chosen before any tensor
    if FLAGS.hub_module_handle and FLAGS.hub_module_handle != FLAGS.bert_hub_module_handle:
        raise ValueError("--hub_module_handle and --bert_hub_module_handle name other encoders")
    run_classifier(
        options_from_flags(ClassifierOptions, hub_module_handle=FLAGS.bert_hub_module_handle)
    )
