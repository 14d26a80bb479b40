r"""Converts BERT weights between the original TF1 layout, safetensors (HF names), keras-hub
presets and ours; reads PyTorch's pytorch_model.bin (without PyTorch) and transformers'
tf_model.h5 too.

  python convert_checkpoint.py --input_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt \
    --output_dir=/tmp/bert_safetensors --output_format=safetensors

bert_config.json (or HF config.json) and vocab.txt are read from beside the input unless given,
and written beside the output (a keras_hub preset holds its own config.json and vocabulary).
"""

from absl import flags

from official_bert.checkpoints import CHECKPOINT_FORMATS, WRITABLE_CHECKPOINT_FORMATS
from official_bert.checkpoints.conversion import convert_checkpoint

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the command's flags (once a process: absl keeps one set)."""
    flags.DEFINE_string(
        "input_checkpoint",
        None,
        "TF1 checkpoint prefix, .safetensors, pytorch_model.bin or tf_model.h5 file, or a directory "
        "of one of them or a keras-hub preset.",
    )
    flags.DEFINE_enum("input_format", None, list(CHECKPOINT_FORMATS), "Default: detected.")
    flags.DEFINE_string(
        "bert_config_file", None, "Default: bert_config.json/config.json beside input."
    )
    flags.DEFINE_string(
        "vocab_file", None, "Default: vocab.txt (or a keras-hub preset's) beside the input."
    )
    flags.DEFINE_string("output_dir", None, "Directory for the converted weights and their files.")
    flags.DEFINE_enum("output_format", "tf1", list(WRITABLE_CHECKPOINT_FORMATS), "Layout to write.")
    flags.mark_flags_as_required(["input_checkpoint", "output_dir"])


def main(_):
    convert_checkpoint(
        FLAGS.input_checkpoint,
        FLAGS.output_dir,
        FLAGS.output_format,
        bert_config_file=FLAGS.bert_config_file,
        vocab_file=FLAGS.vocab_file,
        input_format=FLAGS.input_format,
    )
