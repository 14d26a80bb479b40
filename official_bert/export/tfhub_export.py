"""export_tfhub.py's work: weights and vocab in, a TF Hub SavedModel out."""

from __future__ import annotations

import tensorflow as tf
from absl import logging

from official_bert.checkpoints import loading
from official_bert.checkpoints.checkpoint_url import resolve_checkpoint_url
from official_bert.checkpoints.variable_table import CheckpointMismatchError
from official_bert.config import check_vocab_matches_config
from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.export.bert_encoder_module import export_bert_encoder
from official_bert.export.bert_preprocessor_module import export_bert_preprocessor
from official_bert.export.fill_mask_serving import export_fill_mask_serving_model
from official_bert.export.saved_model_writing import check_export_path_replaceable
from official_bert.models import BertEncoder, BertPretrainer

EXPORT_TYPES = ("model", "model_with_mlm", "preprocessing", "fill_mask")


def export_tfhub(
    export_type: str,
    export_path: str,
    vocab_file: str | None,
    bert_config_file: str | None = None,
    model_checkpoint_path: str | None = None,
    do_lower_case: bool | None = None,
    default_seq_length: int = 128,
    tokenize_with_offsets: bool = False,
    checkpoint_format: str | None = None,
    overwrite: bool = False,
    fill_mask_top_k: int = 5,
    preserve_unused_tokens: bool = False,
) -> str:
    """Exports an encoder ("model"), an encoder with its masked-LM head ("model_with_mlm"),
    the text preprocessor ("preprocessing") or a raw-text fill-mask serving model ("fill_mask":
    export/fill_mask_serving.py, texts of up to default_seq_length pieces, fill_mask_top_k tokens
    per [MASK]) to `export_path`; returns export_path. `preserve_unused_tokens` (the original's
    --preserve_unused_tokens) applies to the exports that tokenize: preprocessing and fill_mask.

    vocab_file defaults to the vocab beside model_checkpoint_path (vocab.txt, or a keras-hub
    preset's), do_lower_case to the casing the checkpoint's files record, else to a guess
    (loading.find_or_guess_lower_case).

    Raises:
      FileExistsError: export_path exists and not `overwrite` (checked before any work).
      BertConfigError: the vocab's size differs from the config's vocab_size.
      CheckpointMismatchError: the checkpoint's variables do not fit the config (each named),
        or model_with_mlm from a checkpoint without a masked-LM head.
      ValueError: a bad export_type, or no model_checkpoint_path for a model export.
    """
    if export_type not in EXPORT_TYPES:
        raise ValueError(f"export_type must be one of {EXPORT_TYPES}, got {export_type!r}")
    if tf.io.gfile.exists(export_path) and not overwrite:
        raise FileExistsError(
            f"export path {export_path} already exists; choose another one or pass --overwrite"
        )
    check_export_path_replaceable(export_path, "--export_path")
    if tokenize_with_offsets and export_type != "preprocessing":
        raise ValueError(
            "tokenize_with_offsets applies to export_type=preprocessing (the tokenizer), "
            f"not to export_type={export_type}"
        )
    if preserve_unused_tokens and export_type not in ("preprocessing", "fill_mask"):
        raise ValueError(
            "preserve_unused_tokens applies to the exports that tokenize text "
            f"(export_type=preprocessing or fill_mask), not to export_type={export_type}: "
            "export the preprocessor with it"
        )
    model_checkpoint_path = resolve_checkpoint_url(model_checkpoint_path)
    vocab_file = vocab_file or loading.find_vocab_file(model_checkpoint_path)
    if not vocab_file:
        raise ValueError(
            "vocab_file is required (no vocab.txt or keras-hub vocabulary beside "
            f"model_checkpoint_path {model_checkpoint_path!r})"
        )
    if do_lower_case is None:
        do_lower_case = loading.find_or_guess_lower_case(model_checkpoint_path, vocab_file)

    if export_type == "preprocessing":
        return export_bert_preprocessor(
            export_path,
            vocab_file,
            do_lower_case,
            default_seq_length,
            overwrite=overwrite,
            tokenize_with_offsets=tokenize_with_offsets,
            preserve_unused_tokens=preserve_unused_tokens,
        )

    if not model_checkpoint_path:
        raise ValueError(f"export_type={export_type} needs model_checkpoint_path")
    bert_config_file = bert_config_file or loading.find_bert_config(model_checkpoint_path)
    if not bert_config_file:
        raise FileNotFoundError(
            f"no bert_config.json or config.json beside {model_checkpoint_path}; "
            "pass --bert_config_file"
        )
    config = loading.read_bert_config(bert_config_file)
    check_vocab_matches_config(config, vocab_file, bert_config_file)
    checkpoint_format = checkpoint_format or loading.detect_checkpoint_format(model_checkpoint_path)
    encoder = BertEncoder.from_bert_config(config)
    pretrainer = None
    if export_type == "model":
        encoder.build()
        loading.load_bert_weights(encoder, model_checkpoint_path, checkpoint_format)
    else:
        # A next-sentence head in the checkpoint is skipped; the masked-LM head must be there.
        pretrainer = BertPretrainer.from_bert_config(encoder, config, use_next_sentence_label=False)
        pretrainer.build()
        try:
            loading.load_bert_weights(
                pretrainer, model_checkpoint_path, checkpoint_format, require_heads=True
            )
        except CheckpointMismatchError as error:
            raise CheckpointMismatchError(
                f"{error}\n--export_type={export_type} needs the masked-LM head "
                "(cls/predictions/...); --export_type=model exports the encoder alone"
            ) from error
        if export_type == "model_with_mlm":
            # The module's pooled_output uses the pooler, which a pretrainer without the
            # next-sentence head does not: read as the bare encoder, a checkpoint without one
            # (a BertForMaskedLM file) says that its pooler is randomly initialized.
            loading.load_bert_weights(encoder, model_checkpoint_path, checkpoint_format)
    logging.info(
        "Exporting %s (%s, %s) to %s",
        model_checkpoint_path,
        checkpoint_format,
        export_type,
        export_path,
    )
    if export_type == "fill_mask":
        return export_fill_mask_serving_model(
            pretrainer,
            BertInputPacker(
                vocab_file,
                default_seq_length,
                do_lower_case,
                preserve_unused_tokens=preserve_unused_tokens,
            ),
            fill_mask_top_k,
            export_path,
            overwrite=overwrite,
        )
    return export_bert_encoder(
        encoder,
        export_path,
        vocab_file,
        do_lower_case,
        config,
        pretrainer=pretrainer,
        overwrite=overwrite,
    )
