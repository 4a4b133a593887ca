"""Where training runs: a tf.distribute strategy and a precision policy, chosen by name.

    default                 TensorFlow's default strategy: one device, no wrapping
    one_device              OneDeviceStrategy on `devices[0]` (default: the first GPU, else CPU)
    mirrored                MirroredStrategy over `devices` (default: all GPUs, else the CPU)
    multi_worker_mirrored   MultiWorkerMirroredStrategy; the cluster comes from TF_CONFIG
    tpu                     TPUStrategy on `tpu_address` ("" = the local / Colab TPU)

Mixed precision is tf_keras' global dtype policy: "bfloat16" computes in
bfloat16 with float32 variables ("mixed_bfloat16"); losses are computed in
float32 by the objectives. float16 is not offered: it needs loss scaling and
users report NaNs with MobileBERT's large NoNorm activations in float16.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence

import tensorflow as tf
import tf_keras

from mbert_lib.experiment import POLICIES, STRATEGIES  # the names the yaml schema accepts


def create_strategy(
    name: str = "default", devices: Sequence[str] | None = None, tpu_address: str | None = None
) -> tf.distribute.Strategy:
    """The tf.distribute strategy called `name` (see the module docstring)."""
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "one_device":
        if devices is None:
            devices = ["/gpu:0"] if tf.config.list_logical_devices("GPU") else ["/cpu:0"]
        if len(devices) != 1:
            raise ValueError(
                f"runtime.devices: one_device needs exactly one device, got {list(devices)}"
            )
        return tf.distribute.OneDeviceStrategy(devices[0])
    if name == "mirrored":
        return tf.distribute.MirroredStrategy(devices=list(devices) if devices else None)
    if name == "multi_worker_mirrored":
        cluster_workers()  # a TF_CONFIG that names no cluster is refused before TF waits on it
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        return _tpu_strategy(tpu_address or "")
    raise ValueError(
        f"runtime.distribution_strategy must be one of {list(STRATEGIES)}, got {name!r}"
    )


def cluster_workers(environ: Mapping[str, str] | None = None) -> int:
    """How many workers TF_CONFIG's cluster has (chief included); 1 without TF_CONFIG.

    A ValueError naming TF_CONFIG when it is not JSON, names no cluster, or puts this
    task outside it: MultiWorkerMirroredStrategy would otherwise fail deep inside
    TensorFlow, or wait for ever on workers that do not exist.
    """
    text = (os.environ if environ is None else environ).get("TF_CONFIG", "")
    if not text.strip():
        return 1
    expected = (
        'expected JSON such as {"cluster": {"worker": ["host0:port", "host1:port"]}, '
        '"task": {"type": "worker", "index": 0}} (docs/multi_worker.md)'
    )
    try:
        config = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"TF_CONFIG is not JSON ({e}); {expected}") from None
    cluster = config.get("cluster") if isinstance(config, dict) else None
    task = config.get("task") if isinstance(config, dict) else None
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        raise ValueError(f"TF_CONFIG needs a 'cluster' and a 'task', got {text!r}; {expected}")
    members = {kind: cluster.get(kind) or [] for kind in ("chief", "worker")}
    if not all(isinstance(m, list) for m in members.values()) or not any(members.values()):
        raise ValueError(f"TF_CONFIG's cluster lists no chief or worker addresses: {cluster!r}")
    kind, index = task.get("type"), task.get("index", 0)
    if kind not in members or not isinstance(index, int) or not 0 <= index < len(members[kind]):
        raise ValueError(
            f"TF_CONFIG's task {task!r} is not one of its cluster's members "
            f"(chief: {len(members['chief'])}, worker: {len(members['worker'])}); {expected}"
        )
    return len(members["chief"]) + len(members["worker"])


def _tpu_strategy(address: str) -> tf.distribute.Strategy:
    """TPUStrategy on `address`; a ValueError naming the field when no TPU is found there."""
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=address)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, RuntimeError, tf.errors.OpError) as e:
        where = (
            f"at runtime.tpu_address={address!r}"
            if address
            else ("on this host (runtime.tpu_address is empty: the local or Colab TPU)")
        )
        raise ValueError(
            f"runtime.distribution_strategy=tpu: no TPU found {where} "
            f"({str(e).strip().splitlines()[0] if str(e).strip() else e!r}); set "
            "runtime.tpu_address to the TPU's name or grpc:// address, or choose "
            "another runtime.distribution_strategy"
        ) from None
    return tf.distribute.TPUStrategy(resolver)


@contextlib.contextmanager
def precision_policy(name: str = "float32") -> Iterator[None]:
    """Sets tf_keras' global dtype policy for models built inside; restores it on exit."""
    if name not in POLICIES:
        raise ValueError(f"runtime.mixed_precision must be one of {list(POLICIES)}, got {name!r}")
    previous = tf_keras.mixed_precision.global_policy()
    tf_keras.mixed_precision.set_global_policy(POLICIES[name])
    try:
        yield
    finally:
        tf_keras.mixed_precision.set_global_policy(previous)
