"""`reproduce --mixed_precision bfloat16`: every trainer step of a recipe in bfloat16.

Measured against float32 in one process (experiments/bfloat16_vs_float32.py,
docs/distillation_throughput.md): on a CPU with native bfloat16 (AVX512-BF16 or AMX), the
distillation and pre-training steps ran about 1.2x faster with the same losses to three
decimals. Without native instructions TensorFlow emulates bfloat16, so the opt-in is
refused there. The setting reaches each trainer as the `runtime.mixed_precision`
override: it is part of each step's settings, so a bfloat16 run never reuses a float32
step's records, and the reverse.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from mbert_lib.hardware import BFLOAT16_FLAGS, cpu_info, describe, native_bfloat16

CHOICES = ("float32", "bfloat16")


def check_precision(precision: str, info: dict | None = None) -> None:
    """Raises ValueError for an unknown precision, or bfloat16 on a CPU without it."""
    if precision not in CHOICES:
        raise ValueError(f"mixed_precision must be one of {list(CHOICES)}, got {precision!r}")
    if precision == "bfloat16":
        info = info or cpu_info()
        if not native_bfloat16(info):
            raise ValueError(
                "mixed_precision bfloat16 needs a CPU that computes in bfloat16 natively "
                f"(one of {', '.join(BFLOAT16_FLAGS)}); this one ({describe(info)}) would "
                "emulate it, slower than float32: leave mixed_precision at float32"
            )


def with_mixed_precision(
    settings: Mapping[str, Mapping[str, Any]], precision: str
) -> dict[str, Any]:
    """A copy of a recipe's step settings with `runtime.mixed_precision` in the
    overrides of every experiment a step trains (each dict naming a `config_file`)."""

    def visit(node):
        if not isinstance(node, Mapping):
            return copy.deepcopy(node)
        out = {key: visit(value) for key, value in node.items()}
        if "config_file" in out and isinstance(out.get("overrides"), Mapping):
            out["overrides"] = {**out["overrides"], "runtime.mixed_precision": precision}
        return out

    return {step: visit(value) for step, value in settings.items()}
