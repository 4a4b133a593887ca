"""The last step of `python -m mbert_lib reproduce`: REPORT.md from every step's record.

    report   <out>/REPORT.md (figures in <out>/report/); with settings["publish"]
             (the laptop recipe) and the default out dir (runs/laptop, no --out) also
             results/REPORT.md, figures/report_*.png, results/payoff.json and
             results/records.json (every step's record) at the repository root: the
             files the README shows and quotes

It reads records and never runs other steps: a step that has not run is a
"not run" section. Being seconds of work over records, it runs every time
(`rerun`), so the report always shows the records as they are now.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mbert_lib import atomic, hardware, strict_json
from mbert_lib.pipeline import core
from mbert_lib.pipeline.core import Context, Step
from mbert_lib.pipeline.steps_payoff import PAYOFF_FILE
from mbert_lib.report.document import ReportRun, command, write_report
from mbert_lib.runtime import REPO_ROOT
from mbert_lib.step_records import load_records

NAME = "report"
REPORT_FILE = "REPORT.md"
RECORDS_FILE = "records.json"
WALL_TIME_FILE = "wall_time.json"
RECORD_KEYS = ("result", "seconds", "finished", "fingerprint", "load_average", "cpu_count")
RECIPE_KEY = "recipe"  # the recipe's name, in this step's settings


def _is_default_out(ctx: Context, recipe: str) -> bool:
    return ctx.out_dir.resolve() == (core.DEFAULT_OUT / recipe).resolve()


def _command(ctx: Context, recipe: str) -> str:
    return command(recipe, ctx.data_dir, None if _is_default_out(ctx, recipe) else str(ctx.out_dir))


def _shown(path: Path) -> str:
    """`path` relative to the repository when it is inside it (runs/laptop), else as is."""
    try:
        return str(path.absolute().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def _repo_relative(text: str) -> str:
    """Paths inside the repository written relative to it (no directory of this machine)."""
    return text.replace(f"{REPO_ROOT}{os.sep}", "")


def publish_records(out_dir: Path, path: Path) -> None:
    """Every finished step's record of the run in one JSON file (results/records.json):
    what README.md, COURSE.md and docs/ quote their numbers from
    (`mbert_lib.report.quotes`)."""
    records = load_records(out_dir, exclude=(NAME,))
    kept = {
        step: {k: record.get(k) for k in RECORD_KEYS if k in record}
        for step, record in records.items()
    }
    atomic.write_text(path, _repo_relative(strict_json.dumps(kept, indent=1) + "\n"))


def wall_time_record(
    records: Mapping[str, Mapping], order, optional, budget_minutes: float, cpu: str
) -> dict:
    """The run's time (results/wall_time.json, what README.md quotes): the sum of the full
    run's step times against the budget, and each optional step that ran, in minutes. The
    report step itself (seconds) is not counted; each record keeps its load average."""
    full = {name: records[name]["seconds"] / 60 for name in order if name in records}
    missing = [name for name in order if name not in records and name != NAME]
    minutes = sum(records[name]["seconds"] for name in full) / 60  # as REPORT.md sums them
    return {
        "cpu": cpu,
        "budget_minutes": budget_minutes,
        "full_run": {
            "minutes": minutes,
            "status": "met" if minutes <= budget_minutes and not missing else "not met",
            "missing": missing,
            "steps": full,
        },
        "optional": {name: records[name]["seconds"] / 60 for name in optional if name in records},
    }


def run_report(ctx: Context, settings: Mapping[str, Any]) -> dict:
    """settings: the recipe's name (RECIPE_KEY), budget_minutes, publish, and the
    registry's step order ("order": the steps of a full run, "optional": the others)."""
    recipe = settings[RECIPE_KEY]
    report_run = ReportRun(
        recipe=recipe,
        budget_minutes=settings["budget_minutes"],
        command_line=_command(ctx, recipe),
        source=_shown(ctx.out_dir),
        steps=list(settings["order"]),
        optional=list(settings["optional"]),
    )
    written = write_report(
        ctx.out_dir,
        report_run,
        figures_dir=ctx.step_dir("report"),
        report_path=ctx.out_dir / REPORT_FILE,
    )
    ctx.log(f"report: {written['path']}")
    published = None
    if settings["publish"] and _is_default_out(ctx, recipe):  # not from a --out run
        published = write_report(
            ctx.out_dir,
            report_run,
            figures_dir=REPO_ROOT / "figures",
            report_path=REPO_ROOT / "results" / REPORT_FILE,
        )
        publish_records(ctx.out_dir, REPO_ROOT / "results" / RECORDS_FILE)
        wall = wall_time_record(
            load_records(ctx.out_dir, exclude=(NAME,)),
            settings["order"],
            settings["optional"],
            settings["budget_minutes"],
            hardware.describe(),
        )
        atomic.write_text(
            REPO_ROOT / "results" / WALL_TIME_FILE, strict_json.dumps(wall, indent=2) + "\n"
        )
        payoff = ctx.out_dir / PAYOFF_FILE
        if payoff.is_file():
            atomic.write_text(
                REPO_ROOT / "results" / PAYOFF_FILE, _repo_relative(payoff.read_text())
            )
        ctx.log(
            f"report: published {published['path']}, results/{RECORDS_FILE} and "
            f"{len(published['figures'])} figure(s) in figures/"
        )
    missing = [name for name, status in written["sections"].items() if status == "not run"]
    if missing:
        ctx.log(f"report: not run yet: {', '.join(missing)}")
    return {
        "report": written["path"],
        "figures": written["figures"],
        "sections": written["sections"],
        "published": published["path"] if published else None,
    }


STEPS = [
    Step(
        NAME,
        "the report: paper vs reproduced tables, wall time, hardware (REPORT.md)",
        run_report,
        rerun=True,
    )
]
