"""Which teacher a run distils from: the one the project ships, or one it pre-trains itself.

    teacher.source: shipped   teachers/laptop_ibbert (`python -m mbert_lib teacher build`),
                              pre-trained for hours: installed and measured in seconds
    teacher.source: trained   pre-trained in the run from teacher.config_file (the
                              laptop's 1,800 steps: a quarter of an hour; notebook 04)

A shipped teacher brings its vocabulary, so the data step tokenizes with it instead of
training one. `choose_teacher` writes both into a run's settings, so that each step's
fingerprint follows the choice: switching re-runs the data step and everything after
it. The shipped teacher's files are checked against its record here, before any step
runs: a missing, truncated or altered file stops the run naming it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mbert_lib.runtime import REPO_ROOT
from mbert_lib.train.shipped_teacher import WEIGHTS_FILE, read_teacher_record

SOURCES = ("shipped", "trained")


def choose_teacher(
    settings: Mapping[str, Mapping[str, Any]], source: str | None = None
) -> dict[str, dict[str, Any]]:
    """The settings with teacher.source = `source` (None: the recipe's) resolved: for a
    shipped teacher, its record's identity in the teacher's settings and its vocabulary in
    the data step's; for a trained one, the data step trains a vocabulary."""
    settings = copy.deepcopy(dict(settings))
    teacher = settings["teacher"]
    source = source or teacher.get("source", "trained")
    if source not in SOURCES:
        raise ValueError(f"teacher source must be one of {SOURCES}, got {source!r}")
    teacher["source"] = source
    if source == "trained":
        teacher.pop("shipped", None)
        settings["data"]["vocab"] = "trained"
        return settings
    directory = shipped_dir(teacher)
    record = read_teacher_record(directory)
    teacher["shipped"] = {
        "dir": teacher["shipped_dir"],
        "weights_sha256": record["files"][WEIGHTS_FILE]["sha256"],
    }
    settings["data"]["vocab"] = {"shipped_teacher": record["tokenizer"]}
    return settings


def shipped_dir(teacher_settings: Mapping[str, Any]) -> Path:
    """The shipped teacher's directory (teacher.shipped_dir, relative to the repository)."""
    if "shipped_dir" not in teacher_settings:
        raise ValueError("teacher.shipped_dir is not set: where is the shipped teacher?")
    return REPO_ROOT / teacher_settings["shipped_dir"]
