"""BertConfig: the original `bert_config.json`, read and written as the original release does."""

from __future__ import annotations

import copy
import json

import tensorflow as tf
from absl import logging

from official_bert.atomic_output import atomic_output
from official_bert.utf8_text import read_json_file

# The 11 fields of the original modeling.BertConfig, with its defaults.
_ORIGINAL_DEFAULTS = {
    "vocab_size": None,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 512,
    "type_vocab_size": 16,
    "initializer_range": 0.02,
}
_INT_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)


class BertConfigError(ValueError):
    """A bert_config.json (or its vocab) that cannot describe a BERT model."""


class BertConfig:
    """Hyper-parameters of a BERT encoder, as in the original `bert_config.json`.

    The 11 original fields are attributes. Keys the original does not know (for example
    `embedding_size` or a converter's notes) are kept in `extra_fields` and written back
    unchanged, so a read/write round trip never loses information.
    """

    def __init__(self, vocab_size: int, **kwargs):
        fields = dict(_ORIGINAL_DEFAULTS)
        fields["vocab_size"] = vocab_size
        self.extra_fields: dict = {}
        for key, value in kwargs.items():
            if key in fields:
                fields[key] = value
            else:
                self.extra_fields[key] = value
        for key, value in fields.items():
            setattr(self, key, value)
        self.validate()

    # === Validation ===
    def validate(self, source: str = "BertConfig") -> None:
        for name in _INT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise BertConfigError(
                    f"{source}: field '{name}' must be a positive integer, found {value!r}"
                )
        if self.hidden_size % self.num_attention_heads:
            raise BertConfigError(
                f"{source}: hidden_size ({self.hidden_size}) is not a multiple of "
                f"num_attention_heads ({self.num_attention_heads})"
            )
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise BertConfigError(
                    f"{source}: field '{name}' must be in [0, 1), found {value!r}"
                )
        if not isinstance(self.hidden_act, str):
            raise BertConfigError(
                f"{source}: field 'hidden_act' must be an activation name, found {self.hidden_act!r}"
            )

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    # === Dict and JSON ===
    @classmethod
    def from_dict(cls, values: dict, source: str = "BertConfig") -> BertConfig:
        if not isinstance(values, dict):
            raise BertConfigError(
                f"{source}: expected a JSON object, found {type(values).__name__}"
            )
        if "vocab_size" not in values:
            raise BertConfigError(f"{source}: the required field 'vocab_size' is missing")
        values = dict(values)
        config = cls.__new__(cls)
        config.extra_fields = {}
        for key, default in _ORIGINAL_DEFAULTS.items():
            setattr(config, key, values.pop(key, default))
        config.extra_fields = values
        config.validate(source)
        return config

    def to_dict(self) -> dict:
        values = {key: getattr(self, key) for key in _ORIGINAL_DEFAULTS}
        values.update(copy.deepcopy(self.extra_fields))
        return values

    @classmethod
    def from_json_file(cls, path: str) -> BertConfig:
        if not tf.io.gfile.exists(path):
            raise FileNotFoundError(f"BERT config file not found: {path}")
        return cls.from_dict(read_json_file(path, BertConfigError), source=path)

    def to_json_string(self) -> str:
        # Written as the original does: indent 2, sorted keys, trailing newline.
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, path: str) -> None:
        """Writes atomically: a reader never sees a half-written bert_config.json."""
        write_text_atomically(path, self.to_json_string())

    def __eq__(self, other) -> bool:
        return isinstance(other, BertConfig) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"BertConfig({self.to_dict()})"


def write_text_atomically(path: str, text: str) -> None:
    """Writes `text` to `path` through a temporary name and a rename."""
    with atomic_output(path) as temporary, tf.io.gfile.GFile(temporary, "w") as writer:
        writer.write(text)


def read_json_object(path: str) -> dict | None:
    """The JSON object in the file at `path`; None where the file is missing or is not UTF-8
    JSON holding an object (for the optional side files of a checkpoint folder, whose absence
    or damage means "not said there")."""
    try:
        with tf.io.gfile.GFile(path, "rb") as reader:
            values = json.loads(reader.read().decode("utf-8"))
    except (OSError, tf.errors.OpError, UnicodeDecodeError, ValueError):
        return None
    return values if isinstance(values, dict) else None


def count_vocab_lines(vocab_file: str) -> int:
    """The number of ids a vocab.txt spans, as the tokenizers read it (`load_vocab`): its lines,
    without empty ones at the end (`vocab_id_count`).

    Raises FileNotFoundError, or ValueError naming the file where it is a folder or not UTF-8
    (checked before counting: a UTF-16 file's "lines" mean nothing).
    """
    # Imported here: `import official_bert` reads configs without loading tensorflow_text.
    from official_bert.tokenization import load_vocab, vocab_id_count

    return vocab_id_count(load_vocab(vocab_file))


def check_vocab_matches_config(
    config: BertConfig, vocab_file: str, config_file: str | None = None
) -> None:
    """Raises BertConfigError when the vocab has more ids than `config.vocab_size` (its last
    tokens would have no row in the embedding table; the original silently produced NaNs or
    out-of-range ids, google-research/bert#82, #1138).

    A vocab with fewer ids than vocab_size is logged with a warning and accepted, as the
    original does: an embedding table padded (to a multiple of 8, say) has rows that no token
    reaches, and every id the vocab gives has its row.
    """
    lines = count_vocab_lines(vocab_file)
    where = config_file or "the BERT config"
    if lines > config.vocab_size:
        raise BertConfigError(
            f"vocab file {vocab_file} has {lines} lines but {where} says vocab_size = "
            f"{config.vocab_size}: the ids of its last {lines - config.vocab_size} tokens have "
            "no row in the embedding table (use the vocab.txt that was released with the "
            "checkpoint)"
        )
    if lines < config.vocab_size:
        logging.warning(
            "vocab file %s has %d lines, fewer than vocab_size = %d in %s: the embedding "
            "table's last %d rows belong to no token (a table padded, e.g. to a multiple of 8)",
            vocab_file,
            lines,
            config.vocab_size,
            where,
            config.vocab_size - lines,
        )
