"""Markdown for the report: a pandas DataFrame as a GitHub table, sections, figure links.

pandas' own `DataFrame.to_markdown` needs the `tabulate` package, which the
project does not otherwise depend on; a pipe table is a few lines.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

import pandas as pd

NOT_RUN = "not run"


def _decimals(text: str) -> int:
    return len(text.split(".", 1)[1]) if "." in text and "e" not in text else 0


def cell(value: Any, digits: int = 4, decimals: int | None = None) -> str:
    """One table cell: floats to `digits` significant digits (and at most `decimals` after
    the point), both from the value itself, never a rounding of a rounding (190.7459 reads
    190.7, not 190.75 and then 190.8); NaN/None as "—", pipes escaped."""
    if isinstance(value, bool) or value is None:
        return "—" if value is None else str(value)
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}" if abs(value) >= 10_000 else str(int(value))
    if isinstance(value, numbers.Real):
        if math.isnan(value):
            return "—"
        text = f"{float(value):.{digits}g}"
        if decimals is not None and _decimals(text) > decimals:
            text = f"{float(value):.{decimals}f}"
        return text
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(
    frame: pd.DataFrame,
    index: bool = False,
    digits: int = 4,
    decimals: int | Mapping[str, int] | None = None,
) -> str:
    """`frame` as a GitHub-flavoured pipe table (numbers right-aligned); `decimals`: at most
    that many digits after the point (one number, or per column)."""
    if index:
        frame = frame.reset_index()
    columns = [str(c) for c in frame.columns]
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]
    places = [decimals.get(c) if isinstance(decimals, Mapping) else decimals for c in frame.columns]
    lines = [
        "| " + " | ".join(cell(c) for c in columns) + " |",
        "|" + "|".join("---:" if n else "---" for n in numeric) + "|",
    ]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(cell(v, digits, d) for v, d in zip(row, places)) + " |")
    return "\n".join(lines)


def not_run(step: str, what: str = "") -> str:
    """The paragraph of a section whose step has no record."""
    return (
        f"_{NOT_RUN}: no finished `{step}` step in this run" + (f" ({what})" if what else "") + "._"
    )
