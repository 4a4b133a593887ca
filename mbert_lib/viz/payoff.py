"""Figures of the payoff: what a student gains from its teacher (a run's payoff.json).

plot_label_budget       SST-2 dev accuracy against the number of labels, one line per
                        model, every seed as a dot (not in the paper)
plot_attention_recipe   per layer, the attention's Jensen-Shannon distance to the
                        teacher's at each point of the recipe (not in the paper)
plot_task_distillation  output distillation: the student's dev accuracy with labels alone,
                        with the teacher's soft or hard targets (and the sweep's runs), one
                        line per seed across the rows (not in the paper)
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


DISTILL_ROWS = {
    "labels_only": "labels alone",
    "soft_labels": "+ soft targets",
    "pseudo_labels": "+ hard targets",
}


def plot_task_distillation(distill: Mapping, title: str, sweep: Mapping | None = None, path=None):
    """Dev accuracy (%) of the task_distillation record's rows (and a sweep record's runs),
    one dot per seed, the dots of one seed joined across rows; the teacher dashed."""
    style.apply()
    rows = {DISTILL_ROWS[r]: distill[r] for r in DISTILL_ROWS}
    rows[f"+ soft targets\nτ = {distill['temperature']:g}"] = rows.pop(DISTILL_ROWS["soft_labels"])
    rows[DISTILL_ROWS["pseudo_labels"]] = rows.pop(DISTILL_ROWS["pseudo_labels"])
    for run in (sweep or {}).get("runs", {}).values():
        rows[f"soft, τ = {run['temperature']:g}\n{run['train_steps']:,} steps"] = run["values"]
    values = 100 * np.array(list(rows.values()))  # [rows, seeds]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(7, 1.6 * len(rows)), 5))
    ax.plot(x, values, "-", color=style.GREY, alpha=0.35, lw=1)  # one line per seed
    ax.scatter(np.repeat(x, values.shape[1]), values.ravel(), s=22, color=style.OURS, zorder=3)
    ax.plot(x, values.mean(axis=1), "_", color="k", ms=28, mew=2.5, label="mean over seeds")
    ax.axhline(
        100 * distill["teacher"][0],
        ls="--",
        color=COLOURS["teacher"],
        lw=2,
        label=f"teacher ({100 * distill['teacher'][0]:.1f} %)",
    )
    ax.set_xticks(x)
    ax.set_xticklabels(list(rows))
    task = TASK_NAMES.get(distill.get("task"), distill.get("task", "task"))
    ax.set_ylabel(f"{task} dev accuracy (%)")
    ax.set_xlabel(f"the student with {distill['labels']:,} labels, {len(values[0])} paired seeds")
    ax.set_title(title)
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    style.save(fig, path)
    return fig
