"""Numbers quoted in the prose come from records: each is marked with where it comes from.

In README.md, COURSE.md and docs/*.md a number taken from a committed record is written

    <!--n results/payoff.json mlm/pkt mean_pm-->27.3 ± 0.2<!--/n-->

(the comments do not show when the Markdown is rendered): the record file (relative to
the repository), the path of the value inside it (keys, list indices and `key=value`
list selections separated by "/"), and a format from FORMATS. `check` lists every quote
whose text differs from what its record gives now; `update` rewrites them all
(`python -m mbert_lib quotes check`, `... quotes update`); tests/test_quoted_numbers.py
runs `check` on every file, so a quoted number cannot drift from its record unnoticed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from mbert_lib import atomic
from mbert_lib.runtime import REPO_ROOT

QUOTE = re.compile(r"<!--n (?P<file>\S+) (?P<path>.+?) (?P<fmt>\w+)-->(?P<text>.*?)<!--/n-->")
QUOTED_FILES = ("README.md", "COURSE.md", "docs/*.md", "data_scripts/README.md")


def _mean_pm(values, digits: int) -> str:
    x = 100 * np.asarray(values, np.float64)
    return f"{x.mean():.{digits}f} ± {x.std(ddof=1):.{digits}f}"


def _paired(d: dict, digits: int = 1) -> str:
    """A PairedDifference record (in points): "+1.2 [+0.4, +2.0]"."""
    f = f"{{:+.{digits}f}}"
    return f"{f.format(d['mean'])} [{f.format(d['low'])}, {f.format(d['high'])}]"


FORMATS: dict[str, Callable] = {
    "pct0": lambda v: f"{100 * v:.0f}",  # a fraction as a percentage
    "pct1": lambda v: f"{100 * v:.1f}",
    "pct2": lambda v: f"{100 * v:.2f}",
    "mean_pm": lambda v: _mean_pm(v, 1),  # a list of fractions: mean ± std, in %
    "mean_pm2": lambda v: _mean_pm(v, 2),
    "mean_pct1": lambda v: f"{100 * float(np.mean(v)):.1f}",
    "mean_pct2": lambda v: f"{100 * float(np.mean(v)):.2f}",
    "f0": lambda v: f"{v:.0f}",
    "f1": lambda v: f"{v:.1f}",
    "f2": lambda v: f"{v:.2f}",
    "f3": lambda v: f"{v:.3f}",
    "sig2": lambda v: f"{v:.2g}",  # two significant digits: 0.22, 0.017, 3.6e-05
    "int": lambda v: f"{int(v):,}",
    "mb1": lambda v: f"{v / 1e6:.1f}",  # bytes as MB
    "mb2": lambda v: f"{v / 1e6:.2f}",
    "minutes": lambda v: f"{v / 60:.1f}",  # seconds as minutes
    "hours": lambda v: f"{v / 3600:.1f}",  # seconds as hours
    "paired": _paired,  # a PairedDifference dict in points
    "paired2": lambda d: _paired(d, 2),
    "paired_pct": lambda d: _paired({k: 100 * d[k] for k in ("mean", "low", "high")}),
    "se2_pct1": lambda d: f"{200 * d['se']:.1f}",  # two standard errors, fraction -> points
    "mean_f2": lambda v: f"{float(np.mean(v)):.2f}",  # the mean of a list
    "text": str,
}


def value_at(record, path: str):
    """The value at `path` inside a parsed JSON record: "a/b/0/c" (list index 0), or
    "runs/setting=pkt/seconds" (the one list element whose `setting` is "pkt")."""
    node = record
    for part in path.split("/"):
        if isinstance(node, list) and "=" in part:
            key, want = part.split("=", 1)
            found = [x for x in node if isinstance(x, dict) and str(x.get(key)) == want]
            if len(found) != 1:
                raise KeyError(f"{len(found)} elements with {part!r} on the way to {path!r}")
            node = found[0]
        elif isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(f"no {part!r} on the way to {path!r}")
    return node


def expected_text(file: str, path: str, fmt: str, root: Path = REPO_ROOT) -> str:
    """What the quote of (record file, path, format) must read."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown quote format {fmt!r}; known: {sorted(FORMATS)}")
    record = json.loads((root / file).read_text(encoding="utf-8"))
    value = value_at(record, path)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{file} {path} is not a finite number")
    return FORMATS[fmt](value)


def quoted_files(root: Path = REPO_ROOT) -> list[Path]:
    return sorted({p for pattern in QUOTED_FILES for p in root.glob(pattern)})


def check(files: Iterable[Path] | None = None, root: Path = REPO_ROOT) -> list[str]:
    """One line per quote whose text is not what its record gives (or cannot be read)."""
    problems = []
    for path in files or quoted_files(root):
        text = path.read_text(encoding="utf-8")
        for m in QUOTE.finditer(text):
            where = f"{path.relative_to(root)}:{text.count(chr(10), 0, m.start()) + 1}"
            try:
                want = expected_text(m["file"], m["path"], m["fmt"], root)
            except (OSError, KeyError, ValueError, IndexError, TypeError) as e:
                problems.append(f"{where}: {m['file']} {m['path']}: {e}")
                continue
            if m["text"] != want:
                problems.append(f"{where}: reads {m['text']!r}, its record gives {want!r}")
    return problems


def update(files: Iterable[Path] | None = None, root: Path = REPO_ROOT) -> int:
    """Rewrites every quote from its record; returns how many changed."""
    changed = 0
    for path in files or quoted_files(root):
        text = path.read_text(encoding="utf-8")

        def fill(m):
            nonlocal changed
            want = expected_text(m["file"], m["path"], m["fmt"], root)
            changed += want != m["text"]
            return f"<!--n {m['file']} {m['path']} {m['fmt']}-->{want}<!--/n-->"

        new = QUOTE.sub(fill, text)
        if new != text:
            atomic.write_text(path, new)
    return changed
