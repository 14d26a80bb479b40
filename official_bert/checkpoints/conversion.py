"""Converting BERT weights between layouts, with bert_config.json and vocab.txt beside them."""

from __future__ import annotations

import os
from collections.abc import Sequence

import tensorflow as tf
from absl import logging

from official_bert.atomic_output import atomic_output
from official_bert.checkpoints import (
    head_labels,
    keras_hub_preset,
    keras_hub_weights,
    loading,
    safetensors_bert,
)
from official_bert.checkpoints.checkpoint_url import resolve_checkpoint_url
from official_bert.checkpoints.variable_table import CheckpointMismatchError, uses_pooler
from official_bert.config import BertConfig, check_vocab_matches_config
from official_bert.file_system import same_file

# The file (or prefix) each format is written to inside the output directory.
OUTPUT_NAMES = {
    "tf1": "bert_model.ckpt",
    "safetensors": "model.safetensors",
    "object": "model.ckpt",
    "keras_hub": keras_hub_preset.WEIGHTS_NAME,
}


def load_model_with_available_heads(
    config: BertConfig, path: str, checkpoint_format: str, architectures: Sequence[str] = ()
):
    """The richest of our models that the checkpoint fills completely: BertPretrainer with MLM
    and next-sentence heads or with the MLM head only; a fine-tuned BertClassifier,
    BertSpanLabeler, BertTokenTagger (with the checkpoint's own number of labels or tags) or
    BertMultipleChoice; else a bare BertEncoder.

    architectures: the Hugging Face classes the input's config.json names; the heads of a
      BertForTokenClassification and a BertForMultipleChoice are named as a sentence
      classifier's ("classifier"), so the one named is tried first (unnamed, a [1, hidden]
      head with a pooler is a 1-output sentence classifier's, a regressor's); the head of a
      class none of our models is (such as BertLMHeadModel, whose causal LM head is named as
      the MLM head) is not read: the encoder alone.
    """
    from official_bert.models import (
        BertClassifier,
        BertEncoder,
        BertMultipleChoice,
        BertPretrainer,
        BertSpanLabeler,
        BertTokenTagger,
    )

    # One encoder for every candidate (building it is most of a candidate's cost); a candidate
    # that does not fit is refused before its weights are assigned, or is followed by one whose
    # loading assigns every encoder weight again.
    encoder = BertEncoder.from_bert_config(config)
    encoder.build()
    # (the Hugging Face class, the sized part, the model of a size)
    candidates = [
        (
            "BertForPreTraining",
            None,
            lambda _: BertPretrainer.from_bert_config(
                encoder, config, use_next_sentence_label=True
            ),
        ),
        (
            "BertForMaskedLM",
            None,
            lambda _: BertPretrainer.from_bert_config(
                encoder, config, use_next_sentence_label=False
            ),
        ),
        (
            "BertForSequenceClassification",
            "classifier",
            lambda size: BertClassifier(encoder, num_classes=size),
        ),
        ("BertForQuestionAnswering", None, lambda _: BertSpanLabeler(encoder)),
        (
            "BertForTokenClassification",
            "tagger",
            lambda size: BertTokenTagger(encoder, num_tags=size),
        ),
        ("BertForMultipleChoice", None, lambda _: BertMultipleChoice(encoder)),
    ]
    # A token classifier's and a multiple-choice model's heads are named as a sentence
    # classifier's: the class config.json names is tried first.
    named_first = {"BertForTokenClassification", "BertForMultipleChoice"} & set(architectures)
    candidates.sort(key=lambda candidate: candidate[0] not in named_first)
    others = [name for name in architectures if name not in safetensors_bert.HF_CLASSES]
    if others:
        # A head of another kind would be read as one of ours that computes something else
        # from it (BertLMHeadModel's causal LM head as the MLM head): the encoder only.
        logging.warning(
            "%s is a Hugging Face %s, which none of this project's models is: its head is not "
            "converted",
            path,
            ", ".join(others),
        )
        candidates = []
    for _, sized_part, make_model in candidates:
        size = 2  # a first guess; a checkpoint's head of another size says its own
        for _ in range(2):
            model = make_model(size)
            model.build()
            try:
                loading.load_bert_weights(model, path, checkpoint_format, require_heads=True)
                return model
            except CheckpointMismatchError as error:
                logging.info("Not a %s checkpoint: %s", type(model).__name__, error)
                if error.head_sizes.get(sized_part, size) == size:
                    break
                size = error.head_sizes[sized_part]
    loading.load_bert_weights(encoder, path, checkpoint_format)
    return encoder


def convert_checkpoint(
    input_checkpoint: str,
    output_dir: str,
    output_format: str,
    bert_config_file: str | None = None,
    vocab_file: str | None = None,
    input_format: str | None = None,
) -> str:
    """Converts `input_checkpoint` into `output_dir` in `output_format`.

    Writes the weights (heads included when the input has them: pre-training heads, or a
    fine-tuned classifier's, SQuAD span head, token tagger or multiple-choice head, see
    load_model_with_available_heads), `bert_config.json` (and for safetensors also the HF
    `config.json` of the matching class, e.g. BertForSequenceClassification with its number of
    labels) and, when a vocab is known, `vocab.txt`; for keras_hub, a keras-hub BertBackbone
    preset instead (its config.json, tokenizer.json with the input's casing and the vocabulary
    as an asset; a classifier's head as a BertTextClassifier task, a masked-LM head that runs
    as keras-hub's as a BertMaskedLM, no other heads). Returns the path of the written weights.
    """
    input_checkpoint = resolve_checkpoint_url(input_checkpoint)
    input_format = input_format or loading.detect_checkpoint_format(input_checkpoint)
    bert_config_file = bert_config_file or loading.find_bert_config(input_checkpoint)
    if bert_config_file is None:
        raise FileNotFoundError(
            f"no bert_config.json or config.json beside {input_checkpoint}; pass --bert_config_file"
        )
    config = loading.read_bert_config(bert_config_file)
    if output_format == "keras_hub":
        keras_hub_preset.check_keras_hub_can_run(config, bert_config_file)
        keras_hub_preset.check_preset_output_dir(output_dir)
    if vocab_file is None:
        vocab_file = loading.find_vocab_file(input_checkpoint)
    if vocab_file is not None:
        check_vocab_matches_config(config, vocab_file, bert_config_file)

    hf_config_file = head_labels.hf_config_file(input_checkpoint, bert_config_file)
    model = load_model_with_available_heads(
        config,
        input_checkpoint,
        input_format,
        safetensors_bert.read_hf_architectures(hf_config_file),
    )
    keep_pooler = _keeps_a_trained_pooler(model, input_checkpoint, input_format, output_format)
    _warn_of_a_masked_lm_head_of_its_own(model, output_format)
    tf.io.gfile.makedirs(output_dir)
    output_path = os.path.join(output_dir, OUTPUT_NAMES[output_format])
    if output_format == "keras_hub":
        _write_keras_hub_preset(model, output_dir, config, vocab_file, input_checkpoint)
        return output_path
    if output_format == "safetensors":
        written = safetensors_bert.write_safetensors_checkpoint(model, output_path, keep_pooler)
    else:
        written = loading.save_bert_weights(model, output_path, output_format)
    config.to_json_file(os.path.join(output_dir, "bert_config.json"))
    if output_format == "safetensors":
        architecture, num_labels = safetensors_bert.hf_architecture(model)
        safetensors_bert.write_hf_config(
            config,
            os.path.join(output_dir, "config.json"),
            architecture,
            num_labels,
            num_labels
            and head_labels.head_label_names(input_checkpoint, num_labels, hf_config_file),
            _problem_type(model, input_checkpoint, hf_config_file),
        )
    if vocab_file is not None:
        target = os.path.join(output_dir, "vocab.txt")
        if not same_file(vocab_file, target):
            with atomic_output(target) as temporary:
                tf.io.gfile.copy(vocab_file, temporary, overwrite=True)
        if output_format == "safetensors":
            safetensors_bert.write_hf_tokenizer_config(
                os.path.join(output_dir, safetensors_bert.TOKENIZER_CONFIG_NAME),
                loading.find_or_guess_lower_case(input_checkpoint, vocab_file),
                min(512, config.max_position_embeddings),
            )
    logging.info(
        "Converted %s (%s) to %s (%s, %s)",
        input_checkpoint,
        input_format,
        written,
        output_format,
        type(model).__name__,
    )
    return written


def _keeps_a_trained_pooler(model, path: str, checkpoint_format: str, output_format: str) -> bool:
    """Whether a safetensors output of `model`, whose transformers class has no pooler (a
    masked-LM model's), should hold the input's trained one all the same (a TF Hub encoder with
    its MLM head has one: transformers' BertModel reads it, pooled_output as the module's).
    Warns where the input holds no pooler (a question-answering, token-classification or
    masked-LM model's file) and the output holds one all the same, the initialization of
    `model`'s: read as trained by whatever reads the output (a classifier fine-tuned from it)."""
    from official_bert.models import BertEncoder, BertPretrainer

    if uses_pooler(model) and not isinstance(model, BertEncoder):
        return False  # chosen with every part required: the input has a pooler
    try:
        # A bare encoder with every part required fails exactly where there is no pooler.
        loading.load_bert_weights(
            getattr(model, "encoder", model), path, checkpoint_format, require_heads=True
        )
    except CheckpointMismatchError:
        if output_format == "safetensors" and not uses_pooler(model):
            return False  # written as transformers' class of that model, which has no pooler
        logging.warning(
            "%s holds no pooler (bert/pooler/dense); the %s output holds a randomly initialized "
            "one, which a model reading pooled_output from it (a sentence classifier fine-tuned "
            "from it) would start from",
            path,
            output_format,
        )
        return False
    # A span labeler's or tagger's pooler is never trained, whatever the input holds.
    return (
        output_format == "safetensors"
        and not uses_pooler(model)
        and isinstance(model, BertPretrainer)
    )


def _warn_of_a_masked_lm_head_of_its_own(model, output_format: str) -> None:
    """Warns where `model`'s masked-LM head runs another activation or LayerNorm epsilon than
    its encoder (a keras-hub BertMaskedLM's head) and the output is read elsewhere as one that
    runs the encoder's: transformers' BertForMaskedLM (safetensors: its config.json has no
    field for it) and the original code (tf1). This project reads the output's
    bert_config.json, which records it (masked_lm_hidden_act, masked_lm_layer_norm_eps)."""
    from official_bert.models import BertPretrainer

    if output_format not in ("tf1", "safetensors") or not isinstance(model, BertPretrainer):
        return
    head, encoder = model.masked_lm, model.encoder
    if (head.activation, head.layer_norm_epsilon) == (
        encoder.activation,
        encoder.layer_norm_epsilon,
    ):
        return
    logging.warning(
        "The masked-LM head runs %r with LayerNorm epsilon %s, the encoder %r with %s; the %s "
        "output's bert_config.json records it for this project, but %s runs the encoder's "
        "activation and epsilon in the head, so its masked-LM logits would differ",
        head.activation,
        head.layer_norm_epsilon,
        encoder.activation,
        encoder.layer_norm_epsilon,
        output_format,
        "transformers' BertForMaskedLM" if output_format == "safetensors" else "the original code",
    )


def _problem_type(model, input_checkpoint: str, hf_config_file: str) -> str | None:
    """Hugging Face's `problem_type` of a sentence classifier: the input config.json's, else
    "multi_label_classification" for a multi-label run's checkpoint, "regression" for a
    one-output head (STS-B's scores: said, not left for transformers to infer from the labels'
    dtype); None otherwise."""
    from official_bert.models import BertClassifier

    if not isinstance(model, BertClassifier):
        return None
    problem_type = safetensors_bert.read_hf_problem_type(hf_config_file)
    if problem_type is None and head_labels.multi_label_run(input_checkpoint):
        problem_type = "multi_label_classification"
    if problem_type is None and model.classifier.num_classes == 1:
        problem_type = "regression"
    return problem_type


def _write_keras_hub_preset(model, output_dir, config, vocab_file, input_checkpoint) -> None:
    """A keras-hub preset of `model` in output_dir: its encoder as a BertBackbone, and its head
    as a task where keras-hub has one that computes the same (_keras_hub_task); the tokenizer's
    casing is the input's own record of it (a keras-hub preset's), else guessed from the names
    and vocab."""
    do_lower_case = vocab_file is not None and loading.find_or_guess_lower_case(
        input_checkpoint, vocab_file
    )
    encoder = getattr(model, "encoder", model)
    # keras-hub's metadata.json counts the backbone's parameters, a task preset's too.
    parameter_count = encoder.count_params()
    task = _keras_hub_task(model, output_dir)
    keras_hub_preset.begin_preset_write(output_dir, parameter_count)
    written = keras_hub_weights.write_keras_hub_weights(
        model, os.path.join(output_dir, keras_hub_preset.WEIGHTS_NAME)
    )
    if task is not None:
        keras_hub_weights.write_keras_hub_task_weights(
            model,
            os.path.join(output_dir, keras_hub_preset.TASK_WEIGHTS_NAME),
            with_preprocessor=vocab_file is not None,
        )
    keras_hub_preset.write_keras_hub_preset_files(
        output_dir,
        config,
        vocab_file,
        bool(do_lower_case),
        task,
        getattr(model, "num_classes", None),
    )
    logging.info(
        "Converted %s to a keras-hub %s preset %s (lowercase %s)",
        input_checkpoint,
        task or "BertBackbone",
        os.path.dirname(written) or ".",
        bool(do_lower_case),
    )


def _keras_hub_task(model, output_dir: str) -> str | None:
    """The keras-hub task `model` is written as: a BertClassifier as a BertTextClassifier, a
    BertPretrainer whose masked-LM head runs as keras-hub's (the exact GELU, epsilon 1e-5) as a
    BertMaskedLM; None (the encoder's BertBackbone alone) otherwise. Warns of each head left
    out: keras-hub has no BERT task for a next-sentence, span, tag or multiple-choice head, and
    its BertMaskedLM would compute other logits from a head that runs otherwise (the
    original's, which runs the encoder's tanh GELU and epsilon 1e-12)."""
    from official_bert.models import BertClassifier, BertPretrainer

    task, written = None, None
    if isinstance(model, BertClassifier):
        task, written = "BertTextClassifier", "classifier"
    elif isinstance(model, BertPretrainer) and keras_hub_preset.runs_keras_hub_masked_lm_head(
        model.masked_lm
    ):
        task, written = "BertMaskedLM", "masked_lm"
    for part in _heads(model):
        if part == written:
            continue
        if part == "masked_lm":
            logging.warning(
                "%s: the masked-LM head is not written: it runs %r with LayerNorm epsilon %s, "
                "and keras-hub's BertMaskedLM head the exact GELU with epsilon 1e-5 whatever "
                "its config says, so it would compute other logits from these weights",
                output_dir,
                model.masked_lm.activation,
                model.masked_lm.layer_norm_epsilon,
            )
        else:
            logging.warning(
                "%s: the %s head is not written (keras-hub has no BERT task for it)",
                output_dir,
                part,
            )
    return task


def _heads(model) -> list[str]:
    """The head parts of `model` (none for a bare encoder)."""
    from official_bert.checkpoints.variable_table import ENCODER_PARTS, model_entries

    return sorted({entry.part for entry in model_entries(model)} - set(ENCODER_PARTS))
