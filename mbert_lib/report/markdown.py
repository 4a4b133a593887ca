"""Markdown for the report: a pandas DataFrame as a GitHub table, sections, figure links.

pandas' own `DataFrame.to_markdown` needs the `tabulate` package, which the
project does not otherwise depend on; a pipe table is a few lines.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import pandas as pd

NOT_RUN = "not run"


def cell(value: Any, digits: int = 4) -> str:
    """One table cell: floats to `digits` significant digits, NaN/None as "—", pipes escaped."""
    if isinstance(value, bool) or value is None:
        return "—" if value is None else str(value)
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}" if abs(value) >= 10_000 else str(int(value))
    if isinstance(value, numbers.Real):
        return "—" if math.isnan(value) else f"{float(value):.{digits}g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(frame: pd.DataFrame, index: bool = False, digits: int = 4) -> str:
    """`frame` as a GitHub-flavoured pipe table (numbers right-aligned)."""
    if index:
        frame = frame.reset_index()
    columns = [str(c) for c in frame.columns]
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]
    lines = [
        "| " + " | ".join(cell(c) for c in columns) + " |",
        "|" + "|".join("---:" if n else "---" for n in numeric) + "|",
    ]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(cell(v, digits) for v in row) + " |")
    return "\n".join(lines)


def not_run(step: str, what: str = "") -> str:
    """The paragraph of a section whose step has no record."""
    return (
        f"_{NOT_RUN}: no finished `{step}` step in this run" + (f" ({what})" if what else "") + "._"
    )
