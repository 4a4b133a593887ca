"""Figures of pre-training: the LR schedule, LAMB's trust ratios, loss and accuracy curves."""

from __future__ import annotations

import re
from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, PercentFormatter

from mbert_lib.optim.trust import short_variable_name
from mbert_lib.train.metrics_io import scalar_series
from mbert_lib.viz import style


def plot_lr_schedule(schedule, total_steps: int, path=None, title: str = ""):
    """η(step) of a `WarmupPolynomialDecay` over [0, total_steps], warmup end marked."""
    style.apply()
    steps = np.arange(total_steps + 1)
    rates = np.array([float(schedule(s)) for s in steps])
    fig, ax = plt.subplots(figsize=(10, 5))
    ax.plot(steps, rates, color=style.OURS, lw=2.5)
    warmup = schedule.warmup_steps
    if warmup:
        ax.axvline(warmup, color=style.GREY, ls="--", lw=1.5, label=f"end of warmup (W = {warmup})")
        ax.legend(loc="upper right")
    ax.set_xlabel("update (optimizer step)")
    ax.set_ylabel("learning rate η")
    ax.set_title(title or f"Linear warmup, then linear decay to {schedule.end_learning_rate:g}")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    style.save(fig, path)
    return fig


def plot_trust_ratios(reports: Mapping[str, pd.DataFrame], path=None, title: str = ""):
    """Trust ratio ‖x‖/‖u‖ of every layer-adapted variable (log scale), one row per kind of
    variable (the layer index dropped: each block's query kernels share a row, one dot
    per block), one marker series per report (e.g. "update 1", "after training");
    `reports` are `lamb_step_report` tables."""
    style.apply()
    first = next(iter(reports.values()))
    names = first[first.adapted].variable.tolist()
    kind = {n: re.sub(r"^layer_\d+/", "", short_variable_name(n)) for n in names}
    kinds = list(dict.fromkeys(kind.values()))
    fig, ax = plt.subplots(figsize=(12, 0.45 * len(kinds) + 2.0))
    offsets = np.linspace(-0.18, 0.18, len(reports))
    for offset, color, marker, (label, report) in zip(
        offsets, [style.OURS, style.PAPER, style.ALT], "os^", reports.items()
    ):
        ratios = report.set_index("variable").loc[names, "trust_ratio"]
        y = [kinds.index(kind[n]) + offset for n in names]
        ax.scatter(ratios, y, color=color, marker=marker, s=45, label=label, zorder=3, alpha=0.8)
    ax.set_yticks(range(len(kinds)), kinds)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))  # 0.01, 0.02, 0.05, 0.1, ...
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("trust ratio ‖x‖ / ‖u‖  (the step is η · ratio · u, so ‖step‖ = η ‖x‖)")
    ax.set_ylabel("variable (one dot per block)")
    ax.set_title(title or "LAMB trust ratio per variable")
    ax.grid(alpha=0.3, which="both", axis="x")
    ax.legend(loc="lower right")
    fig.tight_layout()
    style.save(fig, path)
    return fig


def _smooth(series: pd.Series, window: int) -> pd.Series:
    return series.rolling(window, min_periods=1).mean()


def plot_pretraining_curves(
    scalars: pd.DataFrame,
    baselines: Mapping[str, float] | None = None,
    path=None,
    smooth: int = 10,
    title: str = "",
):
    """2 × 2 panels from a run's scalars (`read_scalars`): training losses, held-out MLM
    accuracy, held-out perplexity, held-out NSP accuracy; `baselines` (keys
    mlm_accuracy, perplexity, nsp_accuracy) are drawn as dashed lines."""
    style.apply()
    baselines = dict(baselines or {})
    fig, axes = plt.subplots(2, 2, figsize=(15, 10))
    ax = axes[0, 0]
    for tag, color in (("mlm_loss", style.OURS), ("nsp_loss", style.ALT)):
        series = scalar_series(scalars, "train", tag)
        ax.plot(
            series.index,
            _smooth(series, smooth),
            color=color,
            lw=2,
            label=f"train {tag} (mean of {smooth} logs)",
        )
    if "eval" in set(scalars.split):
        series = scalar_series(scalars, "eval", "mlm_loss")
        ax.plot(series.index, series.values, "o-", color=style.PAPER, label="held-out mlm_loss")
    ax.set_ylabel("cross-entropy (nats)")
    ax.set_title("Training losses")
    panels = [
        (axes[0, 1], "mlm_accuracy", "Held-out MLM accuracy", "unigram baseline", True),
        (axes[1, 0], "perplexity", "Held-out MLM perplexity", "unigram baseline", False),
        (axes[1, 1], "nsp_accuracy", "Held-out NSP accuracy", "majority class", True),
    ]
    for ax_, tag, name, baseline_name, percent in panels:
        series = scalar_series(scalars, "eval", tag)
        ax_.plot(series.index, series.values, "o-", color=style.OURS, lw=2.5, label="teacher")
        if tag in baselines:
            ax_.axhline(
                baselines[tag],
                color=style.GREY,
                ls="--",
                lw=2,
                label=f"{baseline_name} ({baselines[tag]:.3g})",
            )
        if percent:
            ax_.yaxis.set_major_formatter(PercentFormatter(1.0))
        if tag == "perplexity":
            ax_.set_yscale("log")
        ax_.set_title(name)
    for ax_ in axes.flat:
        ax_.set_xlabel("step")
        ax_.grid(alpha=0.3)
        ax_.legend(loc="best")
    if title:
        fig.suptitle(title, fontsize=16)
    fig.tight_layout()
    style.save(fig, path)
    return fig


def plot_teacher_curves(curves: Mapping[str, pd.Series], title: str = "", path=None):
    """Held-out MLM accuracy (%) against the step, one line per run (`curves`: label ->
    accuracy indexed by step), on a log step axis so a short run is not a dot."""
    style.apply()
    fig, ax = plt.subplots(figsize=(9, 5))
    for (label, series), color in zip(curves.items(), (style.OURS, style.ALT, style.GREY)):
        ax.plot(series.index, 100 * series.values, "o-", color=color, lw=2, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("pre-training step")
    ax.set_ylabel("held-out MLM accuracy (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    style.save(fig, path)
    return fig
