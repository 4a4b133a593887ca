"""A pipeline step's record on disk, read by the pipeline that writes it and the report.

    OUT/<step>/step.json               {"step", "title", "result", "seconds", "fingerprint",
                                        "settings", "finished", "load_average", ...}
    OUT/<step>.stale-<fingerprint>/    outputs of superseded settings, moved aside

Records are strict JSON (`mbert_lib.strict_json`): a number that is not finite is null.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

RECORD_FILE = "step.json"
STALE_MARK = ".stale-"  # OUT/<step>.stale-<fingerprint>: outputs of superseded settings


class PipelineError(ValueError):
    """A step cannot run: a missing input, an unknown step name, a bad preset, a corrupt record."""


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


def load_average() -> list[float] | None:
    """The 1, 5 and 15-minute load averages (None where the OS has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None
