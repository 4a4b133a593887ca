"""Figures of the attention lab (`mbert_lib.lab`): training curves with the plateau, the
rule head's maps, and the attention mass on the rule's target per student."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from mbert_lib.lab.variants import LABELS, VARIANTS
from mbert_lib.viz import style

COLORS = dict(zip(VARIANTS, sns.color_palette("colorblind", len(VARIANTS))))


def plot_curves(summary: Mapping, path=None):
    """Structured accuracy against updates: the teacher's pre-training (left) and seed 0
    of every student (right), with chance and the end of the layer-wise stages."""
    style.apply()
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 5), layout="constrained")
    steps, accuracy = np.array(summary["teacher"]["curve"]).T
    left.plot(steps, 100 * accuracy, color="black", lw=2.5)
    left.set_title("teacher (IB-BERT shape), MLM + NSP")
    for variant in VARIANTS:
        steps, accuracy = np.array(summary["curves"][variant]).T
        right.plot(steps, 100 * accuracy, color=COLORS[variant], lw=2.5, label=LABELS[variant])
    settings = summary["settings"]
    layer_wise_end = settings["layer_steps"] * settings["num_layers"]
    right.axvline(layer_wise_end, color=style.GREY, ls=":", lw=1.5)
    right.annotate(
        " layer-wise stages end",
        (layer_wise_end, 25),
        color=style.GREY,
        fontsize=11,
        rotation=90,
        va="center",
        ha="right",
    )
    right.set_title("students, seed 0, equal updates")
    right.legend(loc="upper left")
    for ax in (left, right):
        ax.axhline(100 * summary["chance"], color=style.GREY, ls="--", lw=1.5)
        ax.text(ax.get_xlim()[1], 100 * summary["chance"] + 2, "chance", ha="right", fontsize=11)
        ax.set_xlabel("update")
        ax.set_ylim(0, 100)
    left.set_ylabel("structured accuracy (%)")
    style.save(fig, path)
    return fig


def plot_rule_maps(
    maps: Mapping[str, np.ndarray],
    tokens: Sequence[str],
    query: int,
    target: int,
    title: str,
    path=None,
    columns: int = 2,
):
    """One attention map [T, T] per model in a grid, on a shared 0..1 scale; the query
    row of a structured prediction (white) and its rule target's column (red) are
    outlined, and each title gives the probability at their crossing."""
    style.apply()
    rows = -(-len(maps) // columns)
    side = max(4.5, 0.19 * len(tokens))
    fig, axes = plt.subplots(
        rows, columns, figsize=(side * columns + 1.5, side * rows + 1), layout="constrained"
    )
    axes = np.atleast_1d(axes).ravel()
    for ax, (name, values) in zip(axes, maps.items()):
        image = ax.imshow(values, cmap="viridis", vmin=0, vmax=1)
        ax.add_patch(
            plt.Rectangle((-0.5, query - 0.5), len(tokens), 1, fill=False, ec="white", lw=2)
        )
        ax.add_patch(
            plt.Rectangle((target - 0.5, -0.5), 1, len(tokens), fill=False, ec="red", lw=2)
        )
        ax.set_title(f"{name}: {values[query, target]:.2f} on the target", fontsize=14)
        ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=9)
        ax.set_yticks(range(len(tokens)), tokens, fontsize=9)
        ax.set_xlabel("key")
        ax.set_ylabel("query")
    for ax in axes[len(maps) :]:
        ax.axis("off")
    fig.colorbar(image, ax=axes.tolist(), shrink=0.6, label="attention probability")
    fig.suptitle(title, fontsize=15)
    style.save(fig, path)
    return fig


def plot_rule_mass(summary: Mapping, path=None):
    """The rule head's mean attention on the rule's target per student (a dot per seed,
    a bar at the mean), against the teacher and the student before transfer."""
    style.apply()
    mass = summary["rule_attention_mass"]
    fig, ax = plt.subplots(figsize=(9, 4.8), layout="constrained")
    for i, variant in enumerate(VARIANTS):
        values = np.asarray(mass[variant])
        ax.bar(i, values.mean(), color=COLORS[variant], width=0.6)
        ax.plot(np.full(len(values), i), values, "o", color="black", ms=6)
    ax.axhline(mass["teacher"], color="black", lw=2, label="teacher")
    ax.axhline(
        np.mean(mass["before_transfer"]), color=style.GREY, ls="--", lw=2, label="before transfer"
    )
    ax.set_xticks(range(len(VARIANTS)), [LABELS[v] for v in VARIANTS])
    head = summary["rule_head"]
    ax.set_ylabel("attention on the rule's target")
    ax.set_title(f"The teacher's rule head (layer {head['layer']}, head {head['head']}), per seed")
    ax.set_ylim(0, 1.2 * max(mass["teacher"], max(max(mass[v]) for v in VARIANTS)))
    ax.legend(loc="upper right", ncols=2)
    style.save(fig, path)
    return fig
