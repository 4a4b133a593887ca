"""Latency measurement: medians over repeated runs, JSON out.

Timings on a shared 2-core machine are noisy: always report the median of
many runs after a warm-up, and compare only against a baseline measured in
the same process at the same time (ratios), never against a fixed number.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import time
from typing import Callable, Iterable

from mbert_lib import atomic


@dataclasses.dataclass(frozen=True)
class Timing:
    """Wall-clock statistics of `repeats` calls, in milliseconds."""

    median_ms: float
    min_ms: float
    max_ms: float
    repeats: int

    @classmethod
    def from_samples(cls, samples_ms: list[float]) -> "Timing":
        return cls(statistics.median(samples_ms), min(samples_ms), max(samples_ms),
                   len(samples_ms))


def time_callable(fn: Callable[[], object], repeats: int = 20, warmup: int = 3) -> Timing:
    """Calls `fn` `warmup` times untimed, then `repeats` times timed.

    `fn` must block until its result exists (call `.numpy()` on TF results).
    """
    if repeats < 1 or warmup < 0:
        raise ValueError(f"need repeats >= 1 and warmup >= 0, got {repeats}, {warmup}")
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return Timing.from_samples(samples)


def interleaved_timings(fns: dict[str, Callable[[], object]], repeats: int = 20,
                        warmup: int = 3) -> dict[str, Timing]:
    """Times several callables round-robin, so background load hits all alike."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            samples[name].append((time.perf_counter() - start) * 1e3)
    return {name: Timing.from_samples(s) for name, s in samples.items()}


def write_json(records: Iterable[dict], path: str | os.PathLike) -> None:
    """Writes a list of records as JSON, atomically."""
    atomic.write_text(path, json.dumps(list(records), indent=2) + "\n")
