"""How long a run has left: each step's recorded seconds, scaled by the pace of this run.

A step's expected time is, in order: the seconds of the record it left in this
run directory before (the settings may have changed since: a rough guide),
else the seconds a reference run of the same recipe recorded
(step_seconds.json, written by `write_reference` from a finished run, with the
CPU it ran on). Once steps have run here, every expectation is scaled by

    pace = Σ actual seconds of the steps run so far / Σ their expected seconds

so a machine twice as slow as the reference sees its estimate double after the
first step. Steps with no expectation (a recipe no reference has run) are
counted as unknown, and the estimate says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from mbert_lib import atomic
from mbert_lib.report.machine import cpu_model
from mbert_lib.step_records import RECORD_FILE, read_record

REFERENCE_FILE = Path(__file__).with_name("step_seconds.json")


def reference_seconds(recipe: str | None, reference_file: Path | None = None) -> dict[str, float]:
    """{step: seconds} of the reference run of `recipe` ({} when there is none)."""
    reference_file = reference_file or REFERENCE_FILE
    if recipe is None or not reference_file.is_file():
        return {}
    recipes = json.loads(reference_file.read_text(encoding="utf-8"))
    return dict(recipes.get(recipe, {}).get("seconds", {}))


def write_reference(run_dir: Path, recipe: str, reference_file: Path | None = None) -> dict:
    """Records the seconds of every finished step of `run_dir` as `recipe`'s reference,
    except those of steps that ran on a loaded CPU (`was_loaded`): for those the
    reference keeps the seconds it had."""
    reference_file = reference_file or REFERENCE_FILE
    recipes = (
        json.loads(reference_file.read_text(encoding="utf-8")) if reference_file.is_file() else {}
    )
    seconds = dict(recipes.get(recipe, {}).get("seconds", {}))
    for path in sorted(Path(run_dir).glob(f"*/{RECORD_FILE}")):
        record = read_record(path.parent)
        if path.parent.name == record["step"] and not (  # not a moved-aside .stale- copy
            was_loaded(record) and record["step"] in seconds
        ):
            seconds[record["step"]] = record["seconds"]
    recipes[recipe] = {"cpu": cpu_model(), "seconds": dict(sorted(seconds.items()))}
    atomic.write_text(reference_file, json.dumps(recipes, indent=2, sort_keys=True) + "\n")
    return recipes[recipe]


def was_loaded(record: Mapping) -> bool:
    """True when the step started or ended with a one-minute load average above 1.25 x
    the CPU count its record names: other work shared the CPU, and its time is too long."""
    load, cpus = record.get("load_average") or {}, record.get("cpu_count")
    if not cpus:
        return False
    return any((load.get(end) or [0.0])[0] > 1.25 * cpus for end in ("start", "end"))


def format_seconds(seconds: float) -> str:
    """'45 s', '12 min', '1 h 05 min'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


class Estimate:
    """Expected seconds per step, corrected by the pace observed in this run."""

    def __init__(self, expected: Mapping[str, float]):
        self.expected = dict(expected)
        self._actual = 0.0
        self._expected_done = 0.0

    def observe(self, step: str, seconds: float) -> None:
        """A step of this run finished in `seconds`."""
        if self.expected.get(step):
            self._actual += seconds
            self._expected_done += self.expected[step]

    @property
    def pace(self) -> float:
        return self._actual / self._expected_done if self._expected_done else 1.0

    def step(self, name: str) -> float | None:
        value = self.expected.get(name)
        return None if value is None else value * self.pace

    def remaining(self, steps: Sequence[str]) -> tuple[float, int]:
        """(expected seconds of `steps`, how many of them have no expectation)."""
        known = [self.step(s) for s in steps]
        return sum(v for v in known if v is not None), sum(v is None for v in known)

    def describe(self, name: str, steps_left: Sequence[str]) -> str:
        """'about 4 min; the run: about 1 h 10 min' for the step starting now ('' if unknown)."""
        this = self.step(name)
        total, unknown = self.remaining(steps_left)
        if this is None and not total:
            return ""
        parts = [f"about {format_seconds(this)}"] if this is not None else []
        run = f"the run: about {format_seconds(total)}"
        if unknown:
            run += f" + {unknown} step(s) never timed"
        return "; ".join(parts + [run])
