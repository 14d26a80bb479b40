"""Which variable of our models is which weight of BERT, keyed by the original TF1 names.

Every checkpoint layout (original TF1, safetensors) is described relative to this one list, so a
new layout needs only its own name table. The original TF1 names are the canonical keys because
they are what BERT users and the original code know.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import re

import numpy as np
from absl import logging


@dataclasses.dataclass(frozen=True)
class WeightEntry:
    """One weight of a BERT model.

    tf1_name: the variable name in the original Google checkpoints, e.g.
      "bert/encoder/layer_0/attention/self/query/kernel".
    variable: our Keras variable holding it.
    tf1_shape: its shape in the original layout (ours may differ by a reshape or transpose).
    transpose: True when the original stores the transpose of our kernel ("output_weights" of the
      heads are [num_classes, hidden] where a Keras Dense kernel is [hidden, num_classes]).
    part: which piece of a model it belongs to: "encoder", "pooler" (the encoder's [CLS]
      dense layer), "masked_lm", "next_sentence", "classifier", "span", "tagger" or
      "multiple_choice".
    """

    tf1_name: str
    variable: object
    tf1_shape: tuple
    transpose: bool = False
    part: str = "encoder"

    def to_model_value(self, tf1_value: np.ndarray) -> np.ndarray:
        """Converts a value in the original layout to the shape of our variable."""
        value = np.asarray(tf1_value)
        if value.shape != tuple(self.tf1_shape):
            raise ValueError(
                f"{self.tf1_name}: shape {list(value.shape)} in the checkpoint, expected "
                f"{list(self.tf1_shape)} for this model"
            )
        if self.transpose:
            value = value.T
        return value.reshape(tuple(self.variable.shape))

    def to_tf1_value(self) -> np.ndarray:
        """Our variable's value in the original layout and dtype float32."""
        value = np.asarray(self.variable.numpy(), dtype=np.float32)
        if self.transpose:
            return value.reshape(tuple(self.tf1_shape)[::-1]).T
        return value.reshape(tuple(self.tf1_shape))


def _dense(prefix, dense, in_size, out_size, part):
    return [
        WeightEntry(f"{prefix}/kernel", dense.kernel, (in_size, out_size), part=part),
        WeightEntry(f"{prefix}/bias", dense.bias, (out_size,), part=part),
    ]


def _layer_norm(prefix, layer_norm, size, part):
    return [
        WeightEntry(f"{prefix}/gamma", layer_norm.gamma, (size,), part=part),
        WeightEntry(f"{prefix}/beta", layer_norm.beta, (size,), part=part),
    ]


def encoder_entries(encoder) -> list[WeightEntry]:
    """The weights of a BertEncoder under the original `bert/...` names."""
    hidden = encoder.hidden_size
    embeddings = encoder.embeddings
    entries = [
        WeightEntry(
            "bert/embeddings/word_embeddings",
            embeddings.word_embeddings.embeddings,
            (encoder.vocab_size, hidden),
        ),
        WeightEntry(
            "bert/embeddings/token_type_embeddings",
            embeddings.token_type_embeddings.embeddings,
            (encoder.type_vocab_size, hidden),
        ),
        WeightEntry(
            "bert/embeddings/position_embeddings",
            embeddings.position_embeddings,
            (encoder.max_position_embeddings, hidden),
        ),
        *_layer_norm("bert/embeddings/LayerNorm", embeddings.layer_norm, hidden, "encoder"),
    ]
    for index, block in enumerate(encoder.transformer_layers):
        prefix = f"bert/encoder/layer_{index}"
        attention = block.attention
        # Keras MultiHeadAttention keeps q/k/v kernels as [hidden, heads, head_size] and the
        # output kernel as [heads, head_size, hidden]; the original has plain [hidden, hidden].
        for name, dense in (
            ("query", attention.query_dense),
            ("key", attention.key_dense),
            ("value", attention.value_dense),
        ):
            entries += _dense(f"{prefix}/attention/self/{name}", dense, hidden, hidden, "encoder")
        entries += _dense(
            f"{prefix}/attention/output/dense", attention.output_dense, hidden, hidden, "encoder"
        )
        entries += _layer_norm(
            f"{prefix}/attention/output/LayerNorm", block.attention_layer_norm, hidden, "encoder"
        )
        entries += _dense(
            f"{prefix}/intermediate/dense",
            block.intermediate_dense,
            hidden,
            encoder.intermediate_size,
            "encoder",
        )
        entries += _dense(
            f"{prefix}/output/dense",
            block.output_dense,
            encoder.intermediate_size,
            hidden,
            "encoder",
        )
        entries += _layer_norm(
            f"{prefix}/output/LayerNorm", block.output_layer_norm, hidden, "encoder"
        )
    entries += _dense("bert/pooler/dense", encoder.pooler, hidden, hidden, "pooler")
    return entries


def _output_weights(prefix, dense, hidden, num_classes, part):
    # The original heads store [num_classes, hidden] "output_weights" and use transpose_b.
    return [
        WeightEntry(
            f"{prefix}output_weights",
            dense.kernel,
            (num_classes, hidden),
            transpose=True,
            part=part,
        ),
        WeightEntry(f"{prefix}output_bias", dense.bias, (num_classes,), part=part),
    ]


def classifier_head_entries(head, hidden_size: int) -> list[WeightEntry]:
    """A ClassificationHead's weights under run_classifier.py's names: `output_weights`
    [num_classes, hidden_size] and `output_bias` [num_classes]."""
    return _output_weights("", head.dense, hidden_size, head.num_classes, "classifier")


def model_entries(model) -> list[WeightEntry]:
    """The weights of any of our BERT models (encoder, pretrainer, classifier, span labeler,
    token tagger, multiple-choice model).

    An unbuilt model is built first. Heads use the names of the original scripts: `cls/predictions/...`
    and `cls/seq_relationship/...` (run_pretraining.py), `output_weights`/`output_bias`
    (run_classifier.py), `cls/squad/...` (run_squad.py); the tagger's are `cls/tagger/...`, the
    multiple-choice model's `cls/multiple_choice/...`.
    """
    from official_bert.models import (
        BertClassifier,
        BertEncoder,
        BertMultipleChoice,
        BertPretrainer,
        BertSpanLabeler,
        BertTokenTagger,
    )

    if not model.built:
        model.build()  # every model here builds its variables without an input shape
    if isinstance(model, BertEncoder):
        return encoder_entries(model)
    entries = encoder_entries(model.encoder)
    hidden = model.encoder.hidden_size
    if isinstance(model, BertPretrainer):
        head = model.masked_lm
        entries += _dense(
            "cls/predictions/transform/dense", head.transform_dense, hidden, hidden, "masked_lm"
        )
        entries += _layer_norm(
            "cls/predictions/transform/LayerNorm", head.transform_layer_norm, hidden, "masked_lm"
        )
        entries.append(
            WeightEntry(
                "cls/predictions/output_bias",
                head.output_bias,
                (model.encoder.vocab_size,),
                part="masked_lm",
            )
        )
        if model.next_sentence is not None:
            entries += _output_weights(
                "cls/seq_relationship/", model.next_sentence.dense, hidden, 2, "next_sentence"
            )
    elif isinstance(model, BertClassifier):
        entries += classifier_head_entries(model.classifier, hidden)
    elif isinstance(model, BertSpanLabeler):
        entries += _output_weights("cls/squad/", model.span.dense, hidden, 2, "span")
    elif isinstance(model, BertTokenTagger):
        # No original script tags tokens; the names follow run_squad.py's per-token head.
        entries += _output_weights(
            "cls/tagger/", model.tagger.dense, hidden, model.num_tags, "tagger"
        )
    elif isinstance(model, BertMultipleChoice):
        # No original script either: one score per choice, under names of the same pattern.
        entries += _output_weights(
            "cls/multiple_choice/", model.multiple_choice.dense, hidden, 1, "multiple_choice"
        )
    else:
        encoder_hint = (
            "; its encoder (model.encoder) has one: load the pre-trained weights into that"
            if isinstance(getattr(model, "encoder", None), BertEncoder)
            else ""
        )
        raise TypeError(
            f"no weight table for {type(model).__name__} (the original layout has names for "
            "a BertEncoder and the heads of BertPretrainer, BertClassifier, BertSpanLabeler, "
            f"BertTokenTagger and BertMultipleChoice){encoder_hint}"
        )
    return entries


# === Matching a checkpoint against a model ===
# The parts a model may start without (fine-tuning starts from a checkpoint without them).
HEAD_PARTS = ("masked_lm", "next_sentence", "classifier", "span", "tagger", "multiple_choice")
# The parts of a bare encoder: what every checkpoint of a BERT holds, but for the pooler.
ENCODER_PARTS = ("encoder", "pooler")
# Heads whose number of outputs is the model's choice (labels, tags): a checkpoint's own size
# is reported in CheckpointMismatchError.head_sizes, so that a converter can build its model.
SIZED_HEAD_PARTS = ("classifier", "tagger")
# The heads whose other size in a checkpoint head_sizes reports: the sized ones, and the
# multiple-choice head, which Hugging Face files name as a sentence classifier's (a 3-label
# classifier's file holds a 3-output head for it), so that training from such a file starts a
# new head rather than failing.
_SIZE_REPORTED_PARTS = (*SIZED_HEAD_PARTS, "multiple_choice")


class CheckpointMismatchError(ValueError):
    """A checkpoint whose variables do not fit the model (missing, unexpected or mis-shaped).

    head_sizes: {part: the number of outputs the checkpoint's head has} for each head of
      SIZED_HEAD_PARTS (or the multiple-choice head) whose number of outputs alone differs from
      the model's.
    """

    def __init__(self, message: str, head_sizes: dict[str, int] | None = None):
        super().__init__(message)
        self.head_sizes = dict(head_sizes or {})


def skippable_parts(
    entries: list[WeightEntry], missing: list[WeightEntry], require_heads: bool, model
) -> set[str]:
    """The parts none of whose weights are in the checkpoint and that `model` may keep
    initialized: a head (unless `require_heads`), and the pooler, which checkpoints of models
    without one lack (Hugging Face's BertForQuestionAnswering, BertForTokenClassification and
    BertForMaskedLM), unless `require_heads` and the model uses it (so that a file of a model
    without a pooler is not taken for one of a model with one)."""
    optional = [] if require_heads else list(HEAD_PARTS)
    if not (require_heads and uses_pooler(model)):
        optional.append("pooler")
    absent = set()
    for part in optional:
        part_entries = [e for e in entries if e.part == part]
        if part_entries and all(e in missing for e in part_entries):
            absent.add(part)
    return absent


# Set around a load whose encoder's pooled_output nobody reads (extract_features writes layer
# outputs only). A context variable rather than a keyword: the readers of every layout pass a
# model through two or three functions, none of which needs to know of it.
_POOLED_OUTPUT_UNUSED = contextvars.ContextVar("pooled_output_unused", default=False)


@contextlib.contextmanager
def pooled_output_unused():
    """Within: the bare encoders loaded are used for their per-token outputs only, so a
    checkpoint without a pooler (of a question-answering, tagging or masked-LM model) is read
    without the warning that their pooled_output would be random."""
    token = _POOLED_OUTPUT_UNUSED.set(True)
    try:
        yield
    finally:
        _POOLED_OUTPUT_UNUSED.reset(token)


def uses_pooler(model) -> bool:
    """Whether `model`'s outputs depend on the pooler: a bare encoder (its pooled_output, unless
    within pooled_output_unused), a sentence classifier, a pre-training model with the
    next-sentence head."""
    from official_bert.models import (
        BertClassifier,
        BertEncoder,
        BertMultipleChoice,
        BertPretrainer,
    )

    if isinstance(model, BertPretrainer):
        return model.next_sentence is not None
    if isinstance(model, BertEncoder):
        return not _POOLED_OUTPUT_UNUSED.get()
    return isinstance(model, (BertClassifier, BertMultipleChoice))


def log_kept_initializations(parts: set[str], model, source: str) -> None:
    """Says which parts of `model` were absent from `source` and keep their initialization:
    a warning for a pooler the model uses and for a masked-LM head (pre-training continued from
    an encoder-only checkpoint, such as a sentence-embedding model's, starts that head from
    scratch), else an info line."""
    for part in sorted(parts):
        if part == "masked_lm":
            logging.warning(
                "%s holds no masked-LM head (cls/predictions/...), as an encoder-only checkpoint "
                "does: %s's masked-LM head starts from its random initialization (its loss "
                "starts near ln(vocab size), not where the checkpoint's pre-training ended)",
                source,
                type(model).__name__,
            )
        elif part == "pooler" and uses_pooler(model):
            logging.warning(
                "%s holds no pooler (bert/pooler/dense), as a checkpoint of a model without one "
                "(such as a question-answering, token-classification or masked-LM model) does: "
                "%s's pooled_output comes from a randomly initialized pooler",
                source,
                type(model).__name__,
            )
        else:
            logging.info(
                "%s: no '%s' weights in %s; keeping its initialization", part, part, source
            )


def sized_head_mismatches(mis_shaped: list[tuple[WeightEntry, tuple]]) -> dict[str, int]:
    """{part: the checkpoint's number of outputs} from the (entry, checkpoint shape in the
    original layout) pairs that differ, when the only difference of a sized head (or the
    multiple-choice head) is its number of outputs (its bias's length)."""
    sizes = {}
    for entry, shape in mis_shaped:
        if entry.part in _SIZE_REPORTED_PARTS and entry.tf1_name.endswith("output_bias"):
            sizes[entry.part] = int(shape[0])
    for entry, shape in mis_shaped:
        if entry.part in sizes and tuple(shape[1:]) != tuple(entry.tf1_shape[1:]):
            sizes.pop(entry.part)  # not only the size: a head of another hidden width
    return sizes


# The BertConfig sizes that the original-layout shapes tell: (field, TF1 name, axis).
_SIZES_IN_SHAPES = (
    ("vocab_size", "bert/embeddings/word_embeddings", 0),
    ("hidden_size", "bert/embeddings/word_embeddings", 1),
    ("intermediate_size", "bert/encoder/layer_0/intermediate/dense/kernel", 1),
    ("max_position_embeddings", "bert/embeddings/position_embeddings", 0),
    ("type_vocab_size", "bert/embeddings/token_type_embeddings", 0),
)
_TF1_LAYER = re.compile(r"^bert/encoder/layer_(\d+)/")


def layer_count(names, layer_pattern: re.Pattern = _TF1_LAYER) -> int | None:
    """1 + the highest layer index among `names` that `layer_pattern` (group 1: the index)
    matches; None where none does."""
    indexes = [int(match.group(1)) for name in names if (match := layer_pattern.match(name))]
    return max(indexes) + 1 if indexes else None


def config_from_shapes(shapes: dict[str, tuple], num_layers: int | None) -> dict[str, int]:
    """The BertConfig sizes that `shapes` ({original TF1 name: shape in the original layout})
    tell, in the order of bert_config.json's fields, with `num_layers` as num_hidden_layers
    (left out when None); a size whose variable is not in `shapes` is left out."""
    sizes = {}
    for field, name, axis in _SIZES_IN_SHAPES:
        if name in shapes and len(shapes[name]) > axis:
            sizes[field] = int(shapes[name][axis])
        if field == "hidden_size" and num_layers is not None:
            sizes["num_hidden_layers"] = num_layers
    return sizes


def _config_difference(checkpoint_sizes: dict[str, int], model) -> str | None:
    """One line naming the config fields whose sizes differ between the checkpoint (sizes as
    config_from_shapes's) and `model`; None where none does (a head's or one variable's
    mismatch)."""
    shapes = {entry.tf1_name: entry.tf1_shape for entry in model_entries(model)}
    ours = config_from_shapes(shapes, layer_count(shapes))
    differ = [f for f, size in checkpoint_sizes.items() if f in ours and ours[f] != size]
    if not differ:
        return None
    same = [f"{f} {size}" for f, size in checkpoint_sizes.items() if f not in differ]
    return (
        "the checkpoint's shapes say "
        + ", ".join(f"{f} {checkpoint_sizes[f]}" for f in differ)
        + (f" ({', '.join(same)})" if same else "")
        + ", but the model's config says "
        + ", ".join(f"{f} {ours[f]}" for f in differ)
    )


def raise_if_mismatched(
    source: str,
    model,
    missing: list[str],
    mis_shaped: list[str],
    unexpected: list[str],
    head_sizes: dict[str, int] | None = None,
    checkpoint_sizes: dict[str, int] | None = None,
) -> None:
    """One CheckpointMismatchError that lists every problem, or nothing when there is none;
    head_sizes as CheckpointMismatchError's. checkpoint_sizes: the config sizes the checkpoint's
    shapes tell (config_from_shapes); those that differ from the model's are said on the first
    line, since a config that does not match the checkpoint is the usual cause, and a list of
    every variable's shapes does not say which field is wrong."""
    problems = [
        f"{title}:\n  " + "\n  ".join(lines)
        for title, lines in (
            ("missing from the checkpoint", missing),
            ("shape mismatch", mis_shaped),
            ("not used by the model", unexpected),
        )
        if lines
    ]
    if problems:
        difference = checkpoint_sizes and _config_difference(checkpoint_sizes, model)
        raise CheckpointMismatchError(
            f"{source} does not fit {type(model).__name__}"
            + (f": {difference}" if difference else "")
            + ":\n"
            + "\n".join(problems),
            head_sizes=head_sizes,
        )
