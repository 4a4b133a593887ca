"""A pipeline step's record on disk, read by the pipeline that writes it and the report.

    OUT/<step>/step.json               {"step", "title", "result", "seconds", "fingerprint",
                                        "settings", "finished", "load_average", ...}
    OUT/<step>.stale-<fingerprint>/    outputs of superseded settings, moved aside
    OUT/<step>/records_only.json       present when only the step's records were installed
                                        (from a bundle), not its trained models

Records are strict JSON (`mbert_lib.strict_json`): a number that is not finite is null.
`Records` maps step name -> record, for every finished step of a run (`load_records`); a
step that has not finished (or whose record is corrupt: a warning) has no entry.
"""

from __future__ import annotations

import datetime
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

RECORD_FILE = "step.json"
STALE_MARK = ".stale-"  # OUT/<step>.stale-<fingerprint>: outputs of superseded settings
RECORDS_ONLY_FILE = "records_only.json"


class PipelineError(ValueError):
    """A step cannot run: a missing input, an unknown step name, a bad recipe, a corrupt record."""


def read_record(directory: Path) -> dict | None:
    """The record in `directory`, None when the step has not finished; PipelineError when
    the file is not valid JSON."""
    path = Path(directory) / RECORD_FILE
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise PipelineError(
            f"{path} is not valid JSON ({e}); delete it to re-run the step"
        ) from None


def is_records_only(directory: Path) -> bool:
    """True when `directory` holds a step's records without its trained models
    (`mbert_lib.pipeline.bundle`): reading its record works, training on it does not."""
    return (Path(directory) / RECORDS_ONLY_FILE).is_file()


def load_average() -> list[float] | None:
    """The 1, 5 and 15-minute load averages (None where the OS has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


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
