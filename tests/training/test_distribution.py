"""Strategies from flags; a TPU that is not there fails clearly after a bounded wait."""

import socket

import pytest
import tensorflow as tf

from official_bert.config import BertConfig
from official_bert.training import distribution
from official_bert.training.distribution import (
    check_paths_for_tpu,
    create_strategy,
    detect_distribution,
)
from tests.conftest import REPO_ROOT
from tests.warm_interpreter import run_script


@pytest.fixture
def closed_port_address():
    """grpc://127.0.0.1:PORT where nothing listens (a port the OS just handed out and freed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"grpc://127.0.0.1:{port}"


def test_strategies_by_name():
    assert isinstance(create_strategy("one_device"), tf.distribute.OneDeviceStrategy)
    with pytest.raises(ValueError, match="unknown distribution_strategy 'gpu'"):
        create_strategy("gpu")
    with pytest.raises(ValueError, match="needs --tpu"):
        create_strategy("tpu")


def test_detection_falls_back_to_the_cpu_without_a_tpu(closed_port_address, monkeypatch):
    monkeypatch.delenv("COLAB_TPU_ADDR", raising=False)
    monkeypatch.setattr(distribution, "tpu_vm_device_files", lambda: [])  # wherever CI runs
    assert detect_distribution() == ("one_device", None)
    # A TPU the user named is meant: one that does not resolve (no GCE metadata server here) is
    # an error, not hours of training on the CPU.
    with pytest.raises(ConnectionError, match="cannot use TPU 'no-such-tpu-xyz'"):
        detect_distribution("no-such-tpu-xyz")
    with pytest.raises(ConnectionError, match="cannot use TPU 'local': this machine has no TPU"):
        detect_distribution("local")
    assert detect_distribution(closed_port_address) == ("tpu", closed_port_address)
    # Colab's legacy TPU runtime announces its address; a grpc:// address resolves without a
    # connection, so it is taken (create_strategy then checks that it answers).
    monkeypatch.setenv("COLAB_TPU_ADDR", closed_port_address.removeprefix("grpc://"))
    assert detect_distribution() == ("tpu", closed_port_address)


def test_a_tpu_node_needs_cloud_storage_paths(closed_port_address, monkeypatch):
    check_paths_for_tpu("local", {"output_dir": "/tmp/out"})  # a TPU VM reads local files
    check_paths_for_tpu("my-tpu", {"output_dir": "gs://bucket/out", "init_checkpoint": None})
    with pytest.raises(ValueError, match=r"--output_dir=/tmp/out must be gs:// paths"):
        check_paths_for_tpu("my-tpu", {"output_dir": "/tmp/out", "input_file": "gs://b/x"})

    def no_connection(*args, **kwargs):
        raise AssertionError("connected before checking the paths")

    monkeypatch.setattr(socket, "create_connection", no_connection)
    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", no_connection)
    with pytest.raises(ValueError, match="Cloud Storage"):  # before any connection attempt
        create_strategy("tpu", closed_port_address, {"output_dir": "/tmp/out"})


def test_tpu_without_a_tpu_fails_with_a_bounded_wait(closed_port_address, monkeypatch):
    # The connection attempt to a grpc:// address is bounded (a gRPC connect would hang).
    timeouts = []
    create_connection = socket.create_connection

    def recording_connection(address, timeout=None, **kwargs):
        timeouts.append(timeout)
        return create_connection(address, timeout=timeout, **kwargs)

    monkeypatch.setattr(socket, "create_connection", recording_connection)
    with pytest.raises(ConnectionError, match="not reachable within 5 s.*check --tpu"):
        create_strategy("tpu", closed_port_address)
    assert timeouts == [5.0]
    with pytest.raises(ConnectionError, match="cannot use TPU 'local'"):
        create_strategy("tpu", "local")


def test_local_tpu_without_tpu_devices_is_one_line_before_initializing(monkeypatch):
    # Initializing TPU "local" without TPU devices raised TensorFlow's 6-line kernel dump.
    def no_initialization(*args, **kwargs):
        raise AssertionError("the TPU system was initialized")

    monkeypatch.setattr(distribution, "tpu_vm_device_files", lambda: [])
    monkeypatch.setattr(tf.tpu.experimental, "initialize_tpu_system", no_initialization)
    with pytest.raises(ConnectionError) as raised:
        create_strategy("tpu", "local")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("cannot use TPU 'local': this machine has no TPU devices")


def test_run_pretraining_use_tpu_fails_instead_of_hanging(closed_port_address, tmp_path):
    """The script ends with the TPU's address in the error instead of hanging on it (the
    subprocess timeout only guards against a hang; how fast the host starts TensorFlow is not
    this project's behaviour)."""
    config = tmp_path / "bert_config.json"
    BertConfig(
        vocab_size=100,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
    ).to_json_file(str(config))
    result = run_script(
        [
            "run_pretraining.py",
            "--use_tpu",
            f"--tpu_name={closed_port_address}",
            f"--bert_config_file={config}",
            # A TPU node reads and writes through Cloud Storage (checked before connecting).
            "--input_file=gs://no-such-bucket/tf_examples.tfrecord",
            "--output_dir=gs://no-such-bucket/out",
            "--do_train",
        ],
        timeout=600,
        cwd=REPO_ROOT,
    )
    assert result.returncode != 0
    assert f"TPU at {closed_port_address} is not reachable within 5 s" in result.stderr


@pytest.mark.parametrize("job_name", [None, "tpu_worker"])
def test_the_tpu_job_name_reaches_the_resolver(job_name, monkeypatch):
    """The original's --tpu_job_name (TPUConfig's tpu_job_name) names the workers' job."""
    made = []

    class StopHere(Exception):
        pass

    def resolver(**kwargs):
        made.append(kwargs)
        raise StopHere

    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", resolver)
    with pytest.raises(StopHere):
        create_strategy("tpu", "my-tpu", {"output_dir": "gs://b/o"}, zone="z", job_name=job_name)
    expected = {"tpu": "my-tpu", "zone": "z", "project": None}
    assert made == [expected | ({"job_name": job_name} if job_name else {})]
