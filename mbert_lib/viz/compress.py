"""Figures of the compression lab: tfmot's pruning schedule, the size/accuracy/latency
trade-off of every method, the per-block sensitivity scan, and int8's error per block."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import matplotlib.ticker as ticker
import numpy as np
import seaborn as sns

from mbert_lib.tables.compress import label, sensitivity_table
from mbert_lib.viz import style


def plot_schedule(schedule, steps: int, path=None):
    """s(t) of a `pruning.Schedule` over `steps` updates, with the steps where tfmot
    recomputes the masks."""
    style.apply()
    fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
    t = np.arange(steps + 1)
    ax.plot(t, [100 * schedule.sparsity_at(int(k)) for k in t], color=style.OURS, lw=2.5)
    updates = np.arange(schedule.begin, schedule.end + 1, schedule.frequency)
    ax.scatter(
        updates,
        [100 * schedule.sparsity_at(int(k)) for k in updates],
        color=style.PAPER,
        zorder=3,
        label="masks recomputed",
    )
    ax.set_xlabel("fine-tuning step")
    ax.set_ylabel("sparsity of the block kernels (%)")
    ax.set_title("tfmot's polynomial decay: s(t) = s_f + (s_0 − s_f)(1 − (t − t_0)/(t_1 − t_0))³")
    ax.set_ylim(0, 100)
    ax.legend(loc="lower right")
    style.save(fig, path)
    return fig


def plot_tradeoff(result: Mapping, path=None):
    """Left: dev accuracy (mean and 95 % interval of the paired difference, placed at the
    fp32 mean) against the gzipped .tflite size. Right: latency relative to fp32."""
    style.apply()
    fig, (left, right) = plt.subplots(1, 2, figsize=(15, 5.5), layout="constrained")
    rows = result["rows"]
    colors = sns.color_palette("colorblind", len(rows))
    base = 100 * float(np.mean(next(r for r in rows if r["method"] == "fp32")["accuracy"]))
    smallest = min(r["gzip_bytes"] for r in rows) / 1e6
    for row, color in zip(rows, colors):
        size = row["gzip_bytes"] / 1e6
        mean = 100 * float(np.mean(row["accuracy"]))
        paired = row["vs_fp32"]
        if paired is not None:
            low, high = base + 100 * paired["low"], base + 100 * paired["high"]
            left.plot([size, size], [low, high], color=color, lw=2, alpha=0.6)
        left.scatter(size, mean, color=color, s=90, zorder=3, label=label(row["method"]))
    left.axhline(base, color=style.GREY, ls="--", lw=1.2)
    left.set_xscale("log")  # the teacher is several times the student's size
    left.set_xticks([t for t in (0.2, 0.5, 1, 2, 5, 10, 20) if t >= 0.5 * smallest])
    left.xaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    left.xaxis.set_minor_formatter(ticker.NullFormatter())
    left.set_xlabel("gzipped .tflite (MB, log scale)")
    left.set_ylabel("SST-2 dev accuracy (%, LiteRT)")
    left.set_title("size against accuracy (bars: paired 95 % CI vs fp32)\ncolours as on the right")
    names = [label(r["method"]) for r in rows]
    ratios = [r["latency_vs_fp32"] for r in rows]
    bars = right.barh(names, ratios, color=colors)
    right.bar_label(bars, fmt="%.2f×", padding=3, fontsize=11)
    right.axvline(1.0, color=style.GREY, ls="--", lw=1.2)
    right.invert_yaxis()
    right.set_xlabel(
        f"latency vs fp32 (batch 1, {result['threads']} thread(s), T = {result['seq_length']})"
    )
    right.set_title("LiteRT latency, medians, one interleaved run")
    style.save(fig, path)
    return fig


def plot_sensitivity(result: Mapping, path=None):
    """Heatmap of the points lost when one block alone (or all) is pruned once."""
    style.apply()
    table = sensitivity_table(result)
    fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
    vmin, vmax, cmap = style.map_scale(table.to_numpy(), diverging=True)
    sns.heatmap(
        table,
        annot=True,
        fmt=".1f",
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        ax=ax,
        cbar_kws={"label": "Δ dev accuracy (points)"},
    )
    ax.set_xlabel("sparsity of the pruned block(s), one shot, no training")
    ax.set_ylabel("block pruned")
    ax.set_title("sensitivity scan: mean over seeds, paired with the dense model")
    style.save(fig, path)
    return fig


def plot_block_errors(errors: Mapping[str, Mapping[str, float]], path=None):
    """Relative error e_k of each block's output (and of the logits) per int8 file.

    errors: {file label: {"block_0": e, ..., "logits": e}}, as `layer_error.layer_errors`
    returns under "relative_error"."""
    style.apply()
    fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
    colors = [style.OURS, style.PAPER, style.ALT, style.GREY]
    for (name, by_output), color in zip(errors.items(), colors * len(errors)):
        outputs = list(by_output)
        ax.plot(
            range(len(outputs)),
            [100 * by_output[o] for o in outputs],
            marker="o",
            lw=2.5,
            color=color,
            label=name,
        )
    ax.set_xticks(range(len(outputs)), [o.replace("block_", "block ") for o in outputs])
    ax.set_ylabel("relative error ‖ŷ − y‖ / ‖y‖ (%)")
    ax.set_title("where int8 loses the signal: each block's output against float")
    ax.set_ylim(bottom=0)
    ax.legend()
    style.save(fig, path)
    return fig
