"""Shared look of the project's figures: slide-sized fonts, colours, atomic PNG saving."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from mbert_lib import atomic

OURS, PAPER, ALT, GREY = "#1f77b4", "#d62728", "#ff7f0e", "#7f7f7f"
RC = {
    "font.size": 13,
    "axes.titlesize": 15,
    "axes.labelsize": 14,
    "legend.fontsize": 12,
    "xtick.labelsize": 12,
    "ytick.labelsize": 13,
}


def apply() -> None:
    """Sets the slide-sized font sizes on matplotlib's rcParams."""
    plt.rcParams.update(RC)


def save(fig, path) -> None:
    """Writes `fig` as a 150-dpi PNG to `path` atomically; does nothing when `path` is None."""
    if path is not None:
        with atomic.atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=150, bbox_inches="tight", format="png")


def map_scale(values, diverging: bool) -> tuple[float, float, str]:
    """(vmin, vmax, cmap) of one heatmap on its own scale: 0 .. max for probabilities
    (viridis), ±max|values| centred at 0 for a difference (RdBu_r: red is positive)."""
    if diverging:
        bound = max(float(np.max(np.abs(values))), 1e-9)
        return -bound, bound, "RdBu_r"
    return 0.0, max(float(np.max(values)), 1e-9), "viridis"
