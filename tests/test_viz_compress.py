"""The compression figures draw the record's numbers: each int8 file's errors per block, and
every row's size, accuracy and latency ratio on a log size axis."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402

from mbert_lib.viz.compress import plot_block_errors, plot_tradeoff  # noqa: E402


def test_block_errors_are_drawn_in_percent_in_output_order():
    errors = {
        "full int8": {"block_0": 0.05, "block_1": 0.08, "logits": 0.04},
        "dynamic int8": {"block_0": 0.01, "block_1": 0.012, "logits": 0.015},
    }
    fig = plot_block_errors(errors)
    lines = fig.axes[0].get_lines()
    assert [line.get_label() for line in lines] == list(errors)
    for line, by_output in zip(lines, errors.values()):
        np.testing.assert_allclose(line.get_ydata(), [100 * e for e in by_output.values()])
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == ["block 0", "block 1", "logits"]


def test_tradeoff_places_each_row_at_its_gzip_size_and_mean_accuracy():
    def row(method, gzip, accuracy, latency):
        return {
            "method": method,
            "gzip_bytes": gzip,
            "accuracy": accuracy,
            "latency_vs_fp32": latency,
            "vs_fp32": None,
        }

    result = {
        "rows": [row("teacher", 8e6, [0.7, 0.72], 5.0), row("fp32", 2e6, [0.74, 0.74], 1.0)],
        "threads": 1,
        "seq_length": 64,
    }
    fig = plot_tradeoff(result)
    left, right = fig.axes[:2]
    assert left.get_xscale() == "log"
    points = np.vstack([c.get_offsets() for c in left.collections])
    np.testing.assert_allclose(points, [[8.0, 71.0], [2.0, 74.0]])
    assert [p.get_width() for p in right.patches] == [5.0, 1.0]
