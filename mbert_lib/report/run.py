"""How the run went: wall time per step against the budget, machine load, data and seeds."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
import yaml

from mbert_lib.step_records import Records, result, started_finished


def busy_threshold(cores: int) -> float:
    """A 1-minute load above this means other processes competed with the pipeline, which
    itself keeps at most `cores` threads busy (+1 for its input pipeline and the OS)."""
    return cores + 1.0


def _load(record: Mapping, when: str) -> float | None:
    values = (record.get("load_average") or {}).get(when)
    return float(values[0]) if values else None


def wall_time_table(records: Records, cores: int) -> pd.DataFrame:
    """One row per step: seconds, minutes, share of the total, the 1-minute load average
    when it started and ended, and whether the machine was busy (`busy_threshold`)."""
    total = sum(float(r["seconds"]) for r in records.values()) or 1.0
    rows = []
    for name, record in records.items():
        loads = [x for x in (_load(record, "start"), _load(record, "end")) if x is not None]
        busy = (
            "—"
            if not loads
            else "yes"
            if max(loads) > busy_threshold(record.get("cpu_count") or cores)
            else "no"
        )
        rows.append(
            {
                "step": name,
                "seconds": float(record["seconds"]),
                "minutes": float(record["seconds"]) / 60,
                "share (%)": 100 * float(record["seconds"]) / total,
                "load at start": _load(record, "start"),
                "load at end": _load(record, "end"),
                "busy machine": busy,
                "finished": record.get("finished", ""),
            }
        )
    return pd.DataFrame(rows)


def budget_summary(records: Records, budget_minutes: float) -> dict:
    """Sum of the steps' wall times vs the budget, and the clock span from the first
    step's start to the last step's end (includes pauses and resumptions)."""
    minutes = sum(float(r["seconds"]) for r in records.values()) / 60
    spans = [s for s in map(started_finished, records.values()) if s is not None]
    span = (
        (max(e for _, e in spans) - min(s for s, _ in spans)).total_seconds() / 60
        if spans
        else None
    )
    return {
        "steps": len(records),
        "minutes": minutes,
        "span_minutes": span,
        "budget_minutes": budget_minutes,
        "status": "met" if minutes <= budget_minutes else "not met",
    }


def data_provenance(records: Records) -> dict | None:
    """The data step's source, directory, corpus files with sha256, example counts, and the
    sha256 of the training text and tokenizer (from the files the step wrote)."""
    data = result(records, "data")
    if data is None:
        return None
    examples = Path(data["examples_dir"])
    manifest = _read_json(examples / "manifest.json") or {}
    sources = _read_json(examples.parent / "corpus" / "sources.json") or {}
    key = manifest.get("key", {})
    return {
        "source": data.get("source"),
        "data_dir": data.get("data_dir"),
        "corpus": manifest.get("corpus") or sources.get("corpus"),
        "counts": data.get("counts"),
        "files": sources.get("files", []),
        "train_text_sha256": key.get("train_text_sha256"),
        "heldout_text_sha256": key.get("heldout_text_sha256"),
        "tokenizer_sha256": key.get("tokenizer_sha256"),
        "fingerprint": records["data"].get("fingerprint"),
    }


def seeds_table(records: Records, steps: Sequence[str] = ()) -> pd.DataFrame:
    """Each seed the run used: the data step's, every trainer's (its experiment.yaml), the
    fine-tuning seeds per model, and the optional distill_seeds step's pre-training seeds."""
    rows = []
    if "data" in records:
        rows.append(
            {
                "step": "data",
                "seed": str(records["data"]["settings"].get("seed")),
                "what": "corpus split, masking, NSP pairs",
            }
        )
    for name in steps or records:
        model_dir = (result(records, name) or {}).get("model_dir")
        seed = _trainer_seed(model_dir) if model_dir else None
        if seed is not None:
            rows.append({"step": name, "seed": str(seed), "what": "trainer (experiment.yaml)"})
    finetune = result(records, "finetune") or {}
    for model, entry in finetune.get("models", {}).items():
        if entry.get("status") == "done":
            rows.append(
                {
                    "step": f"finetune/{model}",
                    "seed": ", ".join(map(str, entry["seeds"])),
                    "what": "fine-tuning runs",
                }
            )
    seeded = result(records, "distill_seeds") or {}
    for row, entry in seeded.get("rows", {}).items():
        rows.append(
            {
                "step": f"distill_seeds/{row}",
                "seed": ", ".join(map(str, entry["seeds"])),
                "what": "pre-training (trainer.seed), each fine-tuned once with seed "
                f"{seeded.get('finetune_seed', 0)}",
            }
        )
    return pd.DataFrame(rows, columns=["step", "seed", "what"])


def _trainer_seed(model_dir: str) -> int | None:
    path = Path(model_dir) / "experiment.yaml"
    try:
        experiment = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return None
    return (experiment.get("trainer") or {}).get("seed")


def _read_json(path: os.PathLike) -> dict | None:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
