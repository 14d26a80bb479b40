"""Extracts contextual token features from a pre-trained BERT (the original's flags and format).

  python extract_features.py --input_file=samples/sentences.txt --output_file=/tmp/out.jsonl \
    --vocab_file=.../vocab.txt --bert_config_file=.../bert_config.json \
    --init_checkpoint=.../bert_model.ckpt --layers=-1,-2,-3,-4 --max_seq_length=128

init_checkpoint may be an original TF1 checkpoint, a safetensors file (HF BERT names; its
config.json works as bert_config_file) or one of this project's checkpoints.
"""

import tensorflow as tf
from absl import app, flags, logging

from official_bert import feature_extraction
from official_bert.checkpoints import load_bert_weights
from official_bert.checkpoints.loading import find_bert_config, read_bert_config
from official_bert.config import check_vocab_matches_config
from official_bert.data.feature_extraction_inputs import convert_text_examples, read_text_examples
from official_bert.kernels import use_fast_kernels
from official_bert.models import BertEncoder
from official_bert.scalar_mix_weights import load_scalar_mix
from official_bert.tokenization import FullTokenizer, validate_case_matches_checkpoint
from official_bert.training.runner_flags import define_fast_kernels_flag

FLAGS = flags.FLAGS

# === The original flags ===
flags.DEFINE_string("input_file", None, "Text file: one example per line, pairs as 'a ||| b'.")
flags.DEFINE_string("output_file", None, "JSON-lines output file.")
flags.DEFINE_string("layers", "-1,-2,-3,-4", "Comma-separated encoder layers to output.")
flags.DEFINE_string(
    "bert_config_file",
    None,
    "bert_config.json of the model (or an HF config.json). Default: the one beside "
    "init_checkpoint.",
)
flags.DEFINE_integer("max_seq_length", 128, "Maximum total input length in wordpieces.")
flags.DEFINE_string("init_checkpoint", None, "Checkpoint to read: TF1, safetensors or ours.")
flags.DEFINE_string("vocab_file", None, "vocab.txt the model was trained with.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input (True for uncased models).")
flags.DEFINE_integer("batch_size", 32, "Batch size for predictions.")
define_fast_kernels_flag()
flags.DEFINE_bool("use_tpu", False, "Accepted for compatibility; use --distribution_strategy.")
flags.DEFINE_string("master", None, "Accepted for compatibility (TF1 TPU master).")
flags.DEFINE_integer("num_tpu_cores", 8, "Accepted for compatibility.")
flags.DEFINE_bool("use_one_hot_embeddings", False, "Accepted for compatibility; no effect.")
# === TF2 flags ===
flags.DEFINE_enum("checkpoint_format", None, ["tf1", "safetensors", "object"], "Default: detected.")
flags.DEFINE_string(
    "scalar_mix_weights",
    None,
    "scalar_mix_weights.json of run_classifier.py --feature_mode=frozen_scalar_mix: output one "
    'entry per token, {"index": "scalar_mix", "values": ...}, the learned mix of all layers, '
    "instead of --layers.",
)

flags.mark_flags_as_required(["input_file", "output_file", "vocab_file", "init_checkpoint"])


def main(_):
    use_fast_kernels(FLAGS.fast_kernels)  # first: the host allocator is chosen before any tensor
    if FLAGS.use_tpu:
        logging.warning("--use_tpu is ignored by extract_features.py: features run on the host")
    if not tf.io.gfile.exists(FLAGS.input_file):
        raise FileNotFoundError(f"--input_file: input file not found: {FLAGS.input_file}")
    validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)
    config_file = FLAGS.bert_config_file or find_bert_config(FLAGS.init_checkpoint)
    if config_file is None:
        raise app.UsageError("--bert_config_file is required (none found beside init_checkpoint)")
    config = read_bert_config(config_file)
    check_vocab_matches_config(config, FLAGS.vocab_file, config_file)
    if FLAGS.max_seq_length > config.max_position_embeddings:
        raise ValueError(
            f"--max_seq_length={FLAGS.max_seq_length} is longer than max_position_embeddings "
            f"({config.max_position_embeddings}) in {config_file}"
        )
    scalar_mix = layer_indexes = None
    if FLAGS.scalar_mix_weights:
        if FLAGS["layers"].present:
            raise app.UsageError(
                "--layers and --scalar_mix_weights exclude each other: with --scalar_mix_weights "
                "the output holds the mix of all layers only"
            )
        scalar_mix = load_scalar_mix(FLAGS.scalar_mix_weights, config.num_hidden_layers)
    else:
        layer_indexes = feature_extraction.parse_layer_indexes(
            FLAGS.layers, config.num_hidden_layers
        )
    encoder = BertEncoder.from_bert_config(config)
    encoder.build()
    load_bert_weights(encoder, FLAGS.init_checkpoint, checkpoint_format=FLAGS.checkpoint_format)
    tokenizer = FullTokenizer(vocab_file=FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    features = convert_text_examples(
        read_text_examples(FLAGS.input_file), tokenizer, FLAGS.max_seq_length
    )
    count = feature_extraction.extract_features(
        encoder,
        features,
        layer_indexes,
        FLAGS.output_file,
        batch_size=FLAGS.batch_size,
        scalar_mix=scalar_mix,
    )
    logging.info("Wrote features of %d examples to %s", count, FLAGS.output_file)


if __name__ == "__main__":
    app.run(main)
