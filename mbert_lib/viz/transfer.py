"""Figures of knowledge transfer: attention maps teacher vs student, per-stage loss curves,
per-layer losses across stages, feature statistics per layer, and strategy / ablation
results beside the paper's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from mbert_lib.viz import style


def plot_attention_grid(
    rows: Sequence[Mapping],
    tokens: Sequence[str],
    path=None,
    title: str | None = None,
    cell: float = 3.3,
    difference: tuple[int, int] | None = None,
):
    """A grid of attention maps: one row per entry of `rows`, one column per map.

    rows: [{"label": str, "maps": [(column title, probs [T, T]), ...]}, ...];
    every row has the same number of maps. Rows are queries, columns keys. Each
    panel has its own colour scale (0 .. its largest probability) and colour bar,
    so a nearly uniform map shows its faint structure instead of one flat colour.
    difference (a, b): one more column, maps[a] − maps[b] on a diverging scale
    centred at 0 (red: a attends more, blue: b attends more).
    """
    style.apply()
    n_rows = len(rows)
    n_cols = len(rows[0]["maps"]) + (difference is not None)
    fig, axes = plt.subplots(
        n_rows, n_cols, figsize=(cell * 1.25 * n_cols, cell * n_rows + 0.8), squeeze=False
    )
    labels = list(tokens)
    for i, row in enumerate(rows):
        panels = [(column, np.asarray(probs), False) for column, probs in row["maps"]]
        if difference is not None:
            (name_a, a), (name_b, b) = row["maps"][difference[0]], row["maps"][difference[1]]
            panels.append(
                (
                    f"{name_a.splitlines()[0]} − {name_b.splitlines()[0]}",
                    np.asarray(a) - np.asarray(b),
                    True,
                )
            )
        for j, (column, values, diverging) in enumerate(panels):
            ax = axes[i, j]
            vmin, vmax, cmap = style.map_scale(values, diverging)
            sns.heatmap(
                values,
                ax=ax,
                cmap=cmap,
                vmin=vmin,
                vmax=vmax,
                square=True,
                cbar_kws={"shrink": 0.75},
                xticklabels=labels if i == n_rows - 1 else [],
                yticklabels=labels if j == 0 else [],
            )
            ax.set_title(column, fontsize=11)
            ax.tick_params(axis="both", labelsize=9, length=0)
            if i == n_rows - 1:
                ax.set_xlabel("key", fontsize=10)
            if j == 0:
                ax.set_ylabel(f"{row['label']}\nquery", fontsize=11)
    if title:
        fig.suptitle(title, fontsize=15)
    style.save(fig, path)
    return fig


def plot_stage_curves(curves: pd.DataFrame, path=None, title: str | None = None):
    """Training loss terms over the run, stages shaded and named (from `stage_curves`).

    Panels (sharing the step axis): FMT (log scale), AT (KL), and the PD terms when
    the run has them.
    """
    style.apply()
    panels = [
        ("FMT (weighted)", ["fmt"], True),
        ("AT: KL(teacher ‖ student)", ["at"], False),
        ("PD terms", ["mlm_loss", "kd_loss", "nsp_loss"], False),
    ]
    panels = [p for p in panels if curves["metric"].isin(p[1]).any()]
    fig, axes = plt.subplots(
        1, len(panels), figsize=(6.2 * len(panels), 4.6), squeeze=False, sharex=True
    )
    ends = curves.groupby("stage")["global_step"].max().sort_values()
    spans = list(zip([0] + list(ends.values[:-1]), ends.values, ends.index))
    colors = sns.color_palette()
    for ax, (name, metrics, log) in zip(axes[0], panels):
        for k, (lo, hi, stage) in enumerate(spans):
            ax.axvspan(lo, hi, color=style.GREY, alpha=0.08 if k % 2 else 0.0, lw=0)
            ax.text(
                (lo + hi) / 2,
                1.01,
                stage.split("_", 1)[1],
                ha="center",
                va="bottom",
                transform=ax.get_xaxis_transform(),
                fontsize=11,
            )
        for i, metric in enumerate(metrics):
            for _, part in curves[curves["metric"] == metric].groupby("stage"):
                part = part.sort_values("global_step")
                ax.plot(part["global_step"], part["value"], lw=1.6, color=colors[i])
        if log:
            ax.set_yscale("log")
        ax.set_xlim(0, spans[-1][1])
        ax.set_xlabel("student step (all stages)")
        ax.set_title(name, pad=22)
        if len(metrics) > 1:
            handles = [plt.Line2D([], [], color=colors[i], lw=2) for i in range(len(metrics))]
            ax.legend(handles, metrics, loc="best")
    if title:
        fig.suptitle(title, y=1.04)
    fig.tight_layout()
    style.save(fig, path)
    return fig


def plot_layer_losses_by_snapshot(
    panels: Mapping[str, pd.DataFrame], path=None, title: str | None = None, log: bool = True
):
    """Per-layer transfer losses across training snapshots, one line per layer.

    panels: {panel title: frame with index = layer, columns = snapshots in
    training order (e.g. "initial", "after layer_0", ..., "after pd")}.
    """
    style.apply()
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.8), squeeze=False)
    colors = sns.color_palette("viridis", n_colors=max(len(f) for f in panels.values()))
    for ax, (name, frame) in zip(axes[0], panels.items()):
        x = np.arange(frame.shape[1])
        for k, (layer, row) in enumerate(frame.iterrows()):
            ax.plot(x, row.values, marker="o", lw=2, color=colors[k], label=f"layer {layer}")
        ax.set_xticks(x)
        ax.set_xticklabels(frame.columns, rotation=30, ha="right")
        if log:
            ax.set_yscale("log")
        ax.set_title(name, fontsize=14)
        ax.grid(alpha=0.3)
    axes[0][-1].legend(loc="best", title="student layer")
    if title:
        fig.suptitle(title, y=1.02)
    fig.tight_layout()
    style.save(fig, path)
    return fig


def plot_feature_statistics(stats: Mapping[str, pd.DataFrame], path=None, title: str | None = None):
    """Per-layer mean μ and std σ of the block outputs, one line per model (teacher, students)."""
    style.apply()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    markers = "osD^v"
    for k, (label, frame) in enumerate(stats.items()):
        for ax, column in zip(axes, ("mean", "std")):
            ax.plot(
                frame.index,
                frame[column],
                marker=markers[k % len(markers)],
                lw=2,
                label=label,
                color=style.PAPER if k == 0 else sns.color_palette()[k - 1],
            )
    for ax, name in zip(
        axes,
        ("mean over tokens of μ_t (per-token mean)", "mean over tokens of σ_t (per-token std)"),
    ):
        ax.set_xlabel("block (layer)")
        ax.set_title(name, fontsize=13)
        ax.set_xticks(list(next(iter(stats.values())).index))
    axes[1].legend(loc="best")
    if title:
        fig.suptitle(title, y=1.02)
    fig.tight_layout()
    style.save(fig, path)
    return fig


def plot_paper_vs_ours(
    tables: Sequence[tuple[str, pd.DataFrame]], panels: Sequence[tuple[str, str]], path=None
):
    """One row of panels per paper table: each row's value minus the table's first row's,
    in points, for every panel (the paper's metric, then ours), all panels of a table on
    one shared x-axis, so a gap of 0.2 points looks like 0.2 points in every panel.

    tables: (title, frame); frame index = the table's rows (the first is the reference),
    one column per panel key with values in %, optionally "<key>_err" (± err bars, e.g.
    the seed std of that row). panels: (key, x-axis label), e.g. ("paper", "paper:
    MNLI-m dev"). NaN values are left out.
    """
    style.apply()
    rows = max(len(f) for _, f in tables)
    fig, axes = plt.subplots(
        len(tables),
        len(panels),
        sharex="row",
        squeeze=False,
        figsize=(4.6 * len(panels), 1.6 + (0.55 * rows + 1.3) * len(tables)),
    )
    for (title, frame), row_axes in zip(tables, axes):
        y = np.arange(len(frame))
        reference = frame.index[0]
        for ax, (key, label) in zip(row_axes, panels):
            values = frame[key].to_numpy(float)
            delta = values - values[0]
            err = frame[f"{key}_err"].to_numpy(float) if f"{key}_err" in frame else None
            color = style.PAPER if key == "paper" else style.OURS
            ax.axvline(0, color=style.GREY, lw=1)
            ax.errorbar(delta, y, xerr=err, fmt="o", ms=9, color=color, capsize=4, lw=2)
            for yi, d in zip(y, delta):
                if np.isfinite(d):
                    ax.annotate(
                        f"{d:+.2f}",
                        (d, yi),
                        textcoords="offset points",
                        xytext=(0, 8),
                        ha="center",
                        fontsize=11,
                    )
            ax.set_yticks(y)
            ax.set_yticklabels(frame.index if ax is row_axes[0] else [])
            ax.set_ylim(len(frame) - 0.4, -0.7)
            ax.set_xlabel(f"{label}\nminus {reference} (points)")
            ax.grid(axis="x", alpha=0.3)
        row_axes[0].set_title(title, loc="left", fontsize=14, fontweight="bold")
    fig.tight_layout()
    style.save(fig, path)
    return fig
