"""Figures of the reproduction report: wall time per step, and the fine-tuning comparison."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mbert_lib.viz import style


def plot_step_times(times: pd.DataFrame, budget_minutes: float, title: str, path=None):
    """Horizontal bars: minutes per step (from `report.run.wall_time_table`), steps that ran
    on a busy machine hatched; the cumulative time against the budget on the right."""
    style.apply()
    fig, (left, right) = plt.subplots(
        1,
        2,
        figsize=(15, max(4.5, 1.6 + 0.45 * len(times))),
        gridspec_kw={"width_ratios": [1.4, 1]},
    )
    y = np.arange(len(times))
    busy = times["busy machine"].eq("yes").to_numpy()
    bars = left.barh(y, times["minutes"], color=[style.ALT if b else style.OURS for b in busy])
    for bar, b in zip(bars, busy):
        bar.set_hatch("//" if b else "")
    left.bar_label(bars, [f"{m:.1f}" for m in times["minutes"]], padding=3, fontsize=11)
    left.set_yticks(y, times["step"])
    left.invert_yaxis()
    left.set_xlim(0, max(float(times["minutes"].max()), 1e-3) * 1.2)
    left.set(xlabel="minutes", title="wall time per step (hatched: busy machine)")
    cumulative = np.cumsum(times["minutes"].to_numpy())
    right.plot(
        np.arange(len(times) + 1),
        np.r_[0, cumulative],
        "o-",
        color=style.OURS,
        lw=2.5,
        label="cumulative",
    )
    right.axhline(
        budget_minutes, color=style.PAPER, ls="--", lw=2, label=f"budget {budget_minutes:g} min"
    )
    right.set(xlabel="steps done", ylabel="minutes", title=f"total {cumulative[-1]:.1f} min")
    right.set_ylim(0, max(budget_minutes, cumulative[-1]) * 1.15)
    right.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    right.legend(loc="lower right")
    fig.suptitle(title)
    fig.tight_layout()
    style.save(fig, path)
    return fig


def plot_finetune_bars(
    finetune: dict, labels: dict, paper_line: tuple[str, float] | None, path=None
):
    """Dev metric per fine-tuned model: bar = mean ± std over seeds, dots = seeds (%), the
    paper's number as a dashed line."""
    style.apply()
    done = [(m, e) for m, e in finetune["models"].items() if e.get("status") == "done"]
    fig, ax = plt.subplots(figsize=(max(7.0, 2.0 * len(done) + 2), 5.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (_, entry) in enumerate(done):
        values = 100 * np.asarray(entry["values"], np.float64)
        std = values.std(ddof=1) if len(values) > 1 else 0.0
        ax.bar(i, values.mean(), yerr=std, capsize=8, color=colors[i % len(colors)], alpha=0.45)
        ax.scatter(
            i + np.linspace(-0.12, 0.12, len(values)),
            values,
            zorder=3,
            s=40,
            color=colors[i % len(colors)],
        )
        ax.annotate(
            f"{values.mean():.1f}",
            (i, values.mean() + std),
            xytext=(0, 6),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=12,
        )
    if paper_line is not None:
        ax.axhline(paper_line[1], color=style.PAPER, ls="--", lw=2, label=paper_line[0])
        ax.legend(loc="lower right")
    high = max([100 * max(e["values"]) for _, e in done] + [paper_line[1] if paper_line else 0])
    ax.set_ylim(0.0, min(100.0, high + 5))  # bars start at zero
    ax.set_xticks(range(len(done)), [labels.get(m, m) for m, _ in done], rotation=15, ha="right")
    metric = done[0][1].get("metric", "metric") if done else "metric"
    ax.set(
        ylabel=f"dev {metric} (%)",
        title=f"{finetune['task']}: dev {metric}, bar = mean ± std over seeds, dots = seeds"
        " (paper Table 4)",
    )
    fig.tight_layout()
    style.save(fig, path)
    return fig
