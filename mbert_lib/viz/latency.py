"""The NoNorm x relu latency grid (paper Table 7): measured here beside the paper's Pixel 4.

Takes the records of `mbert_lib.bench.keras_latency.norm_act_latency`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mbert_lib.paper import TABLE7_MS
from mbert_lib.tables.table7_norm_act import (
    BASELINE,
    combination_label,
    keras_table7,
    paper_ratio_text,
)
from mbert_lib.viz import style


def plot_norm_act_latency(
    records: Sequence[Mapping],
    default_jit: bool,
    paper: Mapping = TABLE7_MS,
    path=None,
    hardware: str = "this CPU",
):
    """Left: median latency per combination and jit mode. Right: ratio to LayerNorm + gelu,
    ours (jit mode `default_jit`) beside the paper's Pixel 4 (paper Table 7)."""
    style.apply()
    df = pd.DataFrame(list(records))
    table = keras_table7(records, paper)
    combos = list(dict.fromkeys(zip(df.normalization_type, df.hidden_act)))
    labels = [combination_label(n, a) for n, a in combos]
    jits = sorted(set(df.jit))
    first = df.iloc[0]
    shape = f"{first.num_hidden_layers} layers, T = {first.seq_length}, B = {first.batch}"
    x = np.arange(len(combos))

    fig, (left, right) = plt.subplots(1, 2, figsize=(16, 6.2))
    width = 0.8 / len(jits)
    colors = {False: style.OURS, True: style.ALT}
    for k, jit in enumerate(jits):
        rows = [
            df[(df.normalization_type == n) & (df.hidden_act == a) & (df.jit == jit)].iloc[0]
            for n, a in combos
        ]
        ms = [r.median_ms for r in rows]
        name = "XLA (jit_compile=True)" if jit else "TF graph (tf.function)"
        centers = x + (k - (len(jits) - 1) / 2) * width
        bars = left.bar(
            centers,
            ms,
            width,
            color=colors[jit],
            label=name + (" ← default" if jit == default_jit else ""),
        )
        left.bar_label(bars, [f"{m:.1f}" for m in ms], padding=3, fontsize=12)
        left.plot(
            centers,
            [r.min_ms for r in rows],
            linestyle="none",
            marker="_",
            markersize=30,
            markeredgewidth=3,
            color="black",
            label="fastest run" if k == 0 else None,
        )
    left.set_xticks(x, labels)
    left.set_ylabel("median latency (ms)")
    left.set_title(
        f"Measured on {hardware} (paper Table 7)\n{shape}, median of {int(first.repeats)} runs"
    )
    left.set_ylim(0, df.median_ms.max() * 1.25)
    left.legend(loc="upper right")
    left.grid(axis="y", alpha=0.3)

    ours = [
        table[
            (table.combination == combination_label(n, a, " ")) & (table.jit == default_jit)
        ].ratio.iloc[0]
        for n, a in combos
    ]
    paper_values = [paper.get(c) for c in combos]
    paper_ratio = [p.value / paper[BASELINE].value if p else np.nan for p in paper_values]
    bars = right.bar(
        x - 0.2, paper_ratio, 0.4, color=style.PAPER, label="paper: Pixel 4, TFLite (Table 7)"
    )
    right.bar_label(
        bars,
        [f"{paper_ratio_text(p, paper[BASELINE])}\n({p})" if p else "" for p in paper_values],
        padding=3,
        fontsize=11,
    )
    bars = right.bar(
        x + 0.2,
        ours,
        0.4,
        color=colors[default_jit],
        label=f"ours: {hardware}, " + ("XLA" if default_jit else "TF graph"),
    )
    right.bar_label(bars, [f"{r:.2f}" for r in ours], padding=3, fontsize=12)
    right.axhline(1.0, color=style.GREY, lw=1, ls="--")
    right.set_xticks(x, labels)
    right.set_ylabel("latency / latency of LayerNorm + gelu")
    right.set_title("Relative to LayerNorm + gelu\n(≈: paper cell not confirmed, approximate)")
    right.set_ylim(0, max(np.nanmax(paper_ratio), max(ours)) * 1.35)
    right.legend(loc="upper right")
    right.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    style.save(fig, path)
    return fig


def plot_op_costs(records: Sequence[Mapping], path=None, title: str = ""):
    """Horizontal bars of median ms per op, one panel per `group` of the records.

    `records`: `op_latency` records with an added `group` key (e.g.
    "activation", "norm"); ops of one group are comparable (same elements).
    """
    style.apply()
    df = pd.DataFrame(list(records))
    if df.empty or not {"group", "op", "median_ms"} <= set(df.columns):
        raise ValueError("records must be non-empty dicts with keys group, op, median_ms")
    groups = list(dict.fromkeys(df.group))
    fig, axes = plt.subplots(
        1, len(groups), figsize=(7.5 * len(groups), 1.0 + 0.8 * len(df)), squeeze=False
    )
    for ax, group in zip(axes[0], groups):
        rows = df[df.group == group]
        y = np.arange(len(rows))
        bars = ax.barh(y, rows.median_ms, color=style.OURS)
        ax.bar_label(bars, [f"{m:.2f} ms" for m in rows.median_ms], padding=4, fontsize=12)
        ax.set_yticks(y, rows.op)
        ax.invert_yaxis()
        ax.set_xlim(0, rows.median_ms.max() * 1.3)
        ax.set_xlabel("median ms")
        elements = rows.elements.iloc[0] if "elements" in rows else None
        ax.set_title(f"{group}" + (f" ({elements / 1e6:.2f}M elements)" if elements else ""))
        ax.grid(axis="x", alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=15)
    fig.tight_layout()
    style.save(fig, path)
    return fig
