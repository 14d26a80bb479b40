"""The settings every training script shares (run_pretraining.py, run_classifier.py,
run_multitask.py, run_squad.py): where it writes, what it starts from, and the runner's settings
that `runner_flags.runner_flag_values` fills from the flags."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(kw_only=True)
class TrainingOptions:
    """Keyword-only, so that each script's options (a subclass) keep their own required fields
    first.

    output_dir: checkpoints, summaries and results. init_checkpoint: starting weights (TF1,
    safetensors or ours). steps_per_loop: the original iterations_per_loop. distribution_strategy,
    tpu, tpu_zone, gcp_project: see training.distribution. dtype: float32, mixed_bfloat16 or mixed_float16.
    optimizer_type, weight_decay_rate, decay_after_warmup: see training.optimization. seed:
    initialization, dropout and input order (None: not seeded).
    """

    output_dir: str
    init_checkpoint: str | None = None
    learning_rate: float = 5e-5
    save_checkpoints_steps: int = 1000
    steps_per_loop: int = 1000
    distribution_strategy: str = "one_device"
    tpu: str | None = None
    tpu_zone: str | None = None
    gcp_project: str | None = None
    dtype: str = "float32"
    optimizer_type: str = "adamw"
    decay_after_warmup: bool = False
    weight_decay_rate: float = 0.01
    keep_checkpoint_max: int = 5
    log_steps: int = 100
    seed: int | None = None
