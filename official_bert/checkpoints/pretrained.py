"""A pre-trained BERT's encoder and tokenizer from its folder in one call each, whatever the
layout: the original release's folder, a Hugging Face folder, a keras-hub preset or a
checkpoint of this project.

  encoder = load_encoder("uncased_L-12_H-768_A-12")
  tokenizer = load_tokenizer("uncased_L-12_H-768_A-12")

The config and vocab are the files beside the weights (bert_config.json or config.json;
vocab.txt or a keras-hub preset's vocabulary), as the scripts find them for --init_checkpoint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from official_bert.checkpoints import loading
from official_bert.checkpoints.checkpoint_url import resolve_checkpoint_url
from official_bert.config import check_vocab_matches_config

if TYPE_CHECKING:
    from official_bert.models import BertEncoder
    from official_bert.tokenization import FullTokenizer

# The model and tokenizer modules are imported where they are used, so that importing
# official_bert.checkpoints (as the scripts do for its format names) stays light.


def load_encoder(
    path: str,
    bert_config_file: str | None = None,
    checkpoint_format: str | None = None,
    **encoder_kwargs,
) -> BertEncoder:
    """A built BertEncoder with the weights at `path` (a folder, file or checkpoint prefix in
    any layout load_bert_weights reads, or an http(s) URL of one: checkpoint_url.py; heads in
    the checkpoint are left out).

    bert_config_file: default the config beside `path`. encoder_kwargs go to
    BertEncoder.from_bert_config (e.g. dtype="mixed_bfloat16").

    Raises:
      FileNotFoundError: no config beside `path` and none given.
      CheckpointMismatchError: the weights do not fit the config (each variable named).
    """
    from official_bert.models import BertEncoder

    path = _located(path)
    bert_config_file = bert_config_file or loading.find_bert_config(path)
    if bert_config_file is None:
        raise FileNotFoundError(
            f"no bert_config.json or config.json beside {path}; pass bert_config_file"
        )
    encoder = BertEncoder.from_bert_config(
        loading.read_bert_config(bert_config_file), **encoder_kwargs
    )
    encoder.build()
    loading.load_bert_weights(encoder, path, checkpoint_format)
    return encoder


def load_tokenizer(
    path: str, vocab_file: str | None = None, do_lower_case: bool | None = None
) -> FullTokenizer:
    """The original FullTokenizer of the model at `path`: its vocab (default the one beside
    the weights) and casing (default a keras-hub preset's record of it, else guessed from the
    release's folder name or the vocab's letters, as export_tfhub.py guesses).

    Raises:
      FileNotFoundError: no vocab beside `path` and none given.
      ValueError: do_lower_case contradicts a released Google checkpoint's casing.
      BertConfigError: the vocab's size differs from the config's vocab_size.
    """
    from official_bert.tokenization import FullTokenizer, validate_case_matches_checkpoint

    path = _located(path)
    vocab_file = vocab_file or loading.find_vocab_file(path)
    if vocab_file is None:
        raise FileNotFoundError(
            f"no vocab.txt (or keras-hub vocabulary) beside {path}; pass vocab_file"
        )
    if do_lower_case is None:
        do_lower_case = loading.find_or_guess_lower_case(path, vocab_file)
    validate_case_matches_checkpoint(do_lower_case, path)
    config_file = loading.find_bert_config(path)
    if config_file is not None:
        check_vocab_matches_config(loading.read_bert_config(config_file), vocab_file, config_file)
    return FullTokenizer(vocab_file, do_lower_case=do_lower_case)


def _located(path: str) -> str:
    """`path`, or the local folder of the weights an http(s) URL names (checkpoint_url.py);
    a FileNotFoundError naming it where it is neither a file or folder nor a TF checkpoint
    prefix."""
    import tensorflow as tf

    path = resolve_checkpoint_url(str(path))
    if not tf.io.gfile.exists(path) and not tf.io.gfile.exists(path + ".index"):
        raise FileNotFoundError(f"{path}: no such file, folder or checkpoint")
    return path
