"""The settings every training script shares (run_pretraining.py, run_classifier.py,
run_multitask.py, run_squad.py): where it writes, what it starts from, and how the runner trains.

Each field is also the script's flag of the same name (official_bert.option_flags); the
original release's TPU and loop flags are fields too, mapped onto the TF2 ones when the options
are made (`__post_init__`), so the rest of the library reads only the TF2 names.
"""

from __future__ import annotations

import dataclasses

from official_bert.option_flags import option
from official_bert.training.distribution import STRATEGIES

DTYPES = ("float32", "mixed_bfloat16", "mixed_float16")
OPTIMIZER_TYPES = ("adamw", "adamw_torch", "keras_adamw", "lamb")
# Sizes and counts of the scripts' options that must be at least 1: a 0 would otherwise end
# deep inside (a division by zero, tf.data's "Batch size must be greater than zero", a loop of
# no steps reported as a NaN loss).
POSITIVE_OPTIONS = (
    "train_batch_size",
    "eval_batch_size",
    "predict_batch_size",
    "batch_size",
    "iterations_per_loop",
    "steps_per_loop",
    "max_seq_length",
)


# Counts where 0 means something (save only the last checkpoint, keep all of them) but a
# negative value nothing: it would end in TensorFlow's own error, or be taken silently as 0.
NON_NEGATIVE_OPTIONS = ("save_checkpoints_steps", "keep_checkpoint_max")


def check_positive_options(options) -> None:
    """ValueError naming the first of POSITIVE_OPTIONS that `options` has below 1, or of
    NON_NEGATIVE_OPTIONS below 0."""
    for names, least in ((POSITIVE_OPTIONS, 1), (NON_NEGATIVE_OPTIONS, 0)):
        for name in names:
            value = getattr(options, name, None)
            if isinstance(value, int) and value < least:
                raise ValueError(f"--{name} must be at least {least}, got {value}")


@dataclasses.dataclass(kw_only=True)
class TrainingOptions:
    """Keyword-only, so that each script's options (a subclass) keep their own required fields
    first. The Runner reads its settings from these fields as they are."""

    # === The original flags ===
    output_dir: str = option(help="Checkpoints, summaries and results go here.")
    init_checkpoint: str | None = option(
        None,
        help="Initial weights in any layout of docs/checkpoints.md (an original bert_model.ckpt "
        "or its folder, safetensors, pytorch_model.bin, a keras-hub preset, a TF Hub module, "
        "ours), local, gs://, or a URL downloaded once: an archive, hf://OWNER/NAME (Hugging "
        "Face) or a TF Hub handle.",
    )
    learning_rate: float = option(5e-5, help="Peak learning rate (Adam).")
    save_checkpoints_steps: int = option(
        1000,
        help="Steps between checkpoints, a loop ending early at each (0: only the last, as the "
        "original's RunConfig).",
    )
    iterations_per_loop: int = option(
        1000, help="Steps per tf.function call at most (= steps_per_loop)."
    )
    use_tpu: bool = option(False, help="Use a TPU (same as --distribution_strategy=tpu).")
    tpu_name: str | None = option(None, help="TPU name or grpc:// address (same as --tpu).")
    tpu_zone: str | None = option(
        None, help="GCE zone of the TPU (for TPUClusterResolver; found when omitted)."
    )
    gcp_project: str | None = option(
        None, help="GCP project of the TPU (for TPUClusterResolver; found when omitted)."
    )
    master: str | None = option(
        None, help="With --use_tpu: the TPU's grpc:// address (the original's TF1 master)."
    )
    num_tpu_cores: int = option(8, help="Accepted for compatibility (the strategy finds them).")
    tpu_job_name: str | None = option(
        None,
        help="The TPU workers' job name in the cluster, if not the default (TPUClusterResolver's "
        "job_name).",
    )
    # === TF2 flags ===
    distribution_strategy: str = option(
        "one_device", choices=STRATEGIES, help="tf.distribute strategy."
    )
    tpu: str | None = option(None, help="TPU name, grpc://host:port or local.")
    steps_per_loop: int | None = option(
        None, help="Steps per tf.function call at most (default: iterations_per_loop)."
    )
    dtype: str = option("float32", choices=DTYPES, help="Precision.")
    optimizer_type: str = option(
        "adamw",
        choices=OPTIMIZER_TYPES,
        help="adamw: the original AdamWeightDecay (no bias correction); adamw_torch: "
        "bias-corrected AdamW as torch.optim.AdamW / Hugging Face; keras_adamw: "
        "keras.optimizers.AdamW; lamb.",
    )
    decay_after_warmup: bool = option(
        False,
        help="Start the linear learning-rate decay at the end of warm-up, from the full "
        "learning rate (Hugging Face's linear schedule). Default: the original's decay from "
        "step 0, which peaks at learning_rate * (1 - warmup / steps).",
    )
    weight_decay_rate: float = option(0.01, help="Weight decay (not on LayerNorm and biases).")
    keep_checkpoint_max: int = option(5, help="Checkpoints kept (0: all).")
    log_steps: int = option(100, help="Steps between progress logs.")
    gradient_accumulation_steps: int = option(
        1,
        help="Micro-batches per update: each update's --train_batch_size examples run as this "
        "many micro-batches of train_batch_size / k, their gradients summed (the memory of one).",
    )
    enable_xla: bool = option(
        False, help="Compile the train step with XLA (for GPU/TPU; no faster on CPU)."
    )
    fast_kernels: bool = option(
        True,
        help="Take the speed paths of official_bert.kernels (same results; false: the plain "
        "Keras layers).",
    )
    seed: int | None = option(
        None, help="Seed of initialization, dropout and input order (and task order)."
    )

    def __post_init__(self):
        # The original TPU flags, mapped onto the TF2 ones.
        if self.steps_per_loop is None:
            self.steps_per_loop = self.iterations_per_loop
        check_positive_options(self)
        if self.use_tpu:
            self.distribution_strategy = "tpu"
        self.tpu = self.tpu or self.tpu_name or (self.master if self.use_tpu else None)
        if self.distribution_strategy not in STRATEGIES:
            raise ValueError(
                f"distribution_strategy must be one of {list(STRATEGIES)}, got "
                f"{self.distribution_strategy!r}"
            )
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {list(DTYPES)}, got {self.dtype!r}")
        if self.gradient_accumulation_steps < 1:
            raise ValueError(
                f"gradient_accumulation_steps must be >= 1, got {self.gradient_accumulation_steps}"
            )
