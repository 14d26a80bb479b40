"""BERT weights in safetensors with Hugging Face BertModel names: read and write, plus the
mapping between HF `config.json` and our BertConfig."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import tensorflow as tf
from absl import logging
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save_file

from official_bert.atomic_output import atomic_output
from official_bert.checkpoints.damaged_checkpoint import DamagedCheckpointError
from official_bert.checkpoints.hf_shard_index import (
    describe_weight_files,
    load_shards,
    weight_files,
)
from official_bert.checkpoints.variable_table import (
    config_from_shapes,
    layer_count,
    log_kept_initializations,
    model_entries,
    raise_if_mismatched,
    sized_head_mismatches,
    skippable_parts,
    uses_pooler,
)
from official_bert.config import BertConfig, read_json_object, write_text_atomically
from official_bert.file_system import local_copy, local_output, parent_folder
from official_bert.utf8_text import read_json_file

# === Name table: original TF1 name -> HF name (regex, replacement) ===
# Applied in order to the original name; the encoder's names get an optional "bert." prefix.
_NAME_TABLE = [
    (r"^cls/predictions/output_bias$", "cls.predictions.bias"),
    (r"^cls/squad/output_weights$", "qa_outputs.weight"),
    (r"^cls/squad/output_bias$", "qa_outputs.bias"),
    (r"^output_weights$", "classifier.weight"),
    (r"^output_bias$", "classifier.bias"),
    # BertForTokenClassification and BertForMultipleChoice call their heads "classifier" too (a
    # model has one head or another).
    (r"^cls/(tagger|multiple_choice)/output_weights$", "classifier.weight"),
    (r"^cls/(tagger|multiple_choice)/output_bias$", "classifier.bias"),
    (r"^cls/seq_relationship/output_weights$", "cls.seq_relationship.weight"),
    (r"^cls/seq_relationship/output_bias$", "cls.seq_relationship.bias"),
    (r"^bert/", ""),
    (r"/layer_(\d+)/", r"/layer/\1/"),
    (r"/(word|position|token_type)_embeddings$", r"/\1_embeddings/weight"),
    (r"/kernel$", "/weight"),
    (r"/gamma$", "/weight"),
    (r"/beta$", "/bias"),
    (r"/", "."),
]
# HF stores Linear weights as [out, in]; the original kernels are [in, out].
_TRANSPOSED_IN_HF = re.compile(r"/kernel$")
# An encoder layer's tensor (group 1: its index), with or without the `bert.` prefix.
_HF_LAYER = re.compile(r"^(?:bert\.)?encoder\.layer\.(\d+)\.")
# Present in HF files but not weights of their own: a buffer, and the decoder tied to the
# word embeddings (its bias is cls.predictions.bias).
_IGNORED_HF_NAMES = re.compile(
    r"(^|\.)embeddings\.position_ids$|^cls\.predictions\.decoder\.(weight|bias)$"
)
_KNOWN_HF_HEAD = re.compile(r"^(cls\.|classifier\.|qa_outputs\.)")
# Old (TF-converted) HF checkpoints spell LayerNorm parameters gamma/beta.
_LEGACY_SPELLINGS = {".weight": ".gamma", ".bias": ".beta"}


def hf_name(tf1_name: str) -> str:
    """The HF BertModel / BertForPreTraining name of an original TF1 variable name."""
    name = tf1_name
    for pattern, replacement in _NAME_TABLE:
        name = re.sub(pattern, replacement, name)
    return name


def _is_encoder_name(tf1_name: str) -> bool:
    return tf1_name.startswith("bert/")


# === Config mapping ===
# HF says "gelu" for the exact erf GELU; the original BERT says "gelu" for the tanh form.
_HF_TO_OURS_ACTIVATION = {
    "gelu": "gelu_exact",
    "gelu_new": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu_fast": "gelu",
    "relu": "relu",
    "tanh": "tanh",
    "silu": "swish",
    "swish": "swish",
    "linear": "linear",
}
_OURS_TO_HF_ACTIVATION = {
    "gelu": "gelu_new",
    "gelu_exact": "gelu",
    "relu": "relu",
    "tanh": "tanh",
    "swish": "silu",
    "linear": "linear",
}
_SHARED_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "max_position_embeddings",
    "type_vocab_size",
    "initializer_range",
)
# transformers.BertConfig's defaults where the original's differ.
_HF_DEFAULTS = {"vocab_size": 30522, "type_vocab_size": 2}


def bert_config_from_hf(hf_config: dict, source: str = "config.json") -> BertConfig:
    """Maps a Hugging Face BERT `config.json` to a BertConfig (activation names translated)."""
    model_type = hf_config.get("model_type", "bert")
    if model_type != "bert":
        raise ValueError(f"{source}: model_type is {model_type!r}, expected 'bert'")
    for field in ("is_decoder", "add_cross_attention"):
        if hf_config.get(field):
            raise ValueError(
                f"{source}: {field} is true (a causal or cross-attending BERT decoder, such as "
                "BertLMHeadModel); this project's BERT is the bidirectional encoder and would "
                "compute other outputs from these weights"
            )
    position_type = hf_config.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise ValueError(
            f"{source}: position_embedding_type {position_type!r} is not supported "
            "(only 'absolute', as the original BERT)"
        )
    activation = hf_config.get("hidden_act", "gelu")
    if activation not in _HF_TO_OURS_ACTIVATION:
        raise ValueError(
            f"{source}: hidden_act {activation!r} is not supported; expected one of "
            f"{sorted(_HF_TO_OURS_ACTIVATION)}"
        )
    # A field the file leaves out takes transformers' default, which differs from the original
    # bert_config.json's for these two (its type_vocab_size is 16, its vocab_size required).
    values = {**_HF_DEFAULTS, **{f: hf_config[f] for f in _SHARED_FIELDS if f in hf_config}}
    values["hidden_act"] = _HF_TO_OURS_ACTIVATION[activation]
    epsilon = hf_config.get("layer_norm_eps", 1e-12)
    if epsilon != 1e-12:
        values["layer_norm_eps"] = epsilon
    return BertConfig.from_dict(values, source=source)


def hf_config_from_bert_config(config: BertConfig, architecture: str = "BertModel") -> dict:
    """A Hugging Face `config.json` dict for a BertConfig."""
    activation = config.hidden_act
    from official_bert.activations import canonical_activation_name

    values = {field: getattr(config, field) for field in _SHARED_FIELDS}
    values.update(
        architectures=[architecture],
        model_type="bert",
        hidden_act=_OURS_TO_HF_ACTIVATION[canonical_activation_name(activation)],
        layer_norm_eps=config.extra_fields.get("layer_norm_eps", 1e-12),
        position_embedding_type="absolute",
        pad_token_id=0,
    )
    return values


def read_hf_config(path: str) -> BertConfig:
    """Reads a Hugging Face BERT config.json as a BertConfig."""
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"config.json not found: {path}")
    return bert_config_from_hf(read_json_file(path, ValueError), source=path)


# === Weights ===
WEIGHTS_NAME = "model.safetensors"
INDEX_NAME = "model.safetensors.index.json"


def safetensors_weight_files(path: str) -> list[tuple[str, frozenset[str] | None]]:
    """The files that hold the weights at `path` (hf_shard_index.weight_files): the file itself,
    or in the directory `path` model.safetensors, else the shards its index lists."""
    return weight_files(path, WEIGHTS_NAME, INDEX_NAME, "safetensors")


def _read_raw_tensor(path: str, header_info: dict, header_size: int) -> np.ndarray:
    # numpy has no bfloat16, so safetensors' numpy reader cannot return BF16 tensors; a BF16 value
    # is the high half of a float32, so widen the raw 16-bit words by hand.
    start, end = header_info["data_offsets"]
    with open(path, "rb") as reader:
        reader.seek(8 + header_size + start)
        raw = np.frombuffer(reader.read(end - start), dtype="<u2")
    return (raw.astype(np.uint32) << 16).view(np.float32).reshape(header_info["shape"])


def load_safetensors_arrays(path: str) -> dict[str, np.ndarray]:
    """All tensors of the safetensors weights at `path` (a file, or a directory as above), by
    name; BF16 widened to float32, other types as stored."""
    return load_shards(safetensors_weight_files(path), _load_safetensors_file)


def _load_safetensors_file(path: str) -> dict[str, np.ndarray]:
    with local_copy(path) as local:  # safetensors opens (maps) a local file itself
        return _load_local_safetensors_file(local)


# What a Git LFS pointer file starts with: the text `git clone` of a Hub repository leaves in
# place of each large file when git-lfs is not installed.
_GIT_LFS_POINTER_START = b"version https://git-lfs"


def _damaged_safetensors(path: str, reason: str) -> DamagedCheckpointError:
    """The error for the unreadable local safetensors file `path`, naming it and its size; a Git
    LFS pointer is named as such (the fix is `git lfs pull`, not another copy)."""
    size = os.path.getsize(path)
    with open(path, "rb") as reader:
        head = reader.read(len(_GIT_LFS_POINTER_START))
    if head == _GIT_LFS_POINTER_START:
        return DamagedCheckpointError(
            f"{path} ({size} bytes) is a Git LFS pointer, not the weights (a Hub repository "
            "cloned without git-lfs?): run `git lfs pull` in its folder, or download the file"
        )
    return DamagedCheckpointError(
        f"{path} ({size} bytes): not a readable safetensors file ({reason}); damaged or cut "
        "short: copy or download it again"
    )


def _read_safetensors_header(path: str) -> tuple[dict, int]:
    """The JSON header of the local safetensors file `path` (tensor name -> {"dtype", "shape",
    "data_offsets"}) and its length in bytes. The file starts with that length (8 bytes, little
    endian), then the header. Checked against the file's size before it is read: the 8 bytes of
    a damaged file (or the text "version " of a Git LFS pointer) can say any length up to 2**64.
    Raises DamagedCheckpointError naming the file and its size."""
    size = os.path.getsize(path)
    with open(path, "rb") as reader:
        head = reader.read(8)
        if len(head) < 8:
            raise _damaged_safetensors(path, "shorter than its 8-byte header length")
        header_size = int.from_bytes(head, "little")
        if header_size > size - 8:
            raise _damaged_safetensors(
                path,
                f"its header should take {header_size} bytes, the file has {size - 8} after "
                "the header length",
            )
        text = reader.read(header_size)
    try:
        header = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise _damaged_safetensors(path, f"its header is not JSON: {error}") from None
    if not isinstance(header, dict):
        raise _damaged_safetensors(
            path, f"its header is a JSON {type(header).__name__}, not an object"
        )
    return header, header_size


def _load_local_safetensors_file(path: str) -> dict[str, np.ndarray]:
    """All tensors of the local safetensors file `path` by name (BF16 widened to float32).
    Raises DamagedCheckpointError naming the file and its size when it cannot be read."""
    header, header_size = _read_safetensors_header(path)
    arrays = {}
    try:
        with safe_open(path, framework="numpy") as tensors:
            for name in tensors.keys():
                if header[name]["dtype"] == "BF16":
                    arrays[name] = _read_raw_tensor(path, header[name], header_size)
                else:
                    arrays[name] = tensors.get_tensor(name)
    except SafetensorError as error:
        raise _damaged_safetensors(path, str(error)) from None
    return arrays


def read_safetensors_checkpoint(path: str, model, require_heads: bool = False) -> int:
    """Loads BERT weights with HF names (with or without a `bert.` prefix) into `model`.

    Heads wholly absent from the file keep their initialization unless `require_heads`.
    Returns the number of variables loaded. Raises CheckpointMismatchError listing every missing,
    unexpected or mis-shaped tensor.
    """
    files = safetensors_weight_files(path)
    return read_hf_named_weights(
        load_shards(files, _load_safetensors_file),
        model,
        describe_weight_files(files, path, "safetensors file", "safetensors shards"),
        require_heads,
    )


def _in_other_layout(tf1_name: str, shape) -> list[int]:
    """`shape` of the weight `tf1_name` in the other layout: a dense kernel is [in, out] in the
    original and [out, in] in an HF file, either way round; other shapes are alike in both.
    Mismatch messages give both shapes in the file's layout, so that a transposed or resized
    weight does not read as two equal shapes."""
    shape = list(shape)
    return shape[::-1] if _TRANSPOSED_IN_HF.search(tf1_name) else shape


def read_hf_named_weights(
    arrays: dict[str, np.ndarray], model, source: str, require_heads: bool = False
) -> int:
    """Loads `arrays` (HF BertModel / BertForPreTraining names, torch layout) into `model`.

    source: what the arrays were read from, for messages ("safetensors file PATH", ...).
    Heads wholly absent from `arrays` keep their initialization unless `require_heads`.
    Returns the number of variables loaded. Raises CheckpointMismatchError listing every missing,
    unexpected or mis-shaped tensor.
    """
    encoder_prefix = "bert." if any(n.startswith("bert.embeddings.") for n in arrays) else ""
    entries = model_entries(model)

    def file_name(entry):
        name = hf_name(entry.tf1_name)
        if _is_encoder_name(entry.tf1_name):
            name = encoder_prefix + name
        if name not in arrays:
            for modern, legacy in _LEGACY_SPELLINGS.items():
                if "LayerNorm" in name and name.endswith(modern):
                    legacy_name = name[: -len(modern)] + legacy
                    if legacy_name in arrays:
                        return legacy_name
        return name

    names = {entry.tf1_name: file_name(entry) for entry in entries}
    missing = [e for e in entries if names[e.tf1_name] not in arrays]
    skipped = skippable_parts(entries, missing, require_heads, model)
    missing = [e for e in missing if e.part not in skipped]
    used = set(names.values())
    unexpected = [
        f"{name} {list(arrays[name].shape)}"
        for name in sorted(arrays)
        if name not in used
        and not _IGNORED_HF_NAMES.search(name)
        and not _KNOWN_HF_HEAD.match(name)
    ]
    loaded = [e for e in entries if e.part not in skipped]
    mis_shaped = []
    values = {}
    for entry in loaded:
        if entry in missing:
            continue
        value = arrays[names[entry.tf1_name]]
        if _TRANSPOSED_IN_HF.search(entry.tf1_name):
            value = value.T
        if tuple(value.shape) != tuple(entry.tf1_shape):
            mis_shaped.append((entry, tuple(value.shape)))
        else:
            values[entry.tf1_name] = value
    raise_if_mismatched(
        source,
        model,
        [f"{names[e.tf1_name]} (original {e.tf1_name})" for e in missing],
        [
            f"{names[e.tf1_name]}: file {list(arrays[names[e.tf1_name]].shape)}, "
            f"model expects {_in_other_layout(e.tf1_name, e.tf1_shape)}"
            for e, _ in mis_shaped
        ],
        unexpected,
        head_sizes=sized_head_mismatches(mis_shaped),
        checkpoint_sizes=config_from_shapes(
            {
                entry.tf1_name: _in_other_layout(entry.tf1_name, arrays[name].shape)
                for entry in entries
                if (name := names[entry.tf1_name]) in arrays
            },
            layer_count(arrays, _HF_LAYER),
        ),
    )
    for entry in loaded:
        value = entry.to_model_value(values[entry.tf1_name].astype(np.float32))
        entry.variable.assign(value.astype(entry.variable.dtype))
    decoder = arrays.get("cls.predictions.decoder.weight")
    if decoder is not None and "masked_lm" not in skipped:
        word_embeddings = arrays[names["bert/embeddings/word_embeddings"]]
        if decoder.shape != word_embeddings.shape or not np.array_equal(decoder, word_embeddings):
            logging.warning(
                "%s: cls.predictions.decoder.weight differs from the word embeddings; this model "
                "ties them, so the word embeddings are used for the MLM output",
                source,
            )
    log_kept_initializations(skipped, model, source)
    logging.info("Loaded %d tensors from %s", len(loaded), source)
    return len(loaded)


def write_safetensors_checkpoint(model, path: str, keep_pooler: bool = False) -> str:
    """Writes `model`'s weights as safetensors with HF names (torch layout, float32).

    A bare encoder is written as HF `BertModel` (no prefix); a model with heads with the
    `bert.` prefix on the encoder, as the matching HF class (`hf_architecture`) holds them: the
    span labeler, token tagger and a pre-training model without the next-sentence head are
    written without the pooler, which their HF classes do not have (a sentence classifier and
    a multiple-choice model, with it), unless `keep_pooler` (a trained pooler read from the
    input: transformers' BertModel reads it from the file, the head classes pass over it).
    Written atomically.
    """
    from official_bert.models import BertEncoder

    prefix = "" if isinstance(model, BertEncoder) else "bert."
    tensors = {}
    for entry in model_entries(model):
        if entry.part == "pooler" and not (keep_pooler or uses_pooler(model)):
            continue
        value = entry.to_tf1_value()
        if _TRANSPOSED_IN_HF.search(entry.tf1_name):
            value = value.T
        name = hf_name(entry.tf1_name)
        if _is_encoder_name(entry.tf1_name):
            name = prefix + name
        tensors[name] = np.ascontiguousarray(value, dtype=np.float32)
    with atomic_output(path) as temporary, local_output(temporary) as local:
        save_file(tensors, local, metadata={"format": "pt"})
    logging.info("Wrote %d tensors with HF BERT names to %s", len(tensors), path)
    return path


# The Hugging Face classes whose weights one of our models holds (hf_architecture).
HF_CLASSES = (
    "BertModel",
    "BertForPreTraining",
    "BertForMaskedLM",
    "BertForSequenceClassification",
    "BertForQuestionAnswering",
    "BertForTokenClassification",
    "BertForMultipleChoice",
)


def hf_architecture(model) -> tuple[str, int | None]:
    """The Hugging Face class whose weights `model` holds, and its number of labels (None for
    the models without labels): BertModel, BertForPreTraining, BertForMaskedLM,
    BertForSequenceClassification, BertForQuestionAnswering, BertForTokenClassification or
    BertForMultipleChoice."""
    from official_bert.models import (
        BertClassifier,
        BertEncoder,
        BertMultipleChoice,
        BertPretrainer,
        BertSpanLabeler,
        BertTokenTagger,
    )

    if isinstance(model, BertEncoder):
        return "BertModel", None
    if isinstance(model, BertPretrainer):
        return (
            "BertForPreTraining" if model.next_sentence is not None else "BertForMaskedLM"
        ), None
    if isinstance(model, BertClassifier):
        return "BertForSequenceClassification", model.num_classes
    if isinstance(model, BertSpanLabeler):
        return "BertForQuestionAnswering", None
    if isinstance(model, BertTokenTagger):
        return "BertForTokenClassification", model.num_tags
    if isinstance(model, BertMultipleChoice):
        return "BertForMultipleChoice", None
    raise TypeError(f"no Hugging Face class for {type(model).__name__}")


def _read_hf_config_values(path: str) -> dict:
    """A config.json's values ({} when `path` is not a readable JSON object)."""
    return read_json_object(path) or {}


def read_hf_architectures(path: str) -> list[str]:
    """The `architectures` a Hugging Face config.json names ([] when it names none or `path`
    is not one)."""
    architectures = _read_hf_config_values(path).get("architectures")
    return (
        [a for a in architectures or [] if isinstance(a, str)]
        if isinstance(architectures, list)
        else []
    )


def read_hf_label_names(path: str, count: int) -> list[str] | None:
    """The label names of a Hugging Face config.json's `id2label`, by id, when it names exactly
    ids 0 .. count - 1 with distinct names (else None: label2id could not hold them)."""
    id2label = _read_hf_config_values(path).get("id2label")
    if not isinstance(id2label, dict) or sorted(id2label) != sorted(map(str, range(count))):
        return None
    names = [str(id2label[str(index)]) for index in range(count)]
    return names if len(set(names)) == count else None


TOKENIZER_CONFIG_NAME = "tokenizer_config.json"


def read_hf_lowercase(path: str) -> bool | None:
    """The do_lower_case of the Hugging Face tokenizer_config.json beside `path` (a folder or a
    file in it); None without one or where it does not say."""
    directory = parent_folder(path)
    lowercase = _read_hf_config_values(os.path.join(directory, TOKENIZER_CONFIG_NAME)).get(
        "do_lower_case"
    )
    return lowercase if isinstance(lowercase, bool) else None


def write_hf_tokenizer_config(path: str, do_lower_case: bool, model_max_length: int) -> None:
    """Writes the tokenizer_config.json with which transformers' AutoTokenizer reads vocab.txt
    as this model's tokenizer: BertTokenizer, its casing (accents stripped where it
    lower-cases, as the original's do_lower_case), CJK characters split, the model's length."""
    values = {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": bool(do_lower_case),
        "strip_accents": None,  # transformers: follow do_lower_case, as the original
        "tokenize_chinese_chars": True,
        "model_max_length": int(model_max_length),
        "unk_token": "[UNK]",
        "sep_token": "[SEP]",
        "pad_token": "[PAD]",
        "cls_token": "[CLS]",
        "mask_token": "[MASK]",
    }
    write_text_atomically(path, json.dumps(values, indent=2, sort_keys=True))


# transformers' problem_type values of a sequence classifier.
_PROBLEM_TYPES = ("regression", "single_label_classification", "multi_label_classification")


def read_hf_problem_type(path: str) -> str | None:
    """The `problem_type` a Hugging Face config.json names (None when none or unknown)."""
    problem_type = _read_hf_config_values(path).get("problem_type")
    return problem_type if problem_type in _PROBLEM_TYPES else None


def write_hf_config(
    config: BertConfig,
    path: str,
    architecture: str = "BertModel",
    num_labels: int | None = None,
    label_names: list[str] | None = None,
    problem_type: str | None = None,
) -> None:
    """Writes a Hugging Face config.json for `config`; with `num_labels`, `id2label` and
    `label2id` (which set a head's size in transformers) of `label_names`, by default the
    generic names transformers gives (LABEL_0, ...); `problem_type` (one of _PROBLEM_TYPES)
    says how transformers' sequence classifier computes its loss (sigmoid per label for
    multi-label)."""
    values = hf_config_from_bert_config(config, architecture)
    if problem_type is not None:
        if problem_type not in _PROBLEM_TYPES:
            raise ValueError(f"problem_type must be one of {_PROBLEM_TYPES}, got {problem_type!r}")
        values["problem_type"] = problem_type
    if num_labels is not None:
        names = label_names or [f"LABEL_{index}" for index in range(num_labels)]
        if len(names) != num_labels or len(set(names)) != num_labels:
            raise ValueError(f"expected {num_labels} distinct label names, got {names}")
        values["id2label"] = {str(index): name for index, name in enumerate(names)}
        values["label2id"] = {name: index for index, name in enumerate(names)}
    write_text_atomically(path, json.dumps(values, indent=2, sort_keys=True))
