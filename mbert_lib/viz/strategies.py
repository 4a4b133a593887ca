"""Paper Figure 2 as a schedule: what AKT, JKT and PKT train, stage by stage.

Each strategy is one row of boxes along the student's updates, a box per
stage (`mbert_lib.distill.plan.plan_stages` of the strategy's yaml), its width
the stage's steps, its label the loss terms and the layers they transfer, and
the blocks the stage trains (the stage's own layer at its rate, those below
at their lower rate, the rest frozen).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from mbert_lib.viz import style

COLORS = {"layer-wise": style.OURS, "PD": style.ALT, "layer-wise + PD": style.PAPER}


def stage_label(stage) -> str:
    """ "FMT + AT, layer 2" / "FMT + AT, all layers" / "PD" / "FMT + AT + PD"."""
    terms = [
        t
        for t, on in [
            ("FMT", stage.use_fmt and stage.layer_wise),
            ("AT", stage.use_attention and stage.layer_wise),
            ("PD", stage.use_pd),
        ]
        if on
    ]
    text = " + ".join(terms)
    if stage.layer_wise and not stage.use_pd:
        layers = stage.transfer_layers
        text += f"\nlayer {layers[0]}" if len(layers) == 1 else "\nall layers"
    return text


def _kind(stage) -> str:
    if stage.layer_wise and stage.use_pd:
        return "layer-wise + PD"
    return "layer-wise" if stage.layer_wise else "PD"


def plot_strategy_schedules(
    plans: Mapping[str, Sequence],
    path=None,
    title: str = "Paper Figure 2: how each strategy uses the same losses",
):
    """plans: strategy name -> its list of `Stage`s. One row per strategy, boxes per stage
    (width = student updates), labelled with the loss terms; returns the Figure."""
    style.apply()
    fig, ax = plt.subplots(figsize=(14, 1.1 + 1.25 * len(plans)))
    total = max(sum(s.train_steps for s in stages) for stages in plans.values())
    for row, stages in enumerate(plans.values()):
        start = 0
        for stage in stages:
            kind = _kind(stage)
            ax.add_patch(
                Rectangle(
                    (start, row - 0.38),
                    stage.train_steps,
                    0.76,
                    facecolor=COLORS[kind],
                    alpha=0.35,
                    edgecolor="black",
                    label=kind,
                )
            )
            ax.text(
                start + stage.train_steps / 2,
                row,
                stage_label(stage),
                ha="center",
                va="center",
                fontsize=12,
            )
            start += stage.train_steps
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(
        unique.values(),
        unique.keys(),
        loc="upper center",
        ncol=len(unique),
        bbox_to_anchor=(0.5, -0.32),
        frameon=False,
    )
    ax.set_xlim(0, total)
    ax.set_ylim(len(plans) - 0.5, -0.5)
    ax.set_yticks(range(len(plans)), list(plans))
    ax.set_xlabel("student updates")
    ax.set_title(title)
    fig.tight_layout()
    style.save(fig, path)
    return fig
