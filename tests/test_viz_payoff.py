"""The output-distillation figure draws the record's numbers: one line per seed across the
rows, the means, and the teacher."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402

from mbert_lib.viz.payoff import plot_task_distillation  # noqa: E402

DISTILL = {
    "task": "sst2",
    "labels": 1000,
    "temperature": 2.0,
    "teacher": [0.75, 0.75, 0.75],
    "labels_only": [0.60, 0.62, 0.58],
    "soft_labels": [0.70, 0.71, 0.69],
    "pseudo_labels": [0.69, 0.72, 0.70],
}
SWEEP = {"runs": {"tau4": {"temperature": 4.0, "train_steps": 600, "values": [0.7, 0.7, 0.68]}}}


def test_every_seed_is_a_line_through_its_rows_and_the_teacher_is_drawn(tmp_path):
    fig = plot_task_distillation(DISTILL, "t", SWEEP, path=tmp_path / "f.png")
    ax = fig.axes[0]
    rows = ["labels_only", "soft_labels", "pseudo_labels"]
    expected = 100 * np.array([DISTILL[r] for r in rows] + [SWEEP["runs"]["tau4"]["values"]])
    seed_lines = [line for line in ax.get_lines() if line.get_linestyle() == "-"]
    assert len(seed_lines) == 3
    for seed, line in enumerate(seed_lines):
        np.testing.assert_allclose(line.get_ydata(), expected[:, seed])
    means = next(line for line in ax.get_lines() if line.get_marker() == "_")
    np.testing.assert_allclose(means.get_ydata(), expected.mean(axis=1))
    teacher = next(line for line in ax.get_lines() if line.get_linestyle() == "--")
    assert teacher.get_ydata()[0] == 75.0
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[1] == "+ soft targets\nτ = 2" and labels[3] == "soft, τ = 4\n600 steps"
    assert (tmp_path / "f.png").stat().st_size > 0
