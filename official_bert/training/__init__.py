"""Training: optimizers and schedules (the runner comes with the pre-training issue)."""
