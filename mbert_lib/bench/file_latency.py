"""Several .tflite files timed side by side on one example: every file called in turn,
round after round (`interleaved_timings`), the median of each round's median per file."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np

from mbert_lib import hardware
from mbert_lib.bench.timing import interleaved_timings
from mbert_lib.export.interpreter import TFLiteModel


def time_files(
    paths: Mapping[str, str | os.PathLike],
    example: Mapping[str, np.ndarray],
    rounds: int,
    repeats: int,
    warmup: int = 5,
    threads: int = 1,
) -> tuple[dict[str, float], dict[str, TFLiteModel]]:
    """({name: median ms}, {name: the interpreter timed}) of `example` ([1, T] features)
    through each file; the interpreters have run, so their XNNPACK partitions are there."""
    models = {name: TFLiteModel(path, num_threads=threads) for name, path in paths.items()}
    runners = {name: lambda m=model: m.runner(**example) for name, model in models.items()}
    timed = [interleaved_timings(runners, repeats, warmup) for _ in range(rounds)]
    medians = {name: float(np.median([r[name].median_ms for r in timed])) for name in paths}
    return medians, models


def latency_fields(
    medians: Mapping[str, float],
    paths: Mapping[str, str | os.PathLike],
    rounds: int,
    repeats: int,
    baselines: Sequence[str] = ("fp32", "dynamic_int8"),
    threads: int = 1,
) -> dict:
    """A record's timing fields: the medians, their ratios to each baseline, each file's
    bytes, the protocol and the machine."""
    return {
        "latency_ms": dict(medians),
        **{
            f"latency_vs_{base}": {k: round(v / medians[base], 4) for k, v in medians.items()}
            for base in baselines
        },
        "bytes": {k: os.path.getsize(v) for k, v in paths.items()},
        "threads": threads,
        "rounds": rounds,
        "repeats": repeats,
        "hardware": hardware.describe(),
        "load_1min": round(os.getloadavg()[0], 2),
    }
