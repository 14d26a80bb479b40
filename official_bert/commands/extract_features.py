r"""Extracts contextual token features from a pre-trained BERT (the original's flags and format).

  python extract_features.py --input_file=samples/sentences.txt --output_file=/tmp/out.jsonl \
    --vocab_file=.../vocab.txt --bert_config_file=.../bert_config.json \
    --init_checkpoint=.../bert_model.ckpt --layers=-1,-2,-3,-4 --max_seq_length=128

init_checkpoint may be an original TF1 checkpoint, a safetensors file (HF BERT names; its
config.json works as bert_config_file) or one of this project's checkpoints.
"""

from absl import flags

from official_bert.kernels import use_fast_kernels, use_frozen_weight_products
from official_bert.option_flags import define_option_flags, options_from_flags
from official_bert.tasks.feature_extraction import FeatureExtractionOptions, run_feature_extraction

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the command's flags (once a process: absl keeps one set)."""
    # The original flags and the TF2 ones: one flag per field of FeatureExtractionOptions.
    define_option_flags(FeatureExtractionOptions)
    flags.mark_flags_as_required(["input_file", "output_file", "init_checkpoint"])
    # A choice of the process, not of the task (docs/kernels.md#frozen-weight-products).
    flags.DEFINE_bool(
        "frozen_weights",
        None,
        "oneDNN reorders each weight once and keeps it (TF_ONEDNN_ASSUME_FROZEN_WEIGHTS): faster "
        "bfloat16 products at every batch size and float32 ones at batch 1, slower float32 ones on "
        "large batches. Default: on for bfloat16 inference on the fast kernels, else the "
        "environment's choice (off).",
    )


def main(_):
    use_fast_kernels(FLAGS.fast_kernels)  # first: the host allocator is chosen before any tensor
    use_frozen_weight_products(  # and before any product: TensorFlow reads this choice once
        FLAGS.frozen_weights,
        default=FLAGS.fast_kernels and FLAGS.inference_dtype == "bfloat16",
    )
    run_feature_extraction(options_from_flags(FeatureExtractionOptions))
