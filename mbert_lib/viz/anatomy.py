"""Slide-sized figures of model anatomy: preset sizes vs paper Table 1, the MHA:FFN ratio.

Each function takes the tables of `mbert_lib.anatomy`, draws, saves a PNG
atomically when `path` is given, and returns the figure.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd

from mbert_lib.viz import style
from mbert_lib.viz.style import ALT, OURS, PAPER


def _barh_with_paper(ax, names, ours, paper, unit, fmt, suffix):
    y = range(len(names))
    ax.barh(y, ours, color=OURS, label="ours (computed from the config)")
    marked = False
    for i, (o, p) in enumerate(zip(ours, paper)):
        text = fmt(o)
        if not math.isnan(p):
            ax.plot(
                [p],
                [i],
                marker="D",
                markersize=11,
                color=PAPER,
                linestyle="none",
                markeredgecolor="white",
                label=None if marked else "paper",
                zorder=3,
            )
            marked = True
            text += f"  (paper {p:g}{suffix})"
        ax.text(max(o, 0 if math.isnan(p) else p) * 1.35, i, text, va="center", fontsize=12)
    ax.set_yticks(list(y), names)
    ax.set_xscale("log")
    ax.set_xlim(min(ours) / 2, max(ours) * 60)
    ax.set_xlabel(unit)
    ax.grid(axis="x", which="major", alpha=0.3)


def plot_preset_sizes(table: pd.DataFrame, path=None, seq_length: int = 128):
    """Parameters and GFLOPs per preset (log scale, largest first), paper values as red diamonds.

    `table` is `tables.preset_table(...)`.
    """
    style.apply()
    table = table.sort_values("params (M)", ascending=False, kind="stable")
    fig, (left, right) = plt.subplots(1, 2, figsize=(15, 0.6 * len(table) + 2.4), sharey=True)
    names = list(table.index)
    _barh_with_paper(
        left,
        names,
        list(table["params (M)"]),
        list(table["paper params (M)"]),
        "parameters (millions, log scale)",
        lambda v: f"{v:.1f}M" if v >= 1 else f"{v * 1e3:.0f}k",
        "M",
    )
    left.invert_yaxis()  # the y axis is shared: invert it once
    handles, labels = left.get_legend_handles_labels()
    left.set_title("Encoder parameters (paper Table 1)")
    gflops = table[f"GFLOPs @T={seq_length}"]
    _barh_with_paper(
        right,
        names,
        list(gflops),
        list(table["paper GFLOPs"]),
        f"GFLOPs per sequence, T = {seq_length} (log scale)",
        lambda v: f"{v:.2f}B" if v < 10 else f"{v:.1f}B",
        "B",
    )
    right.set_title(f"Matmul FLOPs at T = {seq_length} (paper Table 4)")
    fig.suptitle("MobileBERT presets: sizes computed from the configs vs the paper", fontsize=16)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False)
    style.save(fig, path)
    return fig


def plot_mha_ffn_ratio(
    table: pd.DataFrame, band: tuple[float, float], sweep: pd.DataFrame | None = None, path=None
):
    """MHA:FFN parameter ratio per config (both accountings) with the paper's band.

    `table` is `anatomy.mha_ffn_table(...)`; `sweep` (optional) has columns
    F, "ratio (Table 1 MHA)", "ratio (built)" for one shape with F = 1, 2, ...
    """
    style.apply()
    ncols = 2 if sweep is not None else 1
    fig, axes = plt.subplots(
        1,
        ncols,
        figsize=(15 if sweep is not None else 10, 6),
        gridspec_kw={"width_ratios": [1.6, 1][:ncols]},
    )
    axes = [axes] if ncols == 1 else list(axes)
    ax = axes[0]
    x = range(len(table))
    width = 0.38
    ax.axhspan(*band, color="green", alpha=0.15, label=f"paper's band {band[0]}–{band[1]}")
    ax.bar(
        [i - width / 2 for i in x],
        table["ratio (Table 1 MHA)"],
        width,
        color=OURS,
        label="MHA as in Table 1 (Q, K, V from the MHA input)",
    )
    ax.bar(
        [i + width / 2 for i in x],
        table["ratio (built)"],
        width,
        color=ALT,
        label="as built (shared Q/K bottleneck counted)",
    )
    for i, (a, b) in enumerate(zip(table["ratio (Table 1 MHA)"], table["ratio (built)"])):
        ax.text(i - width / 2, a + 0.02, f"{a:.2f}", ha="center", fontsize=11)
        if abs(a - b) > 1e-9:
            ax.text(i + width / 2, b + 0.02, f"{b:.2f}", ha="center", fontsize=11)
    ax.set_xticks(list(x), list(table.index), rotation=25, ha="right")
    ax.set_ylabel("MHA params / FFN params, per block")
    ax.set_title("MHA:FFN parameter ratio per block (paper §3.2; §4.1, Table 3)")
    ax.set_ylim(0, max(table["ratio (Table 1 MHA)"].max(), table["ratio (built)"].max()) * 1.15)
    ax.grid(axis="y", alpha=0.3)
    if sweep is not None:
        ax = axes[1]
        ax.axhspan(*band, color="green", alpha=0.15)
        ax.plot(sweep["F"], sweep["ratio (Table 1 MHA)"], "o-", color=OURS, lw=2.5, ms=8)
        ax.plot(sweep["F"], sweep["ratio (built)"], "s--", color=ALT, lw=2.5, ms=8)
        ax.set_xticks(list(sweep["F"]))
        ax.set_xlabel("number of stacked FFNs F")
        ax.set_ylabel("MHA params / FFN params")
        ax.set_title("MobileBERT block (H 512, h 128, I 512) vs F")
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False)
    style.save(fig, path)
    return fig
