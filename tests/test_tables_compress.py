"""The compression table and the sensitivity pivot, against the record they read."""

import numpy as np

from mbert_lib.paired import paired_difference
from mbert_lib.tables.compress import compression_table, label, sensitivity_table


def _row(method, accuracy, base=None, sparsity=0.0, latency=1.0):
    return {
        "method": method,
        "sparsity": sparsity,
        "bytes": 2_000_000,
        "gzip_bytes": 1_500_000,
        "accuracy": accuracy,
        "latency_ms": latency,
        "latency_vs_fp32": latency,
        "vs_fp32": None if base is None else paired_difference(accuracy, base).to_dict(),
    }


def test_each_row_shows_its_seeds_and_the_paired_difference_in_points():
    fp32 = [0.70, 0.72, 0.74]
    pruned = [0.71, 0.72, 0.76]
    result = {"rows": [_row("fp32", fp32), _row("prune_90", pruned, fp32, 0.9, 0.8)]}
    table = compression_table(result)
    assert list(table.index) == ["fp32 (dense student)", "magnitude-pruned 90 %"]
    row = table.loc["magnitude-pruned 90 %"]
    assert (
        row["accuracy (%)"] == f"{100 * np.mean(pruned):.1f} ± {100 * np.std(pruned, ddof=1):.1f}"
    )
    d = 100 * (np.array(pruned) - np.array(fp32))
    assert row["vs fp32 (points)"].startswith(f"{d.mean():+.1f} [")
    assert row["sparsity (%)"] == 90.0 and row["× fp32"] == 0.8
    assert table.loc["fp32 (dense student)", "vs fp32 (points)"] == "—"


def test_the_scan_pivots_blocks_down_and_sparsities_across_in_record_order():
    base = [0.7, 0.7]
    probes = [
        {"block": b, "sparsity": s, "accuracy": [0.7 - i / 100, 0.7 - i / 100]}
        for i, (b, s) in enumerate(
            [(0, 0.5), (0, 0.9), (1, 0.5), (1, 0.9), ("all", 0.5), ("all", 0.9)]
        )
    ]
    for p in probes:
        p["vs_dense"] = {"mean": float(np.mean(np.subtract(p["accuracy"], base)))}
    table = sensitivity_table({"sensitivity": probes})
    assert list(table.index) == ["0", "1", "all"] and list(table.columns) == ["50 %", "90 %"]
    assert table.loc["1", "90 %"] == -3.0 and table.loc["all", "50 %"] == -4.0


def test_labels():
    assert label("ffn_units_50") == "50 % of FFN units out"
    assert label("prune_75") == "magnitude-pruned 75 %"
    assert label("qat_int8") == "QAT int8"
    assert label("teacher") == "teacher (IB-BERT, fp32)"
    assert label("prune_90_qat_int8") == "magnitude-pruned 90 %, then QAT int8"
    assert (
        label("ffn_units_50_dynamic_int8") == "50 % of FFN units out, then PTQ dynamic-range int8"
    )
