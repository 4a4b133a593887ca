"""Run time of each committed notebook's last full execution, from its cell timestamps.

    python experiments/notebook_run_times.py

nbclient (and JupyterLab) record when each cell started and finished in the cell
metadata; a notebook's run time is first start to last finish. COURSE.md's "run"
columns (the student notebooks and their instructor copies in notebooks/solutions/)
come from this script.
"""

import datetime
import json
import pathlib

NOTEBOOKS = pathlib.Path(__file__).resolve().parent.parent / "notebooks"


def run_minutes(path: pathlib.Path) -> float | None:
    """Minutes from the first cell's start to the last cell's end; None without timestamps."""
    stamps = [
        c.get("metadata", {}).get("execution", {}) for c in json.loads(path.read_text())["cells"]
    ]
    starts = [s["iopub.execute_input"] for s in stamps if "iopub.execute_input" in s]
    ends = [s["shell.execute_reply"] for s in stamps if "shell.execute_reply" in s]
    if not starts or not ends:
        return None
    parse = datetime.datetime.fromisoformat
    return (parse(max(ends)) - parse(min(starts))).total_seconds() / 60


if __name__ == "__main__":
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")) + sorted(
        NOTEBOOKS.glob("solutions/[0-9][0-9]_*.ipynb")
    ):
        minutes = run_minutes(path)
        print(f"{path.stem:32s} " + ("no timestamps" if minutes is None else f"{minutes:.1f} min"))
