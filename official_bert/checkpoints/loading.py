"""One entry point for BERT weights in any supported layout."""

from __future__ import annotations

import os

import tensorflow as tf
from absl import logging

from official_bert.checkpoints import (
    keras_h5_bert,
    keras_hub_preset,
    keras_hub_weights,
    object_checkpoint,
    original_tf1,
    pytorch_bert,
    safetensors_bert,
)
from official_bert.checkpoints.damaged_checkpoint import damaged_checkpoint_named
from official_bert.checkpoints.tf1_hub_module import (
    is_tf1_hub_module,
    module_bert_config,
    module_do_lower_case,
    module_vocab_file,
)
from official_bert.checkpoints.tf_hub_encoder import (
    is_tf_hub_encoder,
    read_tf_hub_encoder_arrays,
    tf_hub_encoder_config,
    tf_hub_encoder_lower_case,
)
from official_bert.file_system import check_input_is_a_file
from official_bert.utf8_text import read_json_file

# tf1: the original Google layout (bert_model.ckpt, `bert/...` names);
# safetensors: HF BertModel names in a .safetensors file;
# object: this project's own tf.train.Checkpoint of a Keras model;
# pytorch: HF BertModel names in PyTorch's pytorch_model.bin (read only, without PyTorch);
# h5: transformers' TensorFlow 2 weights, tf_model.h5 (read only);
# keras_hub: a keras-hub BertBackbone preset, Keras 3 model.weights.h5 (the encoder written);
# tf_hub: a TF2 BERT encoder SavedModel of the TF Hub BERT API (read only; tf_hub_encoder.py).
CHECKPOINT_FORMATS = ("tf1", "safetensors", "object", "pytorch", "h5", "keras_hub", "tf_hub")
WRITABLE_CHECKPOINT_FORMATS = ("tf1", "safetensors", "object", "keras_hub")


# Weight files of other frameworks that some BERT repositories hold beside pytorch_model.bin:
# their names, what they are, and the argument of transformers' from_pretrained that reads them.
_OTHER_FRAMEWORK_FILES = {
    "flax_model.msgpack": ("Flax weights", ", from_flax=True"),
}
_OTHER_FRAMEWORK_SUFFIXES = {
    ".msgpack": "flax_model.msgpack",
}


def _holds_tf_checkpoint(path: str) -> bool:
    """A directory with a TF `checkpoint` state file, or a file that is a TF checkpoint's
    prefix (its .index beside it)."""
    if tf.io.gfile.isdir(path):
        return original_tf1.folder_checkpoint_prefix(path) is not None
    return tf.io.gfile.exists(path + ".index")


def _holds_weights(path: str, names: tuple, suffixes: tuple) -> bool:
    """A file with one of `suffixes` that is not part of a TF checkpoint, or a directory with
    one of the files `names` and no TF checkpoint."""
    if _holds_tf_checkpoint(path):
        return False
    if tf.io.gfile.isdir(path):
        return any(tf.io.gfile.exists(os.path.join(path, name)) for name in names)
    return path.endswith(suffixes)


def _is_safetensors_file(path: str) -> bool:
    """A file in the safetensors layout whatever its name (save_bert_weights writes the name it
    is given): an 8-byte little-endian header length, then the header's JSON object."""
    if tf.io.gfile.exists(path + ".index") or not tf.io.gfile.exists(path):
        return False
    with tf.io.gfile.GFile(path, "rb") as reader:
        head = reader.read(9)
    return len(head) == 9 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") > 1


def _refuse_other_frameworks(path: str) -> None:
    """Raises a ValueError saying how to convert, where `path` holds only another framework's
    weights (a file of theirs, or a directory with one and no TF checkpoint)."""
    if tf.io.gfile.isdir(path):
        if original_tf1.folder_checkpoint_prefix(path) is not None:
            return
        found = [n for n in _OTHER_FRAMEWORK_FILES if tf.io.gfile.exists(os.path.join(path, n))]
        directory = path
    else:
        suffix = os.path.splitext(path)[1]
        if suffix not in _OTHER_FRAMEWORK_SUFFIXES or tf.io.gfile.exists(path + ".index"):
            return
        found = [_OTHER_FRAMEWORK_SUFFIXES[suffix]]
        directory = os.path.dirname(path) or "."
    if not found:
        return
    what, argument = _OTHER_FRAMEWORK_FILES[found[0]]
    raise ValueError(
        f"{path}: {what} ({', '.join(found)}) are not read here. BERT weights are read from an "
        "original TF checkpoint (bert_model.ckpt), Hugging Face safetensors (model.safetensors), "
        "PyTorch (pytorch_model.bin) or TensorFlow 2 (tf_model.h5) weights, or a checkpoint of "
        "this project. Where transformers and its framework are installed, write safetensors "
        "once:\n"
        '  python -c "import transformers; transformers.BertModel.'
        f"from_pretrained('{directory}'{argument}).save_pretrained('{directory}-safetensors')\"\n"
        "(model.safetensors and config.json; copy vocab.txt beside them) and pass that directory."
    )


def detect_checkpoint_format(path: str) -> str:
    """Which layout `path` holds: "tf1", "safetensors", "object", "pytorch", "h5" or
    "keras_hub".

    `path` may be a safetensors file, a PyTorch weights file (`pytorch_model.bin`, `.pt`,
    `.pth`), transformers' `tf_model.h5`, a directory holding one of them (or the shard index
    of the first two), a keras-hub preset directory (or its Keras 3 `model.weights.h5`), a TF
    checkpoint prefix, or a directory with a TF `checkpoint` state file (preferred to other
    files beside it). Flax weights (`flax_model.msgpack`) are a ValueError
    that says how to convert them.
    """
    if _holds_weights(
        path,
        (safetensors_bert.WEIGHTS_NAME, safetensors_bert.INDEX_NAME),
        (".safetensors",),
    ) or (not tf.io.gfile.isdir(path) and _is_safetensors_file(path)):
        return "safetensors"
    if _holds_weights(
        path, (pytorch_bert.WEIGHTS_NAME, pytorch_bert.INDEX_NAME), pytorch_bert.FILE_SUFFIXES
    ):
        return "pytorch"
    if keras_hub_preset.holds_keras_hub_preset(path) and not _holds_tf_checkpoint(path):
        return "keras_hub"
    if is_tf_hub_encoder(path):
        return "tf_hub"
    if _holds_weights(path, (keras_h5_bert.WEIGHTS_NAME,), (keras_h5_bert.FILE_SUFFIX,)):
        return "h5"
    _refuse_other_frameworks(path)
    prefix = original_tf1.resolve_checkpoint_prefix(path)
    names = [name for name, _ in tf.train.list_variables(prefix)]
    if "_CHECKPOINTABLE_OBJECT_GRAPH" in names:
        return "object"
    if any(name.startswith("bert/") for name in names):
        return "tf1"
    raise ValueError(
        f"{prefix}: not a BERT checkpoint (no 'bert/...' variables and no object graph); "
        f"first variables: {names[:5]}"
    )


def checkpoint_read_errors_named(path: str):
    """damaged_checkpoint_named for a checkpoint as the loaders take it: a folder holding a TF
    checkpoint is named by that checkpoint's prefix, so that the error lists the prefix's files
    with their sizes (the folder's own `<folder>.*` are none)."""
    prefix = original_tf1.folder_checkpoint_prefix(path) if tf.io.gfile.isdir(path) else None
    return damaged_checkpoint_named(prefix or path)


def load_bert_weights(model, path: str, checkpoint_format: str | None = None, **kwargs) -> str:
    """Loads BERT weights from `path` into a built model; returns the format that was read.

    Keyword arguments (e.g. `require_heads`) go to the format's reader.

    Raises:
      DamagedCheckpointError: a file of the checkpoint is cut short or damaged (naming them).
    """
    with checkpoint_read_errors_named(path):
        checkpoint_format = checkpoint_format or detect_checkpoint_format(path)
        if checkpoint_format == "tf1":
            original_tf1.read_original_checkpoint(path, model, **kwargs)
        elif checkpoint_format == "safetensors":
            safetensors_bert.read_safetensors_checkpoint(path, model, **kwargs)
        elif checkpoint_format == "object":
            object_checkpoint.read_object_checkpoint(path, model, **kwargs)
        elif checkpoint_format == "pytorch":
            pytorch_bert.read_pytorch_checkpoint(path, model, **kwargs)
        elif checkpoint_format == "h5":
            keras_h5_bert.read_h5_checkpoint(path, model, **kwargs)
        elif checkpoint_format == "keras_hub":
            keras_hub_weights.read_keras_hub_checkpoint(path, model, **kwargs)
        elif checkpoint_format == "tf_hub":
            arrays = read_tf_hub_encoder_arrays(path)
            original_tf1.load_tf1_named_arrays(arrays, model, f"TF Hub encoder {path}", **kwargs)
        else:
            raise ValueError(
                f"unknown checkpoint format {checkpoint_format!r}; expected {CHECKPOINT_FORMATS}"
            )
    return checkpoint_format


def save_bert_weights(model, path: str, checkpoint_format: str) -> str:
    """Writes a built model's weights at `path` in `checkpoint_format`; returns what was written."""
    if checkpoint_format == "tf1":
        return original_tf1.write_original_checkpoint(model, path)
    if checkpoint_format == "safetensors":
        return safetensors_bert.write_safetensors_checkpoint(model, path)
    if checkpoint_format == "object":
        return object_checkpoint.write_object_checkpoint(model, path)
    if checkpoint_format == "keras_hub":
        return keras_hub_weights.write_keras_hub_weights(model, path)
    raise ValueError(
        f"cannot write checkpoint format {checkpoint_format!r}; expected one of "
        f"{WRITABLE_CHECKPOINT_FORMATS}"
    )


def read_bert_config(path: str):
    """A BertConfig from an original `bert_config.json`, a Hugging Face `config.json` or a
    keras-hub preset's `config.json` (a BertBackbone's), or the one a TF Hub module folder holds
    (a TF1 module's in its variables and graph, a TF2 encoder's as an asset or in the module).

    The first two spell "gelu" differently (tanh form in the original, erf form in HF), so they
    must not be confused: a file named `bert_config.json` is the original's whatever keys it
    holds (HF never writes that name, and the original ignores keys it does not know); another
    with HF-only keys (`model_type`, `architectures`, `layer_norm_eps`) is read as HF.
    """

    from official_bert.config import BertConfig, BertConfigError

    if is_tf1_hub_module(path):
        return module_bert_config(path)
    if is_tf_hub_encoder(path):
        return tf_hub_encoder_config(path)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"BERT config file not found: {path}")
    # A folder here is not a module ($BERT_BASE_DIR itself): named, not TF's "Is a directory".
    check_input_is_a_file(path, "bert_config_file", usual_name="bert_config.json")
    values = read_json_file(path, BertConfigError)
    hf_keys = isinstance(values, dict) and {"model_type", "architectures", "layer_norm_eps"} & set(
        values
    )
    if hf_keys and os.path.basename(path) != "bert_config.json":
        return safetensors_bert.bert_config_from_hf(values, source=path)
    if keras_hub_preset.is_keras_hub_config(values):
        return keras_hub_preset.bert_config_from_keras_hub(values, source=path)
    return BertConfig.from_dict(values, source=path)


def find_bert_config(init_checkpoint: str | None) -> str | None:
    """The config file that sits beside a checkpoint (bert_config.json or HF config.json); for
    a TF Hub module (TF1 or TF2), the module's folder, which holds it (read_bert_config reads it
    there)."""
    if not init_checkpoint:
        return None
    if is_tf1_hub_module(init_checkpoint) or is_tf_hub_encoder(init_checkpoint):
        return init_checkpoint
    directory = (
        init_checkpoint if tf.io.gfile.isdir(init_checkpoint) else os.path.dirname(init_checkpoint)
    )
    for name in ("bert_config.json", "config.json"):
        candidate = os.path.join(directory, name)
        if tf.io.gfile.exists(candidate):
            return candidate
    return None


def find_vocab_file(checkpoint_or_config: str | None) -> str | None:
    """The vocab that sits beside a checkpoint or config file: vocab.txt, a keras-hub preset's
    assets/tokenizer/vocabulary.txt or a TF Hub module's assets/vocab.txt; None where there is
    none."""
    if not checkpoint_or_config:
        return None
    if is_tf1_hub_module(checkpoint_or_config):
        return module_vocab_file(checkpoint_or_config)
    if is_tf_hub_encoder(checkpoint_or_config):
        return os.path.join(checkpoint_or_config, "assets", "vocab.txt")
    directory = (
        checkpoint_or_config
        if tf.io.gfile.isdir(checkpoint_or_config)
        else os.path.dirname(checkpoint_or_config)
    )
    candidate = os.path.join(directory, "vocab.txt")
    if tf.io.gfile.exists(candidate):
        return candidate
    return keras_hub_preset.preset_vocab_file(directory or ".")


def find_lower_case(checkpoint_or_config: str | None) -> bool | None:
    """The casing a checkpoint's own files record: a TF1 Hub module's tokenization_info, a TF2
    one's do_lower_case, a keras-hub preset's tokenizer.json, or a Hugging Face
    tokenizer_config.json's do_lower_case where its vocabulary agrees (below); else a released
    Google model's, which its name says (tokenization.released_model_lower_case); None where
    neither tells."""
    from official_bert.tokenization import released_model_lower_case

    if not checkpoint_or_config:
        return None
    recorded = _recorded_lower_case(checkpoint_or_config)
    return recorded if recorded is not None else released_model_lower_case(checkpoint_or_config)


def _recorded_lower_case(checkpoint_or_config: str) -> bool | None:
    """find_lower_case from the checkpoint's own files only."""
    if is_tf1_hub_module(checkpoint_or_config):
        return module_do_lower_case(checkpoint_or_config)
    if is_tf_hub_encoder(checkpoint_or_config):
        return tf_hub_encoder_lower_case(checkpoint_or_config)
    lowercase = keras_hub_preset.preset_lowercase(checkpoint_or_config)
    if lowercase is not None:
        return lowercase
    lowercase = safetensors_bert.read_hf_lowercase(checkpoint_or_config)
    if lowercase is False:
        from official_bert.tokenization import vocab_has_upper_case

        vocab_file = find_vocab_file(checkpoint_or_config)
        if vocab_file is not None and not vocab_has_upper_case(vocab_file):
            # Hugging Face's bert-base-chinese (and copies of it) records do_lower_case false
            # for a vocabulary without one upper-case letter, where Google's own Chinese model
            # lower-cases: kept as recorded, every capitalized Latin word would be [UNK].
            logging.info(
                "%s: tokenizer_config.json says do_lower_case false, but its vocabulary has no "
                "upper-case letter; not taken",
                checkpoint_or_config,
            )
            return None
    return lowercase


def find_or_guess_lower_case(checkpoint: str | None, vocab_file: str) -> bool:
    """A checkpoint's casing as its own files record it (find_lower_case), else guessed from its
    names and vocabulary (tokenization.guess_do_lower_case)."""
    lowercase = find_lower_case(checkpoint)
    if lowercase is None:
        from official_bert.tokenization import guess_do_lower_case

        lowercase = guess_do_lower_case(vocab_file, checkpoint)
        logging.info("do_lower_case not given; guessed %s from %s", lowercase, vocab_file)
    return lowercase
