"""Run-mode switches shared by notebooks, scripts and tests.

`MBERT_FAST=1` shrinks every heavy computation (sizes, steps, data, repeats)
so that all notebooks run in minutes under nbmake; fast mode runs the same
code paths, only smaller (and builds LayerNorms without XLA, whose per-layer compiles
cost more than a few-step run: `mbert_lib.layers.fast.layer_norm`). Figures of a fast
run go to a scratch directory, so a test run never overwrites the committed full-run
figures in figures/.
"""

from __future__ import annotations

import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def fast_mode() -> bool:
    """True when MBERT_FAST=1 (CI, nbmake)."""
    value = os.environ.get("MBERT_FAST", "0").strip().lower()
    if value not in ("", "0", "1", "false", "true"):
        raise ValueError(f"MBERT_FAST must be 0 or 1, got {os.environ['MBERT_FAST']!r}")
    return value in ("1", "true")


def pick(full, fast):
    """`fast` in fast mode, `full` otherwise."""
    return fast if fast_mode() else full


def figures_dir() -> Path:
    """figures/ of the repository for full runs; a scratch directory in fast mode.

    MBERT_FIGURES_DIR overrides both.
    """
    override = os.environ.get("MBERT_FIGURES_DIR")
    if override:
        path = Path(override)
    elif fast_mode():
        path = Path(tempfile.gettempdir()) / "mbert_fast_figures"
    else:
        path = REPO_ROOT / "figures"
    path.mkdir(parents=True, exist_ok=True)
    return path


def figure_path(name: str) -> Path:
    """Where a figure called `name` (e.g. "01_nonorm_latency.png") is written."""
    return figures_dir() / name


def shown_path(path) -> str:
    """`path` as a notebook prints it: relative to the repository when inside it, so that
    committed outputs name no directory of the machine that ran them."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(REPO_ROOT.resolve()))
    except ValueError:
        return str(path)


@contextmanager
def stopwatch(label: str):
    """Prints "`label`: N s wall time" when the block ends (the run time a worked
    solution reports beside its result)."""
    start = time.perf_counter()
    yield
    print(f"{label}: {time.perf_counter() - start:.1f} s wall time")
