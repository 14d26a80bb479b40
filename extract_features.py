"""Extracts contextual token features from a pre-trained BERT (the original's flags and format).

  python extract_features.py --input_file=samples/sentences.txt --output_file=/tmp/out.jsonl \
    --vocab_file=.../vocab.txt --bert_config_file=.../bert_config.json \
    --init_checkpoint=.../bert_model.ckpt --layers=-1,-2,-3,-4 --max_seq_length=128

init_checkpoint may be an original TF1 checkpoint, a safetensors file (HF BERT names; its
config.json works as bert_config_file) or one of this project's checkpoints.
"""

import _quiet_start  # noqa: F401  # isort: skip  (first: no CUDA/oneDNN start-up lines)


from absl import app, flags

from official_bert.kernels import use_fast_kernels
from official_bert.option_flags import define_option_flags, options_from_flags
from official_bert.tasks.feature_extraction import FeatureExtractionOptions, run_feature_extraction

FLAGS = flags.FLAGS

# The original flags and the TF2 ones: one flag per field of FeatureExtractionOptions.
define_option_flags(FeatureExtractionOptions)
flags.mark_flags_as_required(["input_file", "output_file", "vocab_file", "init_checkpoint"])


def main(_):
    use_fast_kernels(FLAGS.fast_kernels)  # first: the host allocator is chosen before any tensor
    run_feature_extraction(options_from_flags(FeatureExtractionOptions))


if __name__ == "__main__":
    app.run(main)
