"""A small hyper-parameter search: a grid of settings x seeds, summarized as mean ± std.

BERT and MobileBERT pick fine-tuning settings per task from a small grid
(MobileBERT: batch {16, 32, 48}, learning rate (1–10)e-5, 2–10 epochs, on
dev). `run_grid` fine-tunes one model per (grid point, seed), each in its
own resumable model directory under `root`; `summarize` gives, per grid
point, the mean and the sample standard deviation (ddof = 1) of the dev
metric over seeds, best first.
"""

from __future__ import annotations

import itertools
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mbert_lib.config_tree import apply_overrides
from mbert_lib.finetune.trainer import cached_task_data, run_finetuning


def grid_points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the values of `grid` ({dotted key: [values]}), in order."""
    for key, values in grid.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
            raise ValueError(f"grid: {key} must be a non-empty list of values, got {values!r}")
    keys = list(grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*grid.values())]


def run_name(point: Mapping[str, Any], seed: int) -> str:
    """A directory name such as "batch_size=16,learning_rate=0.0001,seed=0"."""
    parts = [f"{key.rsplit('.', 1)[-1]}={value}" for key, value in point.items()]
    return re.sub(r"[^\w.=,+-]", "_", ",".join(parts + [f"seed={seed}"]))


def _value(config, dotted: str):
    for part in dotted.split("."):
        config = getattr(config, part)
    return config


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """(mean, sample standard deviation); std is nan for a single value."""
    values = np.asarray(values, np.float64)
    return float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else math.nan


def run_grid(
    experiment,
    root: str | os.PathLike,
    grid: Mapping[str, Sequence[Any]],
    seeds: Sequence[int],
    *,
    run: Callable = run_finetuning,
    show_progress: bool = False,
    log: Callable[[str], None] = print,
) -> list[dict]:
    """Fine-tunes every (grid point, seed); one record per run (finished runs are reused).
    Every combination is checked before the first one trains (`grid_experiments`).

    `run(experiment, model_dir, data=, show_progress=, log=)` is run_finetuning.
    """
    records, loaded = [], {}
    for point, seed, point_experiment in grid_experiments(experiment, grid, seeds):
        directory = os.path.join(os.fspath(root), run_name(point, seed))
        log(f"grid: {run_name(point, seed)}")
        done = run(
            point_experiment,
            directory,
            data=cached_task_data(point_experiment, loaded),
            show_progress=show_progress,
            log=log,
        )
        records.append(
            {
                "point": {k: _value(point_experiment, k) for k in point},
                "seed": seed,
                "model_dir": directory,
                "metric": done["metric"],
                "dev": done["eval"],
                "best_epoch": done["best_epoch"],
                "train_seconds": done["seconds"]["train"],
            }
        )
    return records


def grid_experiments(
    experiment, grid: Mapping[str, Sequence[Any]], seeds: Sequence[int]
) -> list[tuple[dict[str, Any], int, Any]]:
    """[(point, seed, the experiment with both applied)] for every combination, all built
    (so validated) before the first run: a bad value anywhere in the grid stops the search
    before it trains, naming the grid point."""
    runs = []
    for point in grid_points(grid):
        for seed in seeds:
            overrides = list(point.items()) + [("trainer.seed", seed)]
            try:
                runs.append((point, seed, apply_overrides(experiment, overrides)))
            except ValueError as e:
                raise ValueError(f"grid point {run_name(point, seed)}: {e}") from None
    return runs


def summarize(records: Sequence[Mapping[str, Any]]) -> list[dict]:
    """Per grid point: mean ± std of the selection metric over seeds, best mean first."""
    groups: dict[str, list] = {}
    for record in records:
        groups.setdefault(repr(sorted(record["point"].items())), []).append(record)
    rows = []
    for group in groups.values():
        metric = group[0]["metric"]
        mean, std = mean_std([r["dev"][metric] for r in group])
        rows.append(
            {
                **group[0]["point"],
                "metric": metric,
                "mean": mean,
                "std": std,
                "seeds": len(group),
                "values": [r["dev"][metric] for r in group],
                "best_epochs": [r["best_epoch"] for r in group],
                "train_seconds": float(np.mean([r["train_seconds"] for r in group])),
            }
        )
    return sorted(rows, key=lambda row: -row["mean"])
