"""The NoNorm x relu latency grid (paper Table 7): measured here beside the paper's Pixel 4.

Takes the records of `mbert_lib.bench.keras_latency.norm_act_latency`.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mbert_lib.paper import TABLE7_MS, PaperValue
from mbert_lib.viz import style

NORM_LABEL = {"layer_norm": "LayerNorm", "no_norm": "NoNorm"}
BASELINE = ("layer_norm", "gelu")


def combination_label(norm: str, act: str, sep: str = "\n") -> str:
    """("no_norm", "relu") -> "NoNorm\\n+ relu"."""
    return f"{NORM_LABEL.get(norm, norm)}{sep}+ {act}"


def paper_ratio_text(value: PaperValue, baseline: PaperValue) -> str:
    """value / baseline to 2 decimals, with "≈" if either is approximate."""
    approx = value.approx or baseline.approx
    return ("≈" if approx else "") + f"{value.value / baseline.value:.2f}"


def latency_table(records: Sequence[Mapping], paper: Mapping = TABLE7_MS) -> pd.DataFrame:
    """One row per (normalization, activation, jit): median/min ms, ratio to LayerNorm+gelu
    of the same jit mode, and the paper's Pixel 4 ms and ratio (text, "≈" when approximate)."""
    df = pd.DataFrame(list(records))
    needed = {"normalization_type", "hidden_act", "jit", "median_ms", "min_ms"}
    if df.empty or not needed <= set(df.columns):
        raise ValueError(f"records must be non-empty dicts with keys {sorted(needed)}")
    base = df[(df.normalization_type == BASELINE[0]) & (df.hidden_act == BASELINE[1])]
    if set(base.jit) != set(df.jit):
        raise ValueError("records need a LayerNorm + gelu baseline for every jit mode")
    base_ms = base.set_index("jit").median_ms
    df["ratio"] = df.median_ms / df.jit.map(base_ms)
    cells = [paper.get((n, a)) for n, a in zip(df.normalization_type, df.hidden_act)]
    df["paper Pixel 4"] = [str(v) if v else "" for v in cells]
    df["paper ratio"] = [paper_ratio_text(v, paper[BASELINE]) if v else "" for v in cells]
    df["combination"] = [combination_label(n, a, " ")
                         for n, a in zip(df.normalization_type, df.hidden_act)]
    columns = ["combination", "jit", "median_ms", "min_ms", "ratio", "paper Pixel 4",
               "paper ratio"]
    return df[columns].reset_index(drop=True)


def plot_norm_act_latency(records: Sequence[Mapping], default_jit: bool,
                          paper: Mapping = TABLE7_MS, path=None,
                          hardware: str = "this CPU"):
    """Left: median latency per combination and jit mode. Right: ratio to LayerNorm + gelu,
    ours (jit mode `default_jit`) beside the paper's Pixel 4 (paper Table 7)."""
    style.apply()
    df = pd.DataFrame(list(records))
    table = latency_table(records, paper)
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
        rows = [df[(df.normalization_type == n) & (df.hidden_act == a) & (df.jit == jit)].iloc[0]
                for n, a in combos]
        ms = [r.median_ms for r in rows]
        name = "XLA (jit_compile=True)" if jit else "TF graph (tf.function)"
        centers = x + (k - (len(jits) - 1) / 2) * width
        bars = left.bar(centers, ms, width, color=colors[jit],
                        label=name + (" ← default" if jit == default_jit else ""))
        left.bar_label(bars, [f"{m:.1f}" for m in ms], padding=3, fontsize=12)
        left.plot(centers, [r.min_ms for r in rows], linestyle="none", marker="_",
                  markersize=30, markeredgewidth=3, color="black",
                  label="fastest run" if k == 0 else None)
    left.set_xticks(x, labels)
    left.set_ylabel("median latency (ms)")
    left.set_title(f"Measured on {hardware}\n{shape}, median of {int(first.repeats)} runs")
    left.set_ylim(0, df.median_ms.max() * 1.25)
    left.legend(loc="upper right")
    left.grid(axis="y", alpha=0.3)

    ours = [table[(table.combination == combination_label(n, a, " "))
                  & (table.jit == default_jit)].ratio.iloc[0] for n, a in combos]
    paper_values = [paper.get(c) for c in combos]
    paper_ratio = [p.value / paper[BASELINE].value if p else np.nan for p in paper_values]
    bars = right.bar(x - 0.2, paper_ratio, 0.4, color=style.PAPER,
                     label="paper: Pixel 4, TFLite (Table 7)")
    right.bar_label(bars, [f"{paper_ratio_text(p, paper[BASELINE])}\n({p})" if p else ""
                           for p in paper_values], padding=3, fontsize=11)
    bars = right.bar(x + 0.2, ours, 0.4, color=colors[default_jit],
                     label=f"ours: {hardware}, " + ("XLA" if default_jit else "TF graph"))
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
    fig, axes = plt.subplots(1, len(groups), figsize=(7.5 * len(groups), 1.0 + 0.8 * len(df)),
                             squeeze=False)
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
