"""Figures of notebook 07: token lengths against seq_length, and the fine-tuning comparison."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from mbert_lib.viz import style


def plot_lengths(lengths: Mapping[str, np.ndarray], seq_length: int, title: str, path=None):
    """Histogram of tokens per example ([CLS]/[SEP] included) per split, the cut at T."""
    style.apply()
    fig, ax = plt.subplots(figsize=(9, 4.5))
    top = max(int(max(v.max() for v in lengths.values())), seq_length) + 2
    bins = np.arange(0, top + 2, 2)
    for (split, values), color in zip(lengths.items(), (style.OURS, style.ALT), strict=False):
        ax.hist(
            values,
            bins=bins,
            weights=np.full(len(values), 1 / len(values)),
            alpha=0.55,
            color=color,
            label=f"{split} (n = {len(values):,})",
        )
    ax.axvline(
        seq_length,
        color=style.PAPER,
        ls="--",
        lw=2,
        label=f"seq_length T = {seq_length}: longer examples are truncated",
    )
    ax.set(
        xlabel="tokens per example (WordPiece, with [CLS] and [SEP])",
        ylabel="fraction of examples per 2-token bin",
        title=title,
    )
    ax.legend()
    fig.tight_layout()
    style.save(fig, path)
    return fig


def plot_comparison(
    result: Mapping,
    names: Mapping[str, str],
    chance: float,
    paper: tuple[str, float] | None = None,
    path=None,
    order: Sequence[str] | None = None,
):
    """Left: dev metric per model, one dot per seed and the mean ± std; the majority-class
    rate and the paper's number as labelled lines. Right: dev metric after each epoch (mean
    over seeds), the legend outside the axes."""
    style.apply()
    done = {m: e for m, e in result["models"].items() if e["status"] == "done"}
    models = [m for m in (order or done) if m in done]
    metric = done[models[0]]["metric"] if models else "metric"
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(17, 5.5), gridspec_kw={"width_ratios": [1.4, 1]}
    )
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, model in enumerate(models):
        entry, color = done[model], colors[i % len(colors)]
        values = 100 * np.asarray(entry["values"])
        std = 0.0 if len(values) < 2 else values.std(ddof=1)
        left.bar(i, values.mean(), color=color, alpha=0.35, yerr=std, capsize=6)
        left.scatter(
            np.full(len(values), i) + np.linspace(-0.12, 0.12, len(values)),
            values,
            color=color,
            zorder=3,
            s=40,
        )
        curves = 100 * np.asarray(entry["histories"])  # [seeds, epochs]
        epochs = np.arange(1, curves.shape[1] + 1)
        right.plot(epochs, curves.mean(axis=0), "o-", color=color, lw=2, label=names[model])
    lines = [(100 * chance, style.GREY, ":", "majority class")]
    if paper is not None:
        lines.append((paper[1], style.PAPER, "--", paper[0]))
    for y, color, ls, label in lines:  # labelled on the line: a legend would hide bars
        left.axhline(y, color=color, ls=ls, lw=2, label=label)
        left.text(
            len(models) - 0.55,
            y + 0.4,
            label,
            ha="right",
            va="bottom",
            color=color,
            bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "none", "pad": 1},
        )
    left.set_xticks(range(len(models)), [names[m] for m in models], rotation=15, ha="right")
    high = max(
        [100 * chance, paper[1] if paper else 0] + [100 * max(done[m]["values"]) for m in models]
    )
    left.set_ylim(0, min(100.0, high + 6))  # bars start at zero
    left.set(
        ylabel=f"dev {metric} (%)",
        title=f"{result['task']}: dev {metric}, dots = seeds, bar = mean ± std (paper Table 4)",
    )
    right.set(xlabel="epoch", ylabel=f"dev {metric} (%)", title="after each epoch (mean of seeds)")
    epochs = max((len(h) for m in models for h in done[m]["histories"]), default=1)
    right.set_xticks(range(1, epochs + 1))
    right.set_xlim(0.7, epochs + 0.3)
    right.legend(loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
    fig.tight_layout()
    style.save(fig, path)
    return fig
