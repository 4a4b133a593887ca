"""The Figure-2 schedule: one box per planned stage, as wide as its steps."""

import numpy as np

from mbert_lib.distill.plan import plan_stages
from mbert_lib.experiment.distill import load_distill_experiment
from mbert_lib.runtime import REPO_ROOT
from mbert_lib.viz.strategies import plot_strategy_schedules, stage_label


def _plan(strategy):
    experiment = load_distill_experiment(REPO_ROOT / f"experiments/distill_tiny_{strategy}.yaml")
    layers = experiment.student.build_config().num_hidden_layers
    return plan_stages(experiment.distillation, layers)


def test_boxes_are_the_planned_stages(tmp_path):
    plans = {"AKT": _plan("akt"), "JKT": _plan("jkt"), "PKT": _plan("pkt")}
    fig = plot_strategy_schedules(plans, path=tmp_path / "f2.png")
    ax = fig.axes[0]
    widths = [p.get_width() for p in ax.patches]
    assert widths == [s.train_steps for stages in plans.values() for s in stages]
    texts = [t.get_text() for t in ax.texts]
    assert texts == [stage_label(s) for stages in plans.values() for s in stages]
    assert texts[0] == "FMT + AT + PD"  # AKT: one combined stage
    assert texts[1:3] == ["FMT + AT\nall layers", "PD"]  # JKT
    assert texts[3] == "FMT + AT\nlayer 0" and texts[-1] == "PD"  # PKT
    # equal student budgets: every row ends at the same update
    ends = {name: sum(s.train_steps for s in stages) for name, stages in plans.items()}
    assert len(set(ends.values())) == 1 and np.isclose(ax.get_xlim()[1], ends["PKT"])
    assert (tmp_path / "f2.png").stat().st_size > 0
