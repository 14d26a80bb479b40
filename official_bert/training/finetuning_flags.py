"""The flags run_classifier.py and run_multitask.py share: the original model, data and training
flags, the runner's flags, and the TF2 fine-tuning flags."""

from __future__ import annotations

import os

from absl import app, flags

from official_bert.checkpoints.loading import find_bert_config, read_bert_config
from official_bert.training.runner_flags import define_runner_flags, runner_flag_values


def define_finetuning_flags() -> None:
    """Defines the shared flags on absl's FLAGS (call once, at a script's import)."""
    # === The original flags ===
    flags.DEFINE_string(
        "bert_config_file", None, "bert_config.json (default: the one beside init_checkpoint)."
    )
    flags.DEFINE_string("vocab_file", None, "vocab.txt of the model (default: beside the config).")
    flags.DEFINE_string("output_dir", None, "Checkpoints, records, results and the export go here.")
    flags.DEFINE_string("init_checkpoint", None, "Initial weights: TF1, safetensors or ours.")
    flags.DEFINE_bool("do_lower_case", True, "Lower-case the input (uncased models).")
    flags.DEFINE_integer("max_seq_length", 128, "Wordpieces per example, after packing.")
    flags.DEFINE_bool("do_train", False, "Whether to train.")
    flags.DEFINE_bool("do_eval", False, "Whether to evaluate on the dev set.")
    flags.DEFINE_bool(
        "do_predict",
        False,
        "Whether to predict the test set (test_results.tsv; run_multitask.py: each task's, in "
        "output_dir/<task>/).",
    )
    flags.DEFINE_integer("train_batch_size", 32, "Global training batch size.")
    flags.DEFINE_integer("eval_batch_size", 8, "Evaluation batch size.")
    flags.DEFINE_integer("predict_batch_size", 8, "Prediction batch size.")
    flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate (Adam).")
    flags.DEFINE_float("num_train_epochs", 3.0, "Training epochs.")
    flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of the steps with linear warm-up.")
    define_runner_flags()  # the original TPU/loop flags and the runner's TF2 flags
    # === TF2 flags ===
    flags.DEFINE_integer(
        "seed", None, "Seed of the heads' initialization, dropout, shuffling (and task order)."
    )
    flags.DEFINE_integer(
        "max_train_examples", 0, "Train on the first N examples (of each task) only (0: all)."
    )
    define_hub_module_flag()
    flags.DEFINE_bool(
        "trim_padding",
        True,
        "Cut each batch to its longest example (same results, faster; not TPU).",
    )


def define_hub_module_flag() -> None:
    """--hub_module_handle (run_classifier.py, run_multitask.py, run_squad.py)."""
    flags.DEFINE_string(
        "hub_module_handle",
        None,
        "An encoder exported by export_tfhub.py (--export_type=model) to fine-tune instead of "
        "--init_checkpoint (its bert_config.json, vocab and casing are the defaults of those "
        "flags).",
    )


def hub_module_defaults() -> dict:
    """{"bert_config_file", "vocab_file", "do_lower_case"} of the exported encoder that
    --hub_module_handle names (the defaults of those flags), or {} without it."""
    if not flags.FLAGS.hub_module_handle:
        return {}
    from official_bert.export.exported_bert_encoder import read_exported_encoder_settings

    module = read_exported_encoder_settings(flags.FLAGS.hub_module_handle)
    return {name: module[name] for name in ("bert_config_file", "vocab_file", "do_lower_case")}


def finetuning_flag_values(
    bert_config_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool | None = None,
) -> dict:
    """The shared flags as keyword arguments of FinetuningOptions (the config read).

    The arguments are defaults that the flags override when given; without them those of the
    --hub_module_handle encoder apply, else the config is looked up beside init_checkpoint and
    the vocab beside the config.
    """
    values = flags.FLAGS
    module = hub_module_defaults()
    bert_config_file = bert_config_file or module.get("bert_config_file")
    vocab_file = vocab_file or module.get("vocab_file")
    if do_lower_case is None:
        do_lower_case = module.get("do_lower_case")
    config_file = (
        values.bert_config_file or bert_config_file or find_bert_config(values.init_checkpoint)
    )
    if not config_file:
        raise app.UsageError("--bert_config_file is required (none found beside init_checkpoint)")
    vocab_file = values.vocab_file or vocab_file
    if not vocab_file:
        vocab_file = os.path.join(os.path.dirname(config_file), "vocab.txt")
    if do_lower_case is None or values["do_lower_case"].present:
        do_lower_case = values.do_lower_case
    return dict(
        bert_config=read_bert_config(config_file),
        bert_config_file=config_file,
        vocab_file=vocab_file,
        output_dir=values.output_dir,
        init_checkpoint=values.init_checkpoint,
        do_lower_case=do_lower_case,
        max_seq_length=values.max_seq_length,
        do_train=values.do_train,
        do_eval=values.do_eval,
        do_predict=values.do_predict,
        train_batch_size=values.train_batch_size,
        eval_batch_size=values.eval_batch_size,
        predict_batch_size=values.predict_batch_size,
        learning_rate=values.learning_rate,
        num_train_epochs=values.num_train_epochs,
        warmup_proportion=values.warmup_proportion,
        seed=values.seed,
        max_train_examples=values.max_train_examples,
        trim_padding=values.trim_padding,
        hub_module_handle=values.hub_module_handle,
        **runner_flag_values(),
    )
