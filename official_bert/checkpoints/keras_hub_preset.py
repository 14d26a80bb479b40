"""keras-hub BERT presets: the folder, its config and tokenizer files (the weights file is
keras_hub_weights.py).

A preset folder, as keras-hub's `save_to_preset` writes it (and its Kaggle and Hugging Face Hub
models hold):

  config.json                          {"class_name": "BertBackbone", "config": {...}}
  model.weights.h5                     the backbone's weights, Keras 3 HDF5 layout
  tokenizer.json                       the BertTokenizer's config ("lowercase")
  assets/tokenizer/vocabulary.txt      the WordPiece vocab, one token a line
  task.json, task.weights.h5           a task's config and its own weights (optional)
  metadata.json                        versions, parameter count, date

keras-hub registers its classes as `keras_hub>Name` and, for presets written by its
predecessor keras-nlp, as `keras_nlp>Name`; both are read. A BertBackbone always runs the tanh
GELU (the original BERT's "gelu") with LayerNorm epsilon 1e-12 and one dropout rate; a
BertMaskedLM's head (keras-hub's MaskedLMHead: dense, activation, LayerNorm, the projection
tied to the token embedding, a bias) always runs the exact erf GELU (Keras's "gelu") with
LayerNorm epsilon 1e-5, unlike the original's head, which runs the encoder's activation and
epsilon: a BertConfig read from such a preset says so in two extra fields
(KERAS_HUB_MASKED_LM_FIELDS), which BertPretrainer.from_bert_config builds the head with.
"""

from __future__ import annotations

import datetime
import json
import os

import tensorflow as tf
from absl import logging

from official_bert.atomic_output import atomic_output
from official_bert.file_system import is_file, parent_folder

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.weights.h5"
WEIGHTS_SUFFIX = ".weights.h5"
TASK_CONFIG_NAME = "task.json"
TASK_WEIGHTS_NAME = "task.weights.h5"
PREPROCESSOR_CONFIG_NAME = "preprocessor.json"
TOKENIZER_CONFIG_NAME = "tokenizer.json"
METADATA_NAME = "metadata.json"
VOCAB_PATH = os.path.join("assets", "tokenizer", "vocabulary.txt")
# keras-hub's index of sharded weights, which it writes for models above 10 GB (far beyond any
# BERT); not read.
SHARDED_WEIGHTS_INDEX = "model.weights.json"
# keras-nlp's name of BertTextClassifier, which keras-hub still registers.
TEXT_CLASSIFIER_CLASSES = ("BertTextClassifier", "BertClassifier")
MASKED_LM_CLASSES = ("BertMaskedLM",)
# What keras-hub's BertMaskedLM head runs, as BertConfig extra fields (bert_config.json keys)
# in this project's activation names: MaskedLMHead(intermediate_activation="gelu"), which
# keras.activations.get makes the exact GELU, and MaskedLMHead's default layer_norm_epsilon
# (BertMaskedLM passes none). No keras-hub BERT runs its head as its backbone (tanh GELU,
# 1e-12), which is what the original's head, tied to the encoder's settings, would run: read
# so, its logits would be 5e-4 off (7e-5 for the epsilon alone) on the test fixture. So the
# head gets these settings of its own (BertPretrainer's masked_lm_activation and
# masked_lm_layer_norm_epsilon), and is read from or written as a BertMaskedLM only where it
# runs them.
KERAS_HUB_MASKED_LM_FIELDS = {
    "masked_lm_hidden_act": "gelu_exact",
    "masked_lm_layer_norm_eps": 1e-5,
}
_PACKAGES = ("keras_hub", "keras_nlp")

# BertConfig field -> BertBackbone config field.
_SIZE_FIELDS = {
    "vocab_size": "vocabulary_size",
    "hidden_size": "hidden_dim",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "intermediate_size": "intermediate_dim",
    "max_position_embeddings": "max_sequence_length",
    "type_vocab_size": "num_segments",
}


def is_keras_hub_config(values) -> bool:
    """Whether a parsed JSON file is a keras-hub (or keras-nlp) object's config, of any model."""
    if not isinstance(values, dict) or not isinstance(values.get("config"), dict):
        return False
    registered = str(values.get("registered_name") or "")
    module = str(values.get("module") or "")
    return any(
        registered.startswith(package + ">") or module.startswith(package + ".")
        for package in _PACKAGES
    )


def read_keras_hub_json(path: str) -> dict | None:
    """The parsed keras-hub config at `path`; None where there is no such file or it is not one
    (missing, not JSON, not UTF-8, another kind of JSON)."""
    from official_bert.config import read_json_object

    values = read_json_object(path)
    return values if is_keras_hub_config(values) else None


def check_backbone_config(values: dict, source: str) -> None:
    """Raises a ValueError, naming `source`, where a keras-hub config is not a float
    BertBackbone's (another model, or quantized weights)."""
    class_name = values.get("class_name")
    if class_name != "BertBackbone":
        raise ValueError(
            f"{source}: a keras-hub {class_name} preset; only BertBackbone presets are BERT "
            "weights this project reads"
        )
    if "Quantized" in json.dumps(values["config"].get("dtype")):
        raise ValueError(
            f"{source}: a quantized keras-hub preset (dtype {values['config']['dtype']}); only "
            "float weights are read"
        )


def preset_task_class(directory: str) -> str | None:
    """The class of the preset's task (task.json's `class_name`, such as "BertMaskedLM");
    None without a readable keras-hub task.json."""
    task = read_keras_hub_json(os.path.join(directory, TASK_CONFIG_NAME))
    return task.get("class_name") if task else None


def runs_keras_hub_masked_lm_head(head) -> bool:
    """Whether a MaskedLMHead computes what keras-hub's BertMaskedLM head does from the same
    weights: its activation and LayerNorm epsilon are keras-hub's."""
    fields = KERAS_HUB_MASKED_LM_FIELDS
    return (
        head.activation == fields["masked_lm_hidden_act"]
        and head.layer_norm_epsilon == fields["masked_lm_layer_norm_eps"]
    )


def bert_config_from_keras_hub(values: dict, source: str = CONFIG_NAME):
    """A BertConfig from a keras-hub `BertBackbone` config.json (parsed) at `source`; errors
    name the file's own fields. Where a BertMaskedLM's task.json is beside it, the config
    carries that head's activation and epsilon (KERAS_HUB_MASKED_LM_FIELDS)."""
    from official_bert.config import BertConfig

    check_backbone_config(values, source)
    config = values["config"]
    missing = [theirs for theirs in _SIZE_FIELDS.values() if theirs not in config]
    if missing:
        raise ValueError(f"{source}: BertBackbone config lacks {missing}")
    for theirs in _SIZE_FIELDS.values():
        value = config[theirs]
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{source}: {theirs!r} must be a positive integer, found {value!r}")
    dropout = config.get("dropout", 0.1)
    if isinstance(dropout, bool) or not isinstance(dropout, int | float) or not 0 <= dropout < 1:
        raise ValueError(f"{source}: 'dropout' must be a number in [0, 1), found {dropout!r}")
    bert_values = {ours: config[theirs] for ours, theirs in _SIZE_FIELDS.items()}
    bert_values.update(
        hidden_act="gelu",
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        initializer_range=0.02,
    )
    if preset_task_class(os.path.dirname(source) or ".") in MASKED_LM_CLASSES:
        bert_values.update(KERAS_HUB_MASKED_LM_FIELDS)
    return BertConfig.from_dict(bert_values, source=source)


def preset_directory(path: str) -> str:
    """The preset folder of `path` (the folder itself, or the folder of a file in it)."""
    return parent_folder(path)


def holds_keras_hub_preset(path: str) -> bool:
    """Whether `path` is a keras-hub preset: a folder with keras-hub's config.json or its
    weights (a damaged config.json is then reported by what reads it), a `.weights.h5` file, or
    a preset's config.json or task.json."""
    if tf.io.gfile.isdir(path):
        return read_keras_hub_json(os.path.join(path, CONFIG_NAME)) is not None or any(
            is_file(os.path.join(path, name)) for name in (WEIGHTS_NAME, SHARDED_WEIGHTS_INDEX)
        )
    if path.endswith(WEIGHTS_SUFFIX):
        return True
    return (
        os.path.basename(path) in (CONFIG_NAME, TASK_CONFIG_NAME)
        and read_keras_hub_json(path) is not None
    )


def preset_vocab_file(path: str) -> str | None:
    """The preset's WordPiece vocab (assets/tokenizer/vocabulary.txt), where there is one."""
    candidate = os.path.join(preset_directory(path), VOCAB_PATH)
    return candidate if is_file(candidate) else None


def preset_lowercase(path: str) -> bool | None:
    """The preset BertTokenizer's `lowercase` (tokenizer.json); None without one.

    Raises:
      ValueError: `lowercase` is not true or false.
    """
    tokenizer_config = os.path.join(preset_directory(path), TOKENIZER_CONFIG_NAME)
    values = read_keras_hub_json(tokenizer_config)
    if values is None or values.get("class_name") != "BertTokenizer":
        return None
    if "lowercase" not in values["config"]:
        return None
    lowercase = values["config"]["lowercase"]
    if not isinstance(lowercase, bool):
        raise ValueError(
            f"{tokenizer_config}: 'lowercase' is {lowercase!r}, expected true or false"
        )
    return lowercase


def check_keras_hub_can_run(config, source: str = "this model") -> None:
    """Raises a ValueError where a keras-hub BertBackbone would compute other outputs than
    `config`'s model: it runs the tanh GELU (the original's "gelu") with LayerNorm epsilon
    1e-12, whatever its config says."""
    from official_bert.activations import canonical_activation_name

    activation = canonical_activation_name(config.hidden_act)
    epsilon = config.extra_fields.get("layer_norm_eps", 1e-12)
    if activation != "gelu" or epsilon != 1e-12:
        named = {"gelu_exact": " (the exact erf GELU, which Hugging Face configs call 'gelu')"}
        raise ValueError(
            f"{source}: hidden_act {config.hidden_act!r}{named.get(activation, '')}, LayerNorm "
            f"epsilon {epsilon}; a keras-hub BertBackbone runs the tanh GELU with epsilon 1e-12 "
            "whatever its config says, so it would compute other outputs from these weights. "
            "Keep this model in safetensors or this project's layout."
        )


# metadata.json's mark of a preset this project wrote (a folder holding one may be replaced).
_WRITER = "official_bert"


def _written_files() -> tuple[str, ...]:
    """The files of a preset this project writes, relative to its folder."""
    return (
        CONFIG_NAME,
        WEIGHTS_NAME,
        TOKENIZER_CONFIG_NAME,
        METADATA_NAME,
        VOCAB_PATH,
        TASK_CONFIG_NAME,
        TASK_WEIGHTS_NAME,
        PREPROCESSOR_CONFIG_NAME,
    )


def check_preset_output_dir(directory: str) -> None:
    """Raises a ValueError where `directory` holds files other than those of a preset this
    project writes (a keras-hub task's, another checkpoint's): they would be mixed into the new
    preset. A folder that does not exist, is empty, or holds such a preset may be written."""
    if not tf.io.gfile.isdir(directory):
        return
    ours = set(_written_files())
    found, others = [], []
    for root, _, names in tf.io.gfile.walk(directory):
        for name in names:
            # Temporary names of a write that was killed (atomic_output's `.NAME.tmp-PID`).
            if name.startswith(".") and ".tmp-" in name:
                continue
            relative = os.path.relpath(os.path.join(root, name), directory)
            found.append(relative)
            if relative not in ours:
                others.append(relative)
    if others:
        listed = ", ".join(sorted(others)[:5]) + (" ..." if len(others) > 5 else "")
        raise ValueError(
            f"output_dir {directory} holds files that are not part of the keras-hub preset "
            f"written there ({listed}); they would be read with it. Choose a new or empty folder."
        )
    from official_bert.config import read_json_object

    metadata = read_json_object(os.path.join(directory, METADATA_NAME)) or {}
    written_here = metadata.get("written_by") == _WRITER
    if found and not written_here:
        raise ValueError(
            f"output_dir {directory} holds a keras-hub preset that this project did not write; "
            "it is not replaced. Choose a new or empty folder."
        )


def begin_preset_write(directory: str, parameter_count: int) -> None:
    """Prepares `directory` (checked by check_preset_output_dir) before any file of a preset is
    written there: metadata.json first, marking the folder as this project's, so that a write
    cut short (killed, or failed on a full disk) may be repeated there; then an earlier
    preset's config.json goes, so that the folder is no preset until write_keras_hub_preset_files
    writes the new one last (an overwrite cut short would otherwise leave the new backbone
    beside the earlier preset's head and tokenizer, which keras-hub and this project load
    without a word)."""
    import keras

    from official_bert.config import write_text_atomically

    metadata = {
        "keras_version": keras.__version__,
        # The backbone's, as keras-hub records it for a task preset too.
        "parameter_count": int(parameter_count),
        "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S"),
        "written_by": _WRITER,
    }
    write_text_atomically(os.path.join(directory, METADATA_NAME), _json(metadata))
    config = os.path.join(directory, CONFIG_NAME)
    if tf.io.gfile.exists(config):
        tf.io.gfile.remove(config)


def write_keras_hub_preset_files(
    directory: str,
    config,
    vocab_file: str | None,
    do_lower_case: bool,
    task: str | None = None,
    num_classes: int | None = None,
) -> None:
    """Writes the files of a keras-hub preset beside its weights in `directory`:
    tokenizer.json and assets/tokenizer/vocabulary.txt (where a vocab is given), for a `task`
    ("BertTextClassifier" of `num_classes`, or "BertMaskedLM") its task.json and
    preprocessor.json (beside its task.weights.h5), and config.json last, so that the folder
    reads as a preset only once it is whole (metadata.json came first: begin_preset_write).
    The tokenizer lower-cases and strips accents together, as the original BERT's
    do_lower_case does; the preprocessor pads to the model's positions (at most 512), and a
    BertMaskedLM's masks as keras-hub's defaults do (the original's 15% of tokens, 80/10/10).
    """
    from official_bert.config import write_text_atomically

    check_keras_hub_can_run(config)
    # An earlier preset's files that this one does not have.
    stale = [] if vocab_file is not None else [TOKENIZER_CONFIG_NAME, VOCAB_PATH]
    if task is None:
        stale += [TASK_CONFIG_NAME, TASK_WEIGHTS_NAME]
    if task is None or vocab_file is None:
        stale.append(PREPROCESSOR_CONFIG_NAME)
    for name in stale:
        if tf.io.gfile.exists(os.path.join(directory, name)):
            tf.io.gfile.remove(os.path.join(directory, name))
    tokenizer = None
    if vocab_file is None:
        logging.warning(
            "%s: no vocab beside the input and none given; the preset holds no tokenizer "
            "(pass --vocab_file to write one)",
            directory,
        )
    else:
        with atomic_output(os.path.join(directory, VOCAB_PATH)) as temporary:
            tf.io.gfile.copy(vocab_file, temporary, overwrite=True)
        tokenizer = _keras_hub_object(
            "BertTokenizer",
            "int32",
            {
                "config_file": TOKENIZER_CONFIG_NAME,
                "vocabulary": None,
                "sequence_length": None,
                "lowercase": bool(do_lower_case),
                "strip_accents": bool(do_lower_case),
                "split": True,
                "suffix_indicator": "##",
                "oov_token": "[UNK]",
                "special_tokens": None,
                "special_tokens_in_strings": False,
            },
        )
        write_text_atomically(os.path.join(directory, TOKENIZER_CONFIG_NAME), _json(tokenizer))
    backbone_fields = {theirs: getattr(config, ours) for ours, theirs in _SIZE_FIELDS.items()}
    backbone_fields["dropout"] = config.hidden_dropout_prob
    backbone = _keras_hub_object("BertBackbone", "float32", backbone_fields)
    if task is not None:
        preprocessor = None
        if tokenizer is not None:
            preprocessor_fields = {
                "tokenizer": tokenizer,
                "config_file": PREPROCESSOR_CONFIG_NAME,
                "sequence_length": min(512, config.max_position_embeddings),
                "truncate": "round_robin",
            }
            if task == "BertMaskedLM":
                # BertMaskedLMPreprocessor's defaults, as keras-hub writes them.
                preprocessor_fields.update(
                    mask_selection_rate=0.15,
                    mask_selection_length=96,
                    mask_token_rate=0.8,
                    random_token_rate=0.1,
                )
            preprocessor = _keras_hub_object(f"{task}Preprocessor", "float32", preprocessor_fields)
            write_text_atomically(
                os.path.join(directory, PREPROCESSOR_CONFIG_NAME), _json(preprocessor)
            )
        task_fields = {"backbone": backbone, "preprocessor": preprocessor, "name": _MODULES[task]}
        if task == "BertTextClassifier":
            task_fields.update(
                num_classes=int(num_classes),
                activation="linear",  # the logits, as this project's classifier outputs
                dropout=config.hidden_dropout_prob,
            )
        task_values = {
            "module": f"keras_hub.src.models.bert.{_MODULES[task]}",
            "class_name": task,
            "config": task_fields,
            "registered_name": f"keras_hub>{task}",
        }
        write_text_atomically(os.path.join(directory, TASK_CONFIG_NAME), _json(task_values))
    write_text_atomically(os.path.join(directory, CONFIG_NAME), _json(backbone))


# The keras_hub.src.models.bert module of each class written, which is also the name keras-hub
# gives its object.
_MODULES = {
    "BertBackbone": "bert_backbone",
    "BertTokenizer": "bert_tokenizer",
    "BertTextClassifier": "bert_text_classifier",
    "BertTextClassifierPreprocessor": "bert_text_classifier_preprocessor",
    "BertMaskedLM": "bert_masked_lm",
    "BertMaskedLMPreprocessor": "bert_masked_lm_preprocessor",
}


def _keras_hub_object(class_name: str, dtype: str, fields: dict) -> dict:
    """A keras-hub layer's serialized config, as keras.saving writes it."""
    return {
        "module": f"keras_hub.src.models.bert.{_MODULES[class_name]}",
        "class_name": class_name,
        "config": {
            "name": _MODULES[class_name],
            "trainable": True,
            "dtype": {
                "module": "keras",
                "class_name": "DTypePolicy",
                "config": {"name": dtype},
                "registered_name": None,
            },
            **fields,
        },
        "registered_name": f"keras_hub>{class_name}",
    }


def _json(values: dict) -> str:
    return json.dumps(values, indent=4) + "\n"
