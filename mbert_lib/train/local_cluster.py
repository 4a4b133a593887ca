"""A multi-worker cluster on one machine: one process per worker, TF_CONFIG on loopback.

MultiWorkerMirroredStrategy reads the cluster from the TF_CONFIG environment
variable of each process:

    {"cluster": {"worker": ["localhost:P0", "localhost:P1"]},
     "task": {"type": "worker", "index": i}}

Worker 0 is the chief (the cluster names no "chief" task). This is how the
tests and experiments/multi_worker_scaling.py start a two-worker run of any
`python -m mbert_lib` command; on a real cluster each host sets its own
TF_CONFIG instead (docs/multi_worker.md).

    workers = start_workers(["pretrain", "--config_file", ..., "--params_override",
                             "runtime.distribution_strategy=multi_worker_mirrored"], 2)
    codes = wait_workers(workers, timeout=300)
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports on localhost that were free a moment ago."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("localhost", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def tf_config(ports: Sequence[int], index: int) -> str:
    """TF_CONFIG for worker `index` of a cluster of localhost:`ports`."""
    if not 0 <= index < len(ports):
        raise ValueError(f"worker index {index} is outside a cluster of {len(ports)} workers")
    cluster = {"worker": [f"localhost:{p}" for p in ports]}
    return json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})


def start_workers(
    argv: Sequence[str],
    num_workers: int,
    *,
    env: Mapping[str, str] | None = None,
    ports: Sequence[int] | None = None,
    log_dir: str | os.PathLike | None = None,
) -> list[subprocess.Popen]:
    """Starts `python -m mbert_lib <argv>` once per worker, each with its TF_CONFIG.

    log_dir: each worker's stdout and stderr go to worker_<i>.log there (default:
    inherited). Every process gets the same `env` (default: this one's) apart from
    TF_CONFIG.
    """
    if num_workers < 1:
        raise ValueError(f"num_workers must be at least 1, got {num_workers}")
    ports = list(ports) if ports is not None else free_ports(num_workers)
    base = dict(os.environ if env is None else env)
    workers = []
    for index in range(num_workers):
        out = (
            open(os.path.join(os.fspath(log_dir), f"worker_{index}.log"), "ab")
            if log_dir is not None
            else None
        )
        workers.append(
            subprocess.Popen(
                [sys.executable, "-m", "mbert_lib", *argv],
                env={**base, "TF_CONFIG": tf_config(ports, index)},
                stdout=out,
                stderr=subprocess.STDOUT if out is not None else None,
            )
        )
        if out is not None:
            out.close()  # the child holds its own descriptor
    return workers


def wait_workers(workers: Sequence[subprocess.Popen], timeout: float) -> list[int]:
    """Every worker's exit code; all are killed (and a TimeoutError raised) after `timeout`
    seconds, since a cluster whose peer died can wait in a collective for ever."""
    deadline = time.monotonic() + timeout
    try:
        return [w.wait(timeout=max(0.0, deadline - time.monotonic())) for w in workers]
    except subprocess.TimeoutExpired:
        stop_workers(workers)
        raise TimeoutError(f"the cluster did not finish within {timeout:.0f} s") from None


def stop_workers(workers: Sequence[subprocess.Popen]) -> None:
    """SIGKILL every worker still running and reap them all."""
    for w in workers:
        if w.poll() is None:
            w.kill()
    for w in workers:
        w.wait()
