r"""Exports BERT as TF Hub SavedModels: the encoder, the encoder with its masked-LM head, or the
text preprocessor.

  python export_tfhub.py --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --model_checkpoint_path=$BERT_BASE_DIR/bert_model.ckpt --vocab_file=$BERT_BASE_DIR/vocab.txt \
    --export_type=model --export_path=/tmp/bert_encoder
  python export_tfhub.py --vocab_file=$BERT_BASE_DIR/vocab.txt --export_type=preprocessing \
    --export_path=/tmp/bert_preprocess

Load an encoder with `tensorflow_hub.KerasLayer` (tf_keras),
`keras.layers.TFSMLayer(path, call_endpoint="__call__")` or
`official_bert.export.ExportedBertEncoder` (Keras 3, fine-tunable); a preprocessor after
`import tensorflow_text`.
"""

from absl import flags

from official_bert.checkpoints import CHECKPOINT_FORMATS
from official_bert.export.tfhub_export import EXPORT_TYPES, export_tfhub

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the command's flags (once a process: absl keeps one set)."""
    flags.DEFINE_string(
        "bert_config_file",
        None,
        "bert_config.json or HF config.json (default: beside the checkpoint).",
    )
    flags.DEFINE_string(
        "model_checkpoint_path",
        None,
        "Weights: an original TF1 checkpoint, safetensors, pytorch_model.bin, tf_model.h5, a "
        "keras-hub preset, or ours.",
    )
    flags.DEFINE_enum("checkpoint_format", None, list(CHECKPOINT_FORMATS), "Default: detected.")
    flags.DEFINE_string(
        "vocab_file",
        None,
        "vocab.txt of the model (packaged as an asset; default: the one beside the checkpoint).",
    )
    flags.DEFINE_bool(
        "do_lower_case",
        None,
        "Uncased model (default: a keras-hub preset's casing, else guessed from the "
        "vocab/checkpoint path, else from the vocab's letters).",
    )
    flags.DEFINE_enum("export_type", "model", list(EXPORT_TYPES), "What to export.")
    flags.DEFINE_string("export_path", None, "Directory of the SavedModel (must not exist).")
    flags.DEFINE_integer("default_seq_length", 128, "preprocessing: the root call's output length.")
    flags.DEFINE_bool(
        "tokenize_with_offsets",
        False,
        "preprocessing: also export .tokenize_with_offsets (ids with each piece's byte offsets).",
    )
    flags.DEFINE_bool(
        "preserve_unused_tokens",
        False,
        "preprocessing, fill_mask: keep each [unusedN] of the vocab written as a "
        "whitespace-separated word one token (as the model was trained with it).",
    )
    flags.DEFINE_bool("overwrite", False, "Replace an existing export_path.")
    flags.DEFINE_integer(
        "fill_mask_top_k", 5, "fill_mask: tokens returned per [MASK] (texts of default_seq_length)."
    )
    flags.mark_flags_as_required(["export_path"])


def main(_):
    export_tfhub(
        FLAGS.export_type,
        FLAGS.export_path,
        FLAGS.vocab_file,
        bert_config_file=FLAGS.bert_config_file,
        model_checkpoint_path=FLAGS.model_checkpoint_path,
        do_lower_case=FLAGS.do_lower_case,
        default_seq_length=FLAGS.default_seq_length,
        tokenize_with_offsets=FLAGS.tokenize_with_offsets,
        checkpoint_format=FLAGS.checkpoint_format,
        fill_mask_top_k=FLAGS.fill_mask_top_k,
        preserve_unused_tokens=FLAGS.preserve_unused_tokens,
        overwrite=FLAGS.overwrite,
    )
