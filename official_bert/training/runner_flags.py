"""The flags every training script shares: the original TPU and loop flags, and the runner's
TF2 flags beside them."""

from __future__ import annotations

from absl import flags

from official_bert.training.distribution import STRATEGIES


def define_runner_flags() -> None:
    """Defines the shared flags on absl's FLAGS (call once, at a script's import)."""
    # === The original flags ===
    flags.DEFINE_integer("save_checkpoints_steps", 1000, "Steps between checkpoints.")
    flags.DEFINE_integer(
        "iterations_per_loop", 1000, "Steps per tf.function call (= steps_per_loop)."
    )
    flags.DEFINE_bool("use_tpu", False, "Use a TPU (same as --distribution_strategy=tpu).")
    flags.DEFINE_string("tpu_name", None, "TPU name or grpc:// address (same as --tpu).")
    flags.DEFINE_string(
        "tpu_zone", None, "Accepted for compatibility (TPUClusterResolver finds it)."
    )
    flags.DEFINE_string("gcp_project", None, "Accepted for compatibility.")
    flags.DEFINE_string("master", None, "Accepted for compatibility (TF1 master).")
    flags.DEFINE_integer(
        "num_tpu_cores", 8, "Accepted for compatibility (the strategy finds them)."
    )
    # === TF2 flags ===
    flags.DEFINE_enum(
        "distribution_strategy", "one_device", list(STRATEGIES), "tf.distribute strategy."
    )
    flags.DEFINE_string("tpu", None, "TPU name, grpc://host:port or local.")
    flags.DEFINE_integer(
        "steps_per_loop", None, "Steps per tf.function call (default: iterations_per_loop)."
    )
    flags.DEFINE_enum(
        "dtype", "float32", ["float32", "mixed_bfloat16", "mixed_float16"], "Precision."
    )
    flags.DEFINE_enum(
        "optimizer_type",
        "adamw",
        ["adamw", "adamw_torch", "keras_adamw", "lamb"],
        "adamw: the original AdamWeightDecay (no bias correction); adamw_torch: bias-corrected "
        "AdamW as torch.optim.AdamW / Hugging Face; keras_adamw: keras.optimizers.AdamW; lamb.",
    )
    flags.DEFINE_bool(
        "decay_after_warmup",
        False,
        "Start the linear learning-rate decay at the end of warm-up, from the full learning "
        "rate (Hugging Face's linear schedule). Default: the original's decay from step 0, which "
        "peaks at learning_rate * (1 - warmup / steps).",
    )
    flags.DEFINE_float("weight_decay_rate", 0.01, "Weight decay (not on LayerNorm and biases).")
    flags.DEFINE_integer("keep_checkpoint_max", 5, "Checkpoints kept.")
    flags.DEFINE_integer("log_steps", 100, "Steps between progress logs.")
    define_fast_kernels_flag()


def define_fast_kernels_flag(flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """--fast_kernels; a script passes its value to official_bert.kernels.use_fast_kernels first."""
    flags.DEFINE_bool(
        "fast_kernels",
        True,
        "Take the speed paths of official_bert.kernels (same results).",
        flag_values=flag_values,
    )


def runner_flag_values() -> dict:
    """The shared flags as keyword arguments of TrainingOptions (the original TPU flags
    mapped onto the TF2 ones)."""
    values = flags.FLAGS
    return dict(
        save_checkpoints_steps=values.save_checkpoints_steps,
        steps_per_loop=values.steps_per_loop or values.iterations_per_loop,
        distribution_strategy="tpu" if values.use_tpu else values.distribution_strategy,
        tpu=values.tpu or values.tpu_name,
        dtype=values.dtype,
        optimizer_type=values.optimizer_type,
        decay_after_warmup=values.decay_after_warmup,
        weight_decay_rate=values.weight_decay_rate,
        keep_checkpoint_max=values.keep_checkpoint_max,
        log_steps=values.log_steps,
    )
