"""The compression lab's table: one row per method of a `compress` step's result.

`result` is what the pipeline's compress step writes (<out>/compress/compress.json,
results/compress.json for the published laptop run): per-seed accuracies as fractions,
in one seed order. The table shows percentages and megabytes; "vs fp32" is the paired
difference against the dense fp32 student (`mbert_lib.paired`), in points, with its
95 % confidence interval and verdict.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

LABELS = {
    "teacher": "teacher (IB-BERT, fp32)",
    "fp32": "fp32 (dense student)",
    "dynamic_int8": "PTQ dynamic-range int8",
    "full_int8": "PTQ full-integer int8",
    "qat_int8": "QAT int8",
}


def label(method: str) -> str:
    """A method's name as the table prints it: prune_90 "magnitude-pruned 90 %",
    ffn_units_50 "50 % of FFN units out", a suffix _<precision> ", then <precision>"."""
    if method in LABELS:
        return LABELS[method]
    for prefix, text in (
        ("prune_", "magnitude-pruned {} %"),
        ("ffn_units_", "{} % of FFN units out"),
    ):
        if method.startswith(prefix):
            percent, _, precision = method.removeprefix(prefix).partition("_")
            name = text.format(percent)
            return f"{name}, then {LABELS.get(precision, precision)}" if precision else name
    return method


def compression_table(result: Mapping) -> pd.DataFrame:
    """One row per method: sparsity, .tflite and gzip MB, dev accuracy (mean ± sd over the
    seeds, through LiteRT), the paired difference to fp32, latency and its ratio."""
    rows = []
    for row in result["rows"]:
        accuracy = 100 * np.asarray(row["accuracy"])
        paired = row["vs_fp32"]
        rows.append(
            {
                "method": label(row["method"]),
                "sparsity (%)": round(100 * row["sparsity"], 1),
                ".tflite (MB)": round(row["bytes"] / 1e6, 2),
                "gzip (MB)": round(row["gzip_bytes"] / 1e6, 2),
                "accuracy (%)": f"{accuracy.mean():.1f} ± {accuracy.std(ddof=1):.1f}",
                "vs fp32 (points)": "—"
                if paired is None
                else f"{100 * paired['mean']:+.1f} [{100 * paired['low']:+.1f}, "
                f"{100 * paired['high']:+.1f}] {paired['verdict']}",
                "latency (ms)": round(row["latency_ms"], 3),
                "× fp32": round(row["latency_vs_fp32"], 2),
            }
        )
    return pd.DataFrame(rows).set_index("method")


def sensitivity_table(result: Mapping) -> pd.DataFrame:
    """Points of dev accuracy lost when one block (or all) is pruned once at a sparsity:
    the paired mean difference to the dense model, blocks down, sparsities across."""
    rows = [
        {
            "block": str(p["block"]),
            "sparsity": f"{round(100 * p['sparsity'])} %",
            "points": round(100 * p["vs_dense"]["mean"], 1),
        }
        for p in result["sensitivity"]
    ]
    table = pd.DataFrame(rows).pivot(index="block", columns="sparsity", values="points")
    blocks = list(dict.fromkeys(r["block"] for r in rows))
    return table.loc[blocks]
