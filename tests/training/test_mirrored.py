"""MirroredStrategy over 2 logical CPU devices trains like one device at the same global batch."""

import json

import numpy as np
import pytest

from tests.conftest import REPO_ROOT
from tests.warm_interpreter import run_script

# Both scripts: two logical CPU devices, and model_fn of a tiny BertPretrainer (one layer, no
# dropout: each script compares runs with each other) of sequence length S and vocabulary V,
# which each script defines.
_PRELUDE = r"""
import os, sys, json
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, tensorflow as tf, keras
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from official_bert.models import BertEncoder, BertPretrainer
from official_bert.training.optimization import create_optimizer
from official_bert.tasks.pretraining_objective import pretraining_loss, pretraining_loss_denominators
from official_bert.training.runner import Runner
from official_bert.training.training_options import TrainingOptions

from tests.conftest import synthetic_pretraining_examples


def model_fn():
    model = BertPretrainer(BertEncoder(vocab_size=V, hidden_size=16, num_layers=1,
        num_attention_heads=2, intermediate_size=32, hidden_dropout_rate=0.0,
        attention_dropout_rate=0.0, max_position_embeddings=S, type_vocab_size=2))
    model.build()
    return model
"""

_SCRIPT = (
    _PRELUDE
    + r"""
B, S, V = 8, 16, 50
batch = synthetic_pretraining_examples(B, seq=S, vocab=V)
batch["masked_lm_weights"][:4] = 1.0  # the two replicas hold different numbers of predictions


def losses(strategy, output_dir):
    keras.utils.set_random_seed(1)
    runner = Runner(strategy, model_fn, lambda: create_optimizer(0.005, 10, 1, clip_norm=0.1),
                    pretraining_loss, TrainingOptions(output_dir=output_dir, steps_per_loop=1,
                                                     save_checkpoints_steps=100, log_steps=100),
                    num_train_steps=5,
                    loss_denominators_fn=pretraining_loss_denominators)
    def dataset_fn(context):
        size = context.get_per_replica_batch_size(B) if context else B
        data = tf.data.Dataset.from_tensors(batch).unbatch()
        if context:
            data = data.shard(context.num_input_pipelines, context.input_pipeline_id)
        return data.batch(size).repeat()
    return [loss for _, loss in runner.train(dataset_fn, B)]

one = losses(tf.distribute.OneDeviceStrategy("/cpu:0"), sys.argv[1] + "/one")
two = losses(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]), sys.argv[1] + "/two")
print(json.dumps({"one": one, "two": two}))
"""
)


def _run(script: str, tmp_path) -> dict:
    """Runs `script` in a fresh Python (for the logical devices) and returns its JSON line."""
    result = run_script(
        ["-c", script, str(tmp_path)],
        timeout=600,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # suite time; test_multi_worker checks equality to one device
@pytest.mark.parametrize("fast", [False, True], ids=["plain", "fast_kernels"])
def test_mirrored_two_devices_equal_one_device(tmp_path, fast):
    # With the speed paths on, the optimizer's fused XLA update runs on each replica's device
    # (the clip is not folded into it with two replicas).
    script = _SCRIPT
    if fast:
        script = script.replace(
            "from official_bert.models import",
            "from official_bert.kernels import use_fast_kernels\nuse_fast_kernels()\n"
            "from official_bert.models import",
            1,
        )
    losses = _run(script, tmp_path)
    assert len(losses["one"]) == 5
    assert losses["one"][-1] < losses["one"][0]
    np.testing.assert_allclose(losses["two"], losses["one"], rtol=1e-4)


_RESUME_SCRIPT = (
    _PRELUDE
    + r"""
B, S, V = 4, 16, 50
examples = synthetic_pretraining_examples(48, seq=S, vocab=V)  # every batch different


def losses(output_dir, num_train_steps):
    keras.utils.set_random_seed(1)
    runner = Runner(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]), model_fn,
                    lambda: create_optimizer(0.005, 12, 1, clip_norm=1.0), pretraining_loss,
                    TrainingOptions(output_dir=output_dir, steps_per_loop=1,
                                   save_checkpoints_steps=1, log_steps=100),
                    num_train_steps=num_train_steps,
                    loss_denominators_fn=pretraining_loss_denominators)
    runner.restore_or_initialize()
    def dataset_fn(context):
        # One pipeline feeds both local replicas: a step reads two per-replica batches of it.
        size = context.get_per_replica_batch_size(B)
        return tf.data.Dataset.from_tensor_slices(examples).batch(size).repeat()
    return [loss for _, loss in runner.train(dataset_fn, B)]

whole = losses(sys.argv[1] + "/whole", 6)
first = losses(sys.argv[1] + "/resumed", 3)
rest = losses(sys.argv[1] + "/resumed", 6)  # a new Runner on the same output_dir resumes
print(json.dumps({"whole": whole, "resumed": first + rest}))
"""
)


def test_mirrored_resume_reads_the_batches_the_interrupted_run_had_not_reached(tmp_path):
    losses = _run(_RESUME_SCRIPT, tmp_path)
    assert len(losses["whole"]) == len(losses["resumed"]) == 6
    # Skipping one per-replica batch per step (not two) would feed steps 4-6 other examples.
    np.testing.assert_allclose(losses["resumed"], losses["whole"], rtol=1e-6)
