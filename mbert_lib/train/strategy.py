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
from collections.abc import Iterator, Sequence

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
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        return _tpu_strategy(tpu_address or "")
    raise ValueError(
        f"runtime.distribution_strategy must be one of {list(STRATEGIES)}, got {name!r}"
    )


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
