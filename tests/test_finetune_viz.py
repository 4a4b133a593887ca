"""mbert_lib.viz.finetune: the comparison figure shows every seed, the chance line and the paper."""

import matplotlib
import numpy as np

from mbert_lib.viz.finetune import plot_comparison, plot_lengths

matplotlib.use("Agg")


def _entry(values, histories):
    return {
        "status": "done",
        "metric": "accuracy",
        "values": values,
        "mean": float(np.mean(values)),
        "std": float(np.std(values, ddof=1)),
        "histories": histories,
    }


RESULT = {
    "task": "sst2",
    "models": {
        "teacher": _entry([0.80, 0.82, 0.81], [[0.78, 0.80], [0.79, 0.82], [0.80, 0.81]]),
        "pkt": {"status": "missing", "reason": "not run"},
        "no_transfer": _entry([0.70, 0.74], [[0.69, 0.70], [0.71, 0.74]]),
    },
}


def test_comparison_shows_seeds_means_chance_and_paper_inside_the_axes(tmp_path):
    path = tmp_path / "cmp.png"
    fig = plot_comparison(
        RESULT, {"teacher": "T", "no_transfer": "S"}, chance=0.509, paper=("paper", 92.8), path=path
    )
    left, right = fig.axes
    assert path.stat().st_size > 0
    assert [t.get_text() for t in left.get_xticklabels()] == ["T", "S"]  # missing pkt: no bar
    np.testing.assert_allclose([b.get_height() for b in left.patches], [81.0, 72.0])
    low, high = left.get_ylim()
    assert low == 0 and high > 92.8, "bars from zero; the chance and paper lines visible"
    curves = {line.get_label(): line.get_ydata() for line in right.get_lines()}
    np.testing.assert_allclose(curves["T"], [79.0, 81.0])  # mean over seeds
    np.testing.assert_allclose(curves["S"], [70.0, 72.0])
    assert list(right.get_xticks()) == [1, 2]
    # Models below the majority rate (a collapsed fine-tuning): the chance line stays visible.
    fig = plot_comparison(RESULT, {"teacher": "T", "no_transfer": "S"}, chance=0.9)
    assert fig.axes[0].get_ylim()[1] > 90.0


def test_lengths_histogram_marks_the_cut(tmp_path):
    fig = plot_lengths({"dev": np.array([5, 10, 70])}, 64, "lengths", path=tmp_path / "l.png")
    assert any(np.allclose(line.get_xdata(), 64) for line in fig.axes[0].get_lines())
    heights = [b.get_height() for b in fig.axes[0].patches]
    assert np.isclose(sum(heights), 1.0) and np.isclose(max(heights), 1 / 3)  # fractions
