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
from collections.abc import Callable, Iterable

from mbert_lib import atomic


@dataclasses.dataclass(frozen=True)
class Timing:
    """Wall-clock statistics of `repeats` calls, in milliseconds."""

    median_ms: float
    min_ms: float
    max_ms: float
    repeats: int

    @classmethod
    def from_samples(cls, samples_ms: list[float]) -> Timing:
        if not samples_ms:
            raise ValueError("samples_ms is empty: need at least one timed run")
        return cls(statistics.median(samples_ms), min(samples_ms), max(samples_ms), len(samples_ms))


@dataclasses.dataclass(frozen=True)
class TimingPlan:
    """How often every timed case is called: `warmup` times untimed, then `repeats` times
    timed (the counts of `time_callable` and `interleaved_timings`)."""

    repeats: int
    warmup: int


def time_callable(fn: Callable[[], object], repeats: int = 20, warmup: int = 3) -> Timing:
    """Calls `fn` `warmup` times untimed, then `repeats` times timed.

    `fn` must block until its result exists (call `.numpy()` on TF results).
    """
    _check_counts(repeats, warmup)
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {type(fn).__name__}")
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return Timing.from_samples(samples)


def interleaved_timings(
    fns: dict[str, Callable[[], object]], repeats: int = 20, warmup: int = 3
) -> dict[str, Timing]:
    """Times several callables round-robin, so background load hits all alike.

    Each is first called `warmup` times untimed (one after the other); then
    every round calls each once, timed, in the order of `fns`.
    """
    _check_counts(repeats, warmup)
    if not fns:
        raise ValueError("fns is empty: need at least one callable to time")
    not_callable = sorted(name for name, fn in fns.items() if not callable(fn))
    if not_callable:
        raise ValueError(f"fns: not callable: {not_callable}")
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


def _check_counts(repeats: int, warmup: int) -> None:
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an integer >= 0, got {warmup!r}")


def write_json(records: Iterable[dict], path: str | os.PathLike) -> None:
    """Writes a list of records as strict JSON (no NaN/Infinity), atomically.

    A record that cannot be serialised raises before `path` is touched.
    """
    text = json.dumps(list(records), indent=2, allow_nan=False)
    atomic.write_text(path, text + "\n")
