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
from typing import Callable, Mapping


def _shape(s) -> list[int]:
    return [int(x) for x in s]


class CheckpointMismatchError(ValueError):
    """A checkpoint's variables do not match the config; lists every problem."""

    def __init__(self, source: str, missing: Mapping[str, tuple], unexpected: Mapping[str, tuple],
                 misshaped: Mapping[str, tuple[tuple, tuple]], note: str = ""):
        self.source = source
        self.missing = dict(missing)
        self.unexpected = dict(unexpected)
        self.misshaped = dict(misshaped)
        n = len(self.missing) + len(self.unexpected) + len(self.misshaped)
        lines = [f"{source}: {n} variable(s) do not match the config"
                 + (f"; {note}" if note else "")]
        if self.missing:
            lines.append(f"  missing ({len(self.missing)}):")
            lines += [f"    {k}  expected shape {_shape(s)}" for k, s in sorted(self.missing.items())]
        if self.unexpected:
            lines.append(f"  unexpected ({len(self.unexpected)}):")
            lines += [f"    {k}  shape {_shape(s)}" for k, s in sorted(self.unexpected.items())]
        if self.misshaped:
            lines.append(f"  wrong shape ({len(self.misshaped)}):")
            lines += [f"    {k}  found {_shape(f)}, expected {_shape(e)}"
                      for k, (f, e) in sorted(self.misshaped.items())]
        if self.misshaped and not (self.missing or self.unexpected):
            lines.append("  (only shapes differ: does the config describe this checkpoint?)")
        elif any(k.replace("FakeLayerNorm", "LayerNorm") in self.unexpected
                 or k.replace("/LayerNorm", "/FakeLayerNorm") in self.unexpected
                 for k in self.missing):
            lines.append("  (FakeLayerNorm vs LayerNorm names: check normalization_type)")
        super().__init__("\n".join(lines))


@dataclasses.dataclass
class Matched:
    """Outcome of a successful match: names to convert, and names skipped with a reason."""

    names: list[str]
    skipped: list[str]   # bookkeeping (global step, optimizer slots, buffers)
    unused: list[str]    # known weights this config does not use


def match_variables(source: str, expected: Mapping[str, tuple], found: Mapping[str, tuple],
                    is_bookkeeping: Callable[[str], bool],
                    unused: Mapping[str, tuple] | None = None, note: str = "") -> Matched:
    """Checks `found` {name: shape} against `expected`; raises CheckpointMismatchError.

    `unused` names may be present (then skipped) but must have the expected shape.
    """
    unused = dict(unused or {})
    found = {k: tuple(int(x) for x in s) for k, s in found.items()}
    missing = {k: s for k, s in expected.items() if k not in found}
    misshaped = {k: (found[k], tuple(s)) for k, s in {**expected, **unused}.items()
                 if k in found and found[k] != tuple(s)}
    skipped = sorted(k for k in found if k not in expected and k not in unused and is_bookkeeping(k))
    unexpected = {k: s for k, s in found.items()
                  if k not in expected and k not in unused and k not in skipped}
    if missing or unexpected or misshaped:
        raise CheckpointMismatchError(source, missing, unexpected, misshaped, note)
    return Matched(names=[k for k in expected], skipped=skipped,
                   unused=sorted(k for k in unused if k in found))


@dataclasses.dataclass
class ConversionReport:
    """What a conversion read, wrote and skipped (written as conversion.json beside the checkpoint)."""

    source: str
    source_format: str           # "tf1" | "hf" | "tf2"
    output: str
    converted: int               # number of weights written
    skipped: list[str]           # bookkeeping variables
    unused: list[str]            # weights the config does not use
    notes: list[str] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json_string(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def summary(self) -> str:
        lines = [f"converted {self.converted} weights: {self.source} ({self.source_format}) "
                 f"-> {self.output}"]
        if self.skipped:
            lines.append(f"skipped {len(self.skipped)} bookkeeping variable(s):")
            lines += [f"  {k}" for k in self.skipped]
        if self.unused:
            lines.append(f"skipped {len(self.unused)} weight(s) this config does not use:")
            lines += [f"  {k}" for k in self.unused]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)
