"""The LAMB trust-ratio figure: one row per kind of variable, one dot per block and report."""

import numpy as np
import pandas as pd

from mbert_lib.viz.training import plot_trust_ratios


def _report(scale):
    names = [
        f"pretrainer/mobile_bert_encoder/layer_{k}/attention/{part}/kernel"
        for k in range(3)
        for part in ("query", "key")
    ]
    names += ["pretrainer/mobile_bert_encoder/layer_0/attention_norm/gamma"]
    ratios = scale * (1 + np.arange(len(names)))
    return pd.DataFrame({"variable": names, "trust_ratio": ratios, "adapted": [True] * 6 + [False]})


def test_rows_are_variable_kinds_and_dots_are_the_reported_ratios(tmp_path):
    reports = {"update 1": _report(0.01), "after training": _report(0.1)}
    fig = plot_trust_ratios(reports, path=tmp_path / "t.png")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "attention/query/kernel",
        "attention/key/kernel",
    ]
    first, second = ax.collections[:2]
    np.testing.assert_allclose(first.get_offsets()[:, 0], 0.01 * np.arange(1, 7))
    np.testing.assert_allclose(second.get_offsets()[:, 0], 0.1 * np.arange(1, 7))
    rows = np.round(first.get_offsets()[:, 1])  # query, key, query, key, ...
    np.testing.assert_array_equal(rows, [0, 1, 0, 1, 0, 1])
    assert (tmp_path / "t.png").stat().st_size > 0
