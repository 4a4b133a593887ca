"""Resumable multi-step runs: each step writes its outputs, then a record; done steps are skipped.

    OUT/<step>/...            whatever the step writes (a model directory, a report, ...)
    OUT/<step>/step.json      written last: {"step", "result", "seconds", "fingerprint", ...}

A step whose step.json exists with the same fingerprint (a hash of the
settings it ran with) is skipped and its recorded result reused; a step
killed half-way has no step.json and runs again, resuming from its own
checkpoints (the trainers are resumable). Changing a step's settings changes
its fingerprint and re-runs it and the steps after it that depend on it; the
outputs made with the old settings are first moved aside to
OUT/<step>.stale-<old fingerprint> (a trainer must not resume from them).

A step may also read steps its settings name (`uses`, e.g. the models a
fine-tuning step compares): those that are part of the pipeline run before
it and enter its fingerprint; those that are not are passed over here and
reported by the step itself, and appear in its fingerprint as absent, so
the step re-runs once they exist.

While it runs steps, a run holds OUT/.lock (mbert_lib.run_lock): a second run into the same
directory is refused, naming the first.

A step may be finished in its records only (OUT/<step>/records_only.json: installed
from a bundle without its trained models, e.g. the rows notebook 06 reads). It counts
as done for whoever reads its record; when a step that must run depends on it or
uses it, it is trained first (its records moved aside), since that step reads its
models.

A step marked `rerun` (the report: it only reads the others' records, in
seconds) runs every time, so that it always shows the records as they are.
A step marked `optional` (extra seeds that double a run's length) is left out
of a full run and runs only when named in `only` (`reproduce --steps`).
Each record also holds the machine's load average when the step started
and ended (`os.getloadavg`): timings taken while other work loaded the CPU
can be told apart. Records are strict JSON: a number that is not finite (the
standard deviation of a single seed, NaN in memory) is written as null. A full
disk stops the run with a DiskFullError saying how to resume; a failing step
appears as "failed" in the summary.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mbert_lib import atomic, strict_json
from mbert_lib.pipeline import checks, eta
from mbert_lib.run_lock import run_lock
from mbert_lib.runtime import REPO_ROOT
from mbert_lib.step_records import (
    RECORD_FILE,
    STALE_MARK,
    PipelineError,
    is_records_only,
    load_average,
    read_record,
)

DEFAULT_OUT = REPO_ROOT / "runs"  # a recipe's run goes to DEFAULT_OUT/<recipe> by default


class DiskFullError(PipelineError):
    """The disk filled up while a step was writing; the run resumes once there is space."""


@dataclasses.dataclass(frozen=True)
class Step:
    """One unit of work. `run(ctx, settings)` returns a JSON-able result dict."""

    name: str
    title: str
    run: Callable[[Context, Mapping[str, Any]], dict]
    depends: tuple[str, ...] = ()
    uses: Callable[[Mapping[str, Any]], Sequence[str]] | None = None  # settings -> steps
    rerun: bool = False  # run even when finished (a summary of other steps' records)
    optional: bool = False  # left out of a full run; runs when named (--steps)
    # what the step reads from outside the run (e.g. the data files' sha256): part of its
    # fingerprint, so that other input re-runs it even with the same settings
    inputs: Callable[[Context], Any] | None = None

    def used_steps(self, settings: Mapping[str, Any]) -> tuple[str, ...]:
        """The steps this step's settings name (see the module docstring)."""
        return tuple(self.uses(settings)) if self.uses is not None else ()


@dataclasses.dataclass
class Context:
    """What every step sees: where to write, the recipe's settings, the data directory."""

    out_dir: Path
    settings: Mapping[str, Mapping[str, Any]]  # step name -> its settings
    data_dir: str | None = None  # a local data directory (../shared/data)
    log: Callable[[str], None] = print
    show_progress: bool = True
    bundle: Path | None = None  # trained steps to install (pipeline.bundle)
    recipe: str | None = None  # its name: the reference step times (eta.py)

    def step_dir(self, name: str) -> Path:
        return self.out_dir / name

    def record_fingerprint(self, name: str) -> str:
        """The fingerprint a finished step ran with ("absent" when it has not): a run made
        from a step's models names it, so that new models make a new run."""
        record = read_record(self.step_dir(name))
        return record.get("fingerprint", "unknown") if record else "absent"

    def result(self, name: str) -> dict:
        """The recorded result of a finished step (a dependency)."""
        record = read_record(self.step_dir(name))
        if record is None:
            raise PipelineError(
                f"step {name!r} has not finished: {self.step_dir(name)} has no "
                f"{RECORD_FILE}; run it first"
            )
        return record["result"]


def fingerprint(settings: Mapping[str, Any], upstream: Sequence[str] = ()) -> str:
    """sha256 of a step's settings and its dependencies' fingerprints."""
    text = json.dumps(
        {"settings": settings, "upstream": list(upstream)}, sort_keys=True, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def step_fingerprints(
    steps: Sequence[Step], ctx: Context, known: Mapping[str, str] | None = None
) -> dict[str, str]:
    """{step name: fingerprint} for `steps` in order under ctx's settings: what a step's
    record must hold to count as done (a step's upstream is its dependencies' prints).
    `known`: prints taken as given instead of computed (e.g. a bundle's data step, whose
    files this machine may not have)."""
    prints: dict[str, str] = dict(known or {})
    for step in steps:
        if step.name in prints:
            continue
        settings = ctx.settings.get(step.name, {})
        upstream = [prints.get(d, "") for d in step.depends] + [
            f"{d}:{prints.get(d, 'absent')}" for d in step.used_steps(settings)
        ]
        if step.inputs is not None:
            upstream.append(json.dumps(step.inputs(ctx), sort_keys=True, default=str))
        prints[step.name] = fingerprint(settings, upstream)
    return prints


def run_steps(
    steps: Sequence[Step],
    ctx: Context,
    only: Sequence[str] | None = None,
    records: list | None = None,
) -> list[dict]:
    """Runs `steps` in order (or those in `only` and what they depend on); returns records.

    Prints "[k/n] title" per step with the time it and the rest of the run are
    expected to take (eta.py), "(done, skipped)" for finished ones, and the
    wall time of each. `records`, if given, receives each record as it
    is made, and a {"step", "failed": True, "seconds"} entry for a step that
    raises (so a caller can show how far a failed run got).
    """
    by_name = {s.name: s for s in steps}
    wanted = (
        _with_dependencies(only, by_name, ctx)
        if only
        else [s.name for s in steps if not s.optional]
    )
    todo = [s for s in steps if s.name in wanted]
    prints = step_fingerprints(steps, ctx)
    records = [] if records is None else records
    # Read again under the lock: a run that held it may have finished some steps.
    with run_lock(ctx.out_dir) if _pending(todo, ctx, prints)[1] else contextlib.nullcontext():
        found, pending = _pending(todo, ctx, prints)
        estimate = eta.Estimate(
            {
                **eta.reference_seconds(ctx.recipe),
                **{n: found[n]["seconds"] for n in pending if found[n]},
            }
        )
        _run_pending(todo, pending, found, prints, estimate, ctx, records)
    return records


def _pending(
    todo: Sequence[Step], ctx: Context, prints: Mapping[str, str]
) -> tuple[dict[str, dict | None], list[str]]:
    """({step: its record or None}, the steps that must run: no record of these settings,
    or `rerun`)."""
    found = {s.name: read_record(ctx.step_dir(s.name)) for s in todo}
    pending = {
        s.name
        for s in todo
        if s.rerun or found[s.name] is None or found[s.name].get("fingerprint") != prints[s.name]
    }
    # A step that runs reads its inputs' models: those finished in their records only are
    # trained first. Backwards, so that the inputs of an input added here are seen too.
    for step in reversed(todo):
        if step.name in pending and not step.rerun:
            inputs = (*step.depends, *step.used_steps(ctx.settings.get(step.name, {})))
            pending.update(
                name
                for name in inputs
                if name in found and found[name] and is_records_only(ctx.step_dir(name))
            )
    return found, [s.name for s in todo if s.name in pending]


def _run_pending(
    todo: Sequence[Step],
    pending: Sequence[str],
    found: Mapping[str, dict | None],
    prints: Mapping[str, str],
    estimate: eta.Estimate,
    ctx: Context,
    records: list,
) -> None:
    """Runs the `pending` steps of `todo` in order, skipping (and recording) the others."""
    for k, step in enumerate(todo, 1):
        settings = ctx.settings.get(step.name, {})
        directory = ctx.step_dir(step.name)
        record = found[step.name]
        header = f"[{k}/{len(todo)}] {step.title}"
        if step.name not in pending:
            only = "; its records only" if is_records_only(directory) else ""
            ctx.log(f"{header}: done ({record['seconds']:.0f} s when it ran{only}), skipped")
            records.append({**record, "skipped": True})
            continue
        expected = estimate.describe(step.name, pending[pending.index(step.name) :])
        ctx.log(f"{header} ({expected})" if expected else header)
        if record is not None and not step.rerun:
            _move_aside(directory, record, ctx)
        for dependency in step.depends:
            ctx.result(dependency)
        start, load_start = time.perf_counter(), load_average()
        try:
            directory.mkdir(parents=True, exist_ok=True)
            result = step.run(ctx, settings)
            record = {
                "step": step.name,
                "title": step.title,
                "result": result,
                "seconds": round(time.perf_counter() - start, 1),
                "fingerprint": prints[step.name],
                "settings": settings,
                "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
                "load_average": {"start": load_start, "end": load_average()},
                "cpu_count": os.cpu_count(),
            }
            atomic.write_text(
                directory / RECORD_FILE, strict_json.dumps(record, indent=2, default=str) + "\n"
            )
        except BaseException as e:
            records.append(
                {
                    "step": step.name,
                    "title": step.title,
                    "failed": True,
                    "skipped": False,
                    "seconds": round(time.perf_counter() - start, 1),
                }
            )
            if checks.is_disk_full(e):
                raise DiskFullError(checks.disk_full_message(step.name, ctx.out_dir, e)) from e
            raise
        estimate.observe(step.name, record["seconds"])
        ctx.log(f"{header}: finished in {record['seconds']:.0f} s")
        records.append({**record, "skipped": False})


def _move_aside(directory: Path, record: Mapping[str, Any], ctx: Context) -> None:
    """Renames the outputs of a run with other settings out of the step's way."""
    stale = directory.with_name(
        f"{directory.name}{STALE_MARK}{record.get('fingerprint', 'unknown')}"
    )
    why = (
        "only its records are here, and a step after it reads its models"
        if is_records_only(directory)
        else "settings changed since it ran"
    )
    if stale.exists():
        shutil.rmtree(stale)
    directory.rename(stale)
    ctx.log(f"  {why}: its old outputs moved to {stale}")


def _with_dependencies(only: Sequence[str], by_name: Mapping[str, Step], ctx: Context) -> set[str]:
    unknown = sorted(set(only) - set(by_name))
    if unknown:
        raise PipelineError(f"unknown step(s) {unknown}; known steps: {list(by_name)}")
    wanted: set[str] = set()
    stack = list(only)
    while stack:
        name = stack.pop()
        if name not in wanted:
            wanted.add(name)
            step = by_name[name]
            stack.extend(step.depends)
            stack.extend(d for d in step.used_steps(ctx.settings.get(name, {})) if d in by_name)
    return wanted


def status(record: Mapping[str, Any]) -> str:
    """ "skipped (done)", "ran" or "FAILED" (a record of run_steps)."""
    if record.get("failed"):
        return "FAILED"
    return "skipped (done)" if record.get("skipped") else "ran"


def summary_table(records: Sequence[dict]) -> str:
    """A plain-text table: step, status, wall time."""
    rows = [(r["step"], status(r), f"{r['seconds']:.0f} s") for r in records]
    width = max([len(r[0]) for r in rows] + [5])
    lines = [f"{'step':<{width}}  {'status':<15}  time"]
    lines += [f"{a:<{width}}  {b:<15}  {c}" for a, b, c in rows]
    total = sum(r["seconds"] for r in records)
    lines.append(f"{'total':<{width}}  {'':<15}  {total:.0f} s (time of the runs that made them)")
    return "\n".join(lines)


def data_dir_or_env(data_dir: str | None) -> str | None:
    """The explicit --data-dir, else MBERT_DATA_DIR, else None (the offline default);
    a given directory must be readable and hold the expected files (checks.check_data_dir)."""
    value = data_dir or os.environ.get("MBERT_DATA_DIR") or None
    return None if value is None else checks.check_data_dir(value)
