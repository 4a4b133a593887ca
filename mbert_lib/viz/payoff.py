"""Figures of the payoff: what a student gains from its teacher (a run's payoff.json).

plot_label_budget       SST-2 dev accuracy against the number of labels, one line per
                        model, every seed as a dot (not in the paper)
plot_attention_recipe   per layer, the attention's Jensen-Shannon distance to the
                        teacher's at each point of the recipe (not in the paper)
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np

from mbert_lib.tables.payoff import ATTENTION_POINTS, NAMES
from mbert_lib.viz import style

COLOURS = {
    "teacher": "#2ca02c",
    "pkt": style.OURS,
    "copy_only": style.ALT,
    "no_transfer": style.GREY,
}
TASK_NAMES = {"sst2": "SST-2"}
POINT_LABELS = {
    "untrained": "untrained",
    "before": "before its stage",
    "after_stage": "after its stage",
    "final": "after PD (finished)",
    "final_without_at": "finished, trained without AT",
}


def plot_label_budget(payoff: Mapping, title: str, path=None):
    """Dev accuracy (%) against the label budget (log axis), mean line and per-seed dots."""
    style.apply()
    budgets = payoff["label_budget"]
    sizes = {b: (int(b) if b != "all" else None) for b in budgets}
    full = payoff.get("train_sentences")
    x = {b: s or full or max(s for s in sizes.values() if s) * 4 for b, s in sizes.items()}
    fig, ax = plt.subplots(figsize=(8, 5))
    for model in ("teacher", "pkt", "copy_only", "no_transfer"):
        xs, means = [], []
        for budget, models in budgets.items():
            if model not in models:
                continue
            values = 100 * np.asarray(models[model])
            jitter = {"teacher": -0.03, "pkt": -0.01, "copy_only": 0.01, "no_transfer": 0.03}
            ax.scatter(
                np.full(len(values), x[budget]) * 10 ** jitter[model],
                values,
                s=14,
                alpha=0.45,
                color=COLOURS[model],
            )
            xs.append(x[budget])
            means.append(values.mean())
        if xs:
            ax.plot(xs, means, "-o", color=COLOURS[model], label=NAMES[model], lw=2)
    ax.set_xscale("log")
    ax.minorticks_off()
    ax.set_xticks(list(x.values()))
    ax.set_xticklabels([f"{b}" if b == "all" else f"{int(b):,}" for b in budgets])
    task = TASK_NAMES.get(payoff.get("task"), payoff.get("task", "task"))
    ax.set_xlabel(f"labeled {task} training sentences")
    ax.set_ylabel(f"{task} dev accuracy (%)")
    ax.set_title(title)
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    style.save(fig, path)
    return fig


def plot_attention_recipe(payoff: Mapping, title: str, path=None):
    """Grouped bars: per student layer, the JS distance to the teacher at each point."""
    style.apply()
    rows = payoff["attention"]
    points = [p for p in ATTENTION_POINTS if all(r.get(p) is not None for r in rows)]
    fig, ax = plt.subplots(figsize=(9, 5.2))
    width = 0.8 / len(points)
    colours = plt.get_cmap("viridis")(np.linspace(0.05, 0.9, len(points)))
    for i, point in enumerate(points):
        ax.bar(
            np.arange(len(rows)) + (i - (len(points) - 1) / 2) * width,
            [r[point] for r in rows],
            width,
            label=POINT_LABELS[point],
            color=colours[i],
        )
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([f"layer {r['layer']}" for r in rows])
    ax.set_ylabel("JS distance to the teacher (nats)")
    ax.set_title(title)
    ax.legend(fontsize=11, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.1), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    style.save(fig, path)
    return fig
