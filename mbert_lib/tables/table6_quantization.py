"""Table 6: accuracy of every TFLite precision beside the Keras model (paper section 4.6).

Input: the pipeline's `tflite` step result ({"task", "models": {model: {"keras_accuracy",
"variants": {precision: {"accuracy", "max_abs_logit_diff", "size_bytes", "path"} or
{"error"}}}}}). The notebook (09) shows `table6`, the report `table6_with_targets`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from mbert_lib import paper
from mbert_lib.export.tflite import PRECISIONS

# The project's accuracy targets per precision: (what, test on |Δ accuracy| in points and
# max |Δlogit|); None = report only.
ACCURACY_TARGETS = {
    "fp32": ("= Keras (max |Δlogit| ≤ 1e-4)", lambda d_acc, d_logit: d_logit <= 1e-4),
    "dynamic_int8": ("within 1 point of Keras", lambda d_acc, d_logit: abs(d_acc) <= 1.0),
    "float16": ("within 1 point of Keras", lambda d_acc, d_logit: abs(d_acc) <= 1.0),
    "int8": None,
}


def table6(result: Mapping, names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per (model, precision) of a `tflite` step result: dev accuracy through the
    interpreter, its difference from the Keras model in points, max |Δlogit|, size, and
    how many times smaller than fp32; a precision that failed has its error instead."""
    rows = []
    for model, entry in result["models"].items():
        keras = entry["keras_accuracy"]
        fp32 = entry["variants"].get("fp32", {}).get("size_bytes")
        rows.append(
            {
                "model": (names or {}).get(model, model),
                "precision": "Keras (float32)",
                "accuracy %": 100 * keras,
                "Δ vs Keras (points)": 0.0,
                "max |Δlogit|": 0.0,
                "size MB": None,
                "× smaller than fp32": None,
                "error": "",
            }
        )
        for precision, v in entry["variants"].items():
            if "error" in v:
                rows.append(
                    {
                        "model": (names or {}).get(model, model),
                        "precision": precision,
                        "error": v["error"],
                    }
                )
                continue
            rows.append(
                {
                    "model": (names or {}).get(model, model),
                    "precision": precision,
                    "accuracy %": 100 * v["accuracy"],
                    "Δ vs Keras (points)": 100 * (v["accuracy"] - keras),
                    "max |Δlogit|": v["max_abs_logit_diff"],
                    "size MB": v["size_bytes"] / 1e6,
                    "× smaller than fp32": fp32 / v["size_bytes"] if fp32 else None,
                    "error": "",
                }
            )
    return pd.DataFrame(rows)


def paper_table6() -> pd.DataFrame:
    """The paper's SST-2 dev accuracy before and after 8-bit quantization (≈: unconfirmed)."""
    return pd.DataFrame(
        [
            {"model": name, "SST-2 dev accuracy": str(value)}
            for name, value in paper.TABLE6_SST2_DEV.items()
        ]
    )


def met(ok: bool) -> str:
    return "met" if ok else "not met"


def _status(precision: str, row: Mapping) -> tuple[str, str]:
    """(target, status) of one `table6` row."""
    target = ACCURACY_TARGETS.get(precision)
    if row.get("error"):
        return "—", "not met" if target else "failed"
    if target is None:
        return "reported, no target", "—"
    return target[0], met(target[1](row["Δ vs Keras (points)"], row["max |Δlogit|"]))


def table6_with_targets(tflite: Mapping) -> pd.DataFrame:
    """`table6` in the report's layout: one row per (model, precision) with the
    Keras accuracy beside it, precisions in PRECISIONS order, and the project's target and status.
    """
    long = table6(tflite)
    rows = []
    for model, group in long.groupby("model", sort=False):
        keras = group[group["precision"] == "Keras (float32)"].iloc[0]["accuracy %"]
        variants = {
            r["precision"]: r
            for r in group.to_dict("records")
            if r["precision"] != "Keras (float32)"
        }
        for precision in [p for p in PRECISIONS if p in variants] + [
            p for p in variants if p not in PRECISIONS
        ]:
            v = variants[precision]
            target, status = _status(precision, v)
            row = {
                "model": model,
                "precision": precision,
                "Keras acc (%)": keras,
                "target": target,
                "status": status,
            }
            if v.get("error"):
                row["TFLite acc (%)"] = f"export failed: {v['error']}"
            else:
                row.update(
                    {
                        "TFLite acc (%)": v["accuracy %"],
                        "Δ vs Keras (points)": v["Δ vs Keras (points)"],
                        "max |Δlogit|": v["max |Δlogit|"],
                        "size (MB)": v["size MB"],
                        "fp32 size / size": v["× smaller than fp32"]
                        if v["× smaller than fp32"] is not None
                        else math.nan,
                    }
                )
            rows.append(row)
    columns = [
        "model",
        "precision",
        "Keras acc (%)",
        "TFLite acc (%)",
        "Δ vs Keras (points)",
        "max |Δlogit|",
        "size (MB)",
        "fp32 size / size",
        "target",
        "status",
    ]
    return pd.DataFrame(rows).reindex(columns=columns)
