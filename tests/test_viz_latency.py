"""mbert_lib.tables.keras_table7 and mbert_lib.viz.latency: the Table 7 table (ratios,
"≈" marks) and the figures it draws."""

import matplotlib
import pytest

from mbert_lib.paper import TABLE7_MS
from mbert_lib.tables.table7_norm_act import keras_table7
from mbert_lib.viz.latency import plot_norm_act_latency, plot_op_costs

matplotlib.use("Agg")

MS = {
    ("layer_norm", "gelu"): 80.0,
    ("layer_norm", "relu"): 60.0,
    ("no_norm", "gelu"): 50.0,
    ("no_norm", "relu"): 40.0,
}


def records():
    return [
        {
            "model": "m",
            "normalization_type": n,
            "hidden_act": a,
            "num_hidden_layers": 2,
            "seq_length": 8,
            "batch": 1,
            "jit": jit,
            "median_ms": ms * (2 if jit else 1),
            "min_ms": ms / 2,
            "max_ms": ms * 3,
            "repeats": 5,
        }
        for (n, a), ms in MS.items()
        for jit in (False, True)
    ]


def test_ratios_are_per_jit_mode_and_paper_cells_keep_their_marks():
    table = keras_table7(records())
    assert len(table) == 8
    for _, row in table.iterrows():
        norm, act = {
            "LayerNorm + gelu": ("layer_norm", "gelu"),
            "LayerNorm + relu": ("layer_norm", "relu"),
            "NoNorm + gelu": ("no_norm", "gelu"),
            "NoNorm + relu": ("no_norm", "relu"),
        }[row.combination]
        # Each jit mode is divided by its own LayerNorm + gelu baseline.
        assert row.ratio == pytest.approx(MS[(norm, act)] / MS[("layer_norm", "gelu")])
        paper = TABLE7_MS[(norm, act)]
        assert row["paper Pixel 4"].startswith("≈") == paper.approx
        assert row["paper ratio"].startswith("≈") == paper.approx
        expected = paper.value / TABLE7_MS[("layer_norm", "gelu")].value
        assert float(row["paper ratio"].lstrip("≈")) == pytest.approx(expected, abs=0.005)


def test_missing_baseline_raises():
    partial = [
        r
        for r in records()
        if not (r["normalization_type"] == "layer_norm" and r["hidden_act"] == "gelu" and r["jit"])
    ]
    with pytest.raises(ValueError, match="baseline"):
        keras_table7(partial)
    with pytest.raises(ValueError, match="keys"):
        keras_table7([])


def test_figures_are_written(tmp_path):
    plot_norm_act_latency(records(), default_jit=False, path=tmp_path / "lat.png")
    ops = [
        {"group": "activation", "op": "relu", "elements": 10, "median_ms": 1.0},
        {"group": "norm", "op": "NoNorm", "elements": 10, "median_ms": 2.0},
    ]
    plot_op_costs(ops, path=tmp_path / "ops.png")
    for name in ("lat.png", "ops.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
