"""Distribution strategies from flags."""

from __future__ import annotations

import glob
import os
import socket
import urllib.parse

import tensorflow as tf
from absl import logging

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    # A gRPC connect to an unreachable TPU address hangs forever; fail fast instead.
    parsed = urllib.parse.urlparse(address)
    host, port = parsed.hostname, parsed.port
    if host is None or port is None:
        return
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as error:
        raise ConnectionError(
            f"TPU at {address} is not reachable within {timeout_s:.0f} s ({error}); check --tpu"
        ) from None


def check_paths_for_tpu(tpu: str | None, paths: dict[str, str | None]) -> None:
    """Refuses local paths for a remote Cloud TPU (google-research/bert#98).

    A TPU node (a name or grpc:// address) runs the input pipeline and writes checkpoints on its
    own host, which sees Cloud Storage but not this machine's disk. A TPU VM (`tpu="local"`) is
    this machine, so local paths work there.
    """
    if tpu == "local":
        return
    local = {flag: path for flag, path in paths.items() if path and not path.startswith("gs://")}
    if local:
        listed = ", ".join(f"--{flag}={path}" for flag, path in local.items())
        raise ValueError(
            f"a Cloud TPU ({tpu}) reads and writes files only through Cloud Storage: {listed} "
            "must be gs:// paths (copy the data with `gsutil cp`); on a TPU VM use --tpu=local"
        )


def tpu_vm_device_files() -> list[str]:
    """The TPU device files of a TPU VM on this machine (/dev/accel0... on TPU v2-v4, /dev/vfio/0...
    on v5e and later); empty elsewhere."""
    return glob.glob("/dev/accel[0-9]*") + glob.glob("/dev/vfio/[0-9]*")


def _check_tpu_vm(tpu: str) -> None:
    """Raises ConnectionError where `tpu` is "local" on a machine without TPU devices: there,
    TensorFlow's TPU initialization fails with its kernel dump (no OpKernel for
    ConfigureDistributedTPU, the registered devices, the graph's ops)."""
    if tpu == "local" and not tpu_vm_device_files():
        raise ConnectionError(
            "cannot use TPU 'local': this machine has no TPU devices (/dev/accel*, "
            "/dev/vfio/*); --tpu=local is for a TPU VM, else name the TPU or its grpc:// address"
        )


def detect_distribution(tpu: str | None = None) -> tuple[str, str | None]:
    """The strategy name (and TPU) for the accelerators this machine can use.

    Takes `tpu` if given, else a Colab TPU (COLAB_TPU_ADDR) or the TPU devices of a TPU VM
    ("local"); falls back to "mirrored" with several GPUs, else "one_device" (a GPU or the CPU).

    Returns:
      (distribution_strategy, tpu): the arguments of `create_strategy` and of the scripts' flags.

    Raises:
      ConnectionError: `tpu` names a TPU that does not resolve. A TPU the user named is meant:
        a run that trained on the CPU instead, hours later, would be worse than this error.
    """
    if tpu:
        _check_tpu_vm(tpu)
        try:
            tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
        except (ValueError, OSError, tf.errors.OpError) as error:
            raise ConnectionError(
                f"cannot use TPU {tpu!r}: {error}; leave the TPU empty to use what this machine has"
            ) from None
        logging.info("Using the TPU %s", tpu)
        return "tpu", tpu
    candidates = []
    if os.environ.get("COLAB_TPU_ADDR"):
        candidates.append("grpc://" + os.environ["COLAB_TPU_ADDR"])
    if tpu_vm_device_files():
        candidates.append("local")
    for candidate in candidates:
        try:
            tf.distribute.cluster_resolver.TPUClusterResolver(tpu=candidate)
            logging.info("Using the TPU %s", candidate)
            return "tpu", candidate
        except (ValueError, OSError, tf.errors.OpError) as error:
            logging.warning("No TPU at %r (%s); trying GPUs, then the CPU", candidate, error)
    gpus = tf.config.list_physical_devices("GPU")
    logging.info("No TPU; %d GPU(s)", len(gpus))
    return ("mirrored" if len(gpus) > 1 else "one_device"), None


def create_strategy(
    name: str = "one_device",
    tpu: str | None = None,
    paths: dict[str, str | None] | None = None,
    zone: str | None = None,
    project: str | None = None,
    job_name: str | None = None,
) -> tf.distribute.Strategy:
    """A tf.distribute strategy by name.

    one_device: the first GPU if any, else the CPU. mirrored: all local GPUs (or the CPU).
    multi_worker_mirrored: workers from TF_CONFIG. tpu: `tpu` is a TPU name, a grpc:// address or
    "local"; an unreachable TPU is a clear error within seconds. `zone` and `project` (the
    original's --tpu_zone, --gcp_project) go to TPUClusterResolver as in the original, which
    needs them to find a TPU by name from outside its zone or project; `job_name` (the original's
    --tpu_job_name) names the TPU workers' job where it is not the resolver's default. `paths` ({flag name:
    path}) are checked first with `check_paths_for_tpu` when the strategy is a TPU.
    """
    if name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multi_worker_mirrored":
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        if not tpu:
            raise ValueError(
                "--distribution_strategy=tpu (or --use_tpu) needs --tpu, --tpu_name or --master "
                "(a TPU name, grpc://host:port or local)"
            )
        check_paths_for_tpu(tpu, paths or {})
        if tpu.startswith("grpc://"):
            _check_reachable(tpu)
        _check_tpu_vm(tpu)
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
                tpu=tpu, zone=zone, project=project, **({"job_name": job_name} if job_name else {})
            )
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
        # OSError: a TPU name that does not resolve (the resolver asks the GCE metadata server).
        except (ValueError, OSError, tf.errors.OpError, RuntimeError) as error:
            raise ConnectionError(f"cannot use TPU {tpu!r}: {error}") from None
        logging.info("TPU devices: %s", tf.config.list_logical_devices("TPU"))
        return tf.distribute.TPUStrategy(resolver)
    raise ValueError(f"unknown distribution_strategy {name!r}; expected one of {STRATEGIES}")
