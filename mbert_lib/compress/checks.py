"""Checks of compression settings that read no model (and so import no TensorFlow: the
experiment files use them)."""

from __future__ import annotations


def check_sparsity(value, name: str = "sparsity") -> float:
    """`value` as a float in [0, 1); raises ValueError naming `name` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
        raise ValueError(f"{name} must be a number in [0, 1), got {value!r}")
    return float(value)
