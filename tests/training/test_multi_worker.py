"""MultiWorkerMirroredStrategy: 2 worker processes on 127.0.0.1 train like one device."""

import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.conftest import REPO_ROOT, synthetic_pretraining_examples
from tests.training.test_runner import dataset_fn_of, make_runner

# One worker of the cluster both tests read (a cluster's start is two new interpreters): argv =
# output_dir, weights file; TF_CONFIG comes from the environment. It trains a tiny pretrainer 3
# steps and writes its weights (the training test), then predicts with a tiny model over 7 rows
# in batches of 2 (the prediction test).
_WORKER = r"""
import json, os, sys
import keras, numpy as np, tensorflow as tf
from official_bert.training.distribution import create_strategy
from official_bert.training.prediction import predict
from tests.conftest import synthetic_pretraining_examples
from tests.training.test_runner import dataset_fn_of, make_runner

strategy = create_strategy("multi_worker_mirrored")
runner = make_runner(sys.argv[1], strategy=strategy, num_train_steps=3)
runner.restore_or_initialize()
runner.train(dataset_fn_of(synthetic_pretraining_examples(24), 8), 8)
np.savez(sys.argv[2], *[v.numpy() for v in runner.model.trainable_variables])
print("WRITE_DIR", runner.is_chief, runner._write_manager.directory)

with strategy.scope():
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input([3]), keras.layers.Dense(2)])
rows = np.arange(21, dtype="float32").reshape(7, 3)
dataset = tf.data.Dataset.from_tensor_slices({"x": rows, "row": np.arange(7)}).batch(2)
outputs = predict(strategy, lambda batch, training: model(batch["x"]), dataset, keep=("row",))
expected = model(rows).numpy()
print("PREDICTED", json.dumps({"rows": outputs["row"].tolist(),
                               "equal": bool(np.allclose(outputs["outputs"], expected))}))
"""


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _run_two_workers(script: str, arguments) -> list[str]:
    """Runs `script` as worker 0 and 1 of a 2-worker TF_CONFIG cluster on 127.0.0.1, with the
    command-line arguments `arguments(index)`; returns their logs once both ended well."""
    workers = [f"127.0.0.1:{port}" for port in _free_ports(2)]
    processes = []
    for index in range(2):
        config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        env = {**os.environ, "TF_CONFIG": json.dumps(config), "TF_CPP_MIN_LOG_LEVEL": "3"}
        processes.append(
            subprocess.Popen(
                [sys.executable, "-c", script, *arguments(index)],
                cwd=REPO_ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    deadline = time.time() + 300
    try:
        logs = [p.communicate(timeout=max(deadline - time.time(), 1))[0] for p in processes]
    finally:
        for p in processes:
            p.kill()
    for p, log in zip(processes, logs, strict=True):
        assert p.returncode == 0, log[-3000:]
    return logs


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory):
    """_WORKER run as a 2-worker cluster: (its folder, the workers' logs). output_dir is
    folder/run, worker i's weights folder/worker{i}.npz."""
    folder = tmp_path_factory.mktemp("two_workers")
    logs = _run_two_workers(
        _WORKER, lambda index: [str(folder / "run"), str(folder / f"worker{index}.npz")]
    )
    return folder, logs


def test_two_workers_end_with_identical_weights_equal_to_one_device(tmp_path, two_workers):
    folder, logs = two_workers
    output = folder / "run"

    chief, other = (np.load(folder / f"worker{i}.npz") for i in range(2))
    assert len(chief.files) == len(other.files) > 10
    for name in chief.files:
        np.testing.assert_array_equal(chief[name], other[name])

    # Each worker held half of every global batch of 8; together they took one device's step.
    # Equal up to summation order: two half-batch gradients all-reduced against one batch's,
    # through 3 Adam-style steps of lr 0.01, which normalize a near-zero gradient, rounding
    # and all: 1e-5 absolute is a thousandth of one step (seen: 1.6e-6).
    one_device = make_runner(tmp_path / "one", num_train_steps=3)
    one_device.train(dataset_fn_of(synthetic_pretraining_examples(24), 8), 8)
    for name, variable in zip(chief.files, one_device.model.trainable_variables, strict=True):
        np.testing.assert_allclose(chief[name], variable.numpy(), rtol=1e-4, atol=1e-5)

    # Only the chief (worker 0) writes checkpoints and summaries to output_dir; worker 1 wrote
    # its own to a temporary folder, removed after each save.
    write_dirs = [log.split("WRITE_DIR ")[1].split()[:2] for log in logs]
    assert write_dirs[0] == ["True", str(output)]
    assert write_dirs[1] == ["False", str(output / ".tmp_worker_1")]
    assert (output / "ckpt-3.index").exists()
    assert not (output / ".tmp_worker_1").exists()
    assert (output / "train").is_dir()


def test_every_worker_predicts_the_whole_dataset_in_order(two_workers):
    # Distributed over the workers, each had only its share of the batches (and a single record
    # file could not be split by file at all: run_classifier's --do_eval crashed).
    _, logs = two_workers
    for log in logs:
        predicted = json.loads(log.split("PREDICTED ")[1].splitlines()[0])
        assert predicted == {"rows": list(range(7)), "equal": True}
