"""The records a report is built from: every `<out>/<step>/step.json` of a run.

`Records` maps step name -> record ({"step", "title", "result", "seconds",
"fingerprint", "settings", "finished", "load_average", ...}); a step that
has not finished (or whose record is corrupt: a warning) has no entry, and
every table built from it says "not run".
"""

from __future__ import annotations

import datetime
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

from mbert_lib.step_records import RECORD_FILE, STALE_MARK, PipelineError, read_record

Records = Mapping[str, dict]
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"  # a record's "finished"


def load_records(
    out_dir: str | os.PathLike, order: Sequence[str] = (), exclude: Sequence[str] = ()
) -> dict[str, dict]:
    """Every finished step's record under `out_dir`: steps in `order` first, then the rest
    sorted by name; `exclude` left out (e.g. the report itself)."""
    root = Path(out_dir)
    found = (
        sorted(
            p.parent.name for p in root.glob(f"*/{RECORD_FILE}") if STALE_MARK not in p.parent.name
        )
        if root.is_dir()
        else []
    )
    names = [n for n in order if n in found] + [n for n in found if n not in order]
    records = {}
    for name in names:
        if name in exclude:
            continue
        try:
            records[name] = read_record(root / name)
        except PipelineError as e:  # a corrupt record: reported, the step counts as not run
            warnings.warn(str(e), stacklevel=2)
    return records


def result(records: Records, step: str) -> dict | None:
    """The recorded result of `step`, None when it has not run."""
    record = records.get(step)
    return None if record is None else record.get("result")


def started_finished(record: Mapping) -> tuple[datetime.datetime, datetime.datetime] | None:
    """(start, end) wall-clock times of a record ("finished" minus its seconds)."""
    try:
        end = datetime.datetime.strptime(record["finished"], TIME_FORMAT)
    except (KeyError, TypeError, ValueError):
        return None
    return end - datetime.timedelta(seconds=float(record.get("seconds", 0.0))), end
