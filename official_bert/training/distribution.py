"""Distribution strategies from flags."""

from __future__ import annotations

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


def create_strategy(name: str = "one_device", tpu: str | None = None) -> tf.distribute.Strategy:
    """A tf.distribute strategy by name.

    one_device: the first GPU if any, else the CPU. mirrored: all local GPUs (or the CPU).
    multi_worker_mirrored: workers from TF_CONFIG. tpu: `tpu` is a TPU name, a grpc:// address or
    "local"; an unreachable TPU is a clear error within seconds.
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
                "--distribution_strategy=tpu needs --tpu (a name, grpc://host:port or local)"
            )
        if tpu.startswith("grpc://"):
            _check_reachable(tpu)
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
        # OSError: a TPU name that does not resolve (the resolver asks the GCE metadata server).
        except (ValueError, OSError, tf.errors.OpError, RuntimeError) as error:
            raise ConnectionError(f"cannot use TPU {tpu!r}: {error}") from None
        logging.info("TPU devices: %s", tf.config.list_logical_devices("TPU"))
        return tf.distribute.TPUStrategy(resolver)
    raise ValueError(f"unknown distribution_strategy {name!r}; expected one of {STRATEGIES}")
