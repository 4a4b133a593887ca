"""Strict matching of a checkpoint's variables against the name map, and the conversion report.

A conversion never guesses: every variable the config needs must be there
with the right shape, and every variable present must be either needed,
bookkeeping (global step, optimizer slots: skipped and listed) or a known
weight this config does not use (skipped and listed). Anything else stops the
conversion with every problem listed at once.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping

from mbert_lib.checkpoints import CheckpointMismatchError


@dataclasses.dataclass
class Matched:
    """Outcome of a successful match: names to convert, and names skipped with a reason."""

    names: list[str]
    skipped: list[str]  # bookkeeping (global step, optimizer slots, buffers)
    unused: list[str]  # known weights this config does not use


def match_variables(
    source: str,
    expected: Mapping[str, tuple],
    found: Mapping[str, tuple],
    is_bookkeeping: Callable[[str], bool],
    unused: Mapping[str, tuple] | None = None,
    note: str = "",
) -> Matched:
    """Checks `found` {name: shape} against `expected`; raises CheckpointMismatchError.

    `unused` names may be present (then skipped) but must have the expected shape.
    """
    unused = dict(unused or {})
    found = {k: tuple(int(x) for x in s) for k, s in found.items()}
    missing = {k: s for k, s in expected.items() if k not in found}
    misshaped = {
        k: (found[k], tuple(s))
        for k, s in {**expected, **unused}.items()
        if k in found and found[k] != tuple(s)
    }
    skipped = sorted(
        k for k in found if k not in expected and k not in unused and is_bookkeeping(k)
    )
    unexpected = {
        k: s for k, s in found.items() if k not in expected and k not in unused and k not in skipped
    }
    if missing or unexpected or misshaped:
        raise CheckpointMismatchError(source, missing, unexpected, misshaped, note)
    return Matched(
        names=[k for k in expected], skipped=skipped, unused=sorted(k for k in unused if k in found)
    )


@dataclasses.dataclass
class ConversionReport:
    """What a conversion read, wrote and skipped (conversion.json beside the checkpoint)."""

    source: str
    source_format: str  # "tf1" | "hf" | "tf2"
    output: str
    converted: int  # number of weights written
    skipped: list[str]  # bookkeeping variables
    unused: list[str]  # weights the config does not use
    notes: list[str] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json_string(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def summary(self) -> str:
        lines = [
            f"converted {self.converted} weights: {self.source} ({self.source_format}) "
            f"-> {self.output}"
        ]
        if self.skipped:
            lines.append(f"skipped {len(self.skipped)} bookkeeping variable(s):")
            lines += [f"  {k}" for k in self.skipped]
        if self.unused:
            lines.append(f"skipped {len(self.unused)} weight(s) this config does not use:")
            lines += [f"  {k}" for k in self.unused]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)
