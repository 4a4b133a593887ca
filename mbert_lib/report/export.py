"""Paper vs reproduced deployment tables: Table 6 (accuracy per TFLite precision), Table 7
(NoNorm/relu latency grid), the "4.3× smaller, 5.5× faster" ratios and the project's latency targets.

Inputs: the `tflite` step's result ({"task", "models": {model: {"keras_accuracy",
"variants": {precision: {"accuracy", "max_abs_logit_diff", "size_bytes", "path"} or
{"error"}}}}}) and the `latency` step's records ({"model", "normalization_type",
"hidden_act", "precision", "threads", "median_ms", "min_ms", "size_bytes", ...}).
"""

from __future__ import annotations

import math
from typing import Mapping, Optional, Sequence

import pandas as pd

from mbert_lib import paper
from mbert_lib.bench.tflite_latency import TABLE7_GRID
from mbert_lib.export import tables

PRECISIONS = ("fp32", "dynamic_int8", "float16", "int8")
# The project's accuracy targets per precision: (what, test on |Δ accuracy| in points and
# max |Δlogit|); None = report only.
ACCURACY_TARGETS = {
    "fp32": ("= Keras (max |Δlogit| ≤ 1e-4)", lambda d_acc, d_logit: d_logit <= 1e-4),
    "dynamic_int8": ("within 1 point of Keras", lambda d_acc, d_logit: abs(d_acc) <= 1.0),
    "float16": ("within 1 point of Keras", lambda d_acc, d_logit: abs(d_acc) <= 1.0),
    "int8": None,
}
# The project's latency bounds for a 2-core CPU (one definition: export.tables).
_BOUNDS = {key: bound for key, _, bound, _ in tables.LATENCY_TARGETS}
FP32_2THREAD_MS_TARGET = _BOUNDS["model_fp32_ms"]
FP32_LATENCY_RATIO_TARGET = _BOUNDS["latency_ratio_fp32"]
TARGET_MODELS = ("mobilebert", "bert_base")


def met(ok: bool) -> str:
    return "met" if ok else "not met"


def _status(precision: str, row: Mapping) -> tuple[str, str]:
    """(target, status) of one `tables.table6` row."""
    target = ACCURACY_TARGETS.get(precision)
    if row.get("error"):
        return "—", "not met" if target else "failed"
    if target is None:
        return "reported, no target", "—"
    return target[0], met(target[1](row["Δ vs Keras (points)"], row["max |Δlogit|"]))


def table6(tflite: Mapping) -> pd.DataFrame:
    """`export.tables.table6` in the report's layout: one row per (model, precision) with the
    Keras accuracy beside it, precisions in PRECISIONS order, and the project's target and status.
    """
    long = tables.table6(tflite)
    rows = []
    for model, group in long.groupby("model", sort=False):
        keras = group[group["precision"] == "Keras (float32)"].iloc[0]["accuracy %"]
        variants = {r["precision"]: r for r in group.to_dict("records")
                    if r["precision"] != "Keras (float32)"}
        for precision in [p for p in PRECISIONS if p in variants] + [
                p for p in variants if p not in PRECISIONS]:
            v = variants[precision]
            target, status = _status(precision, v)
            row = {"model": model, "precision": precision, "Keras acc (%)": keras,
                   "target": target, "status": status}
            if v.get("error"):
                row["TFLite acc (%)"] = f"export failed: {v['error']}"
            else:
                row.update({"TFLite acc (%)": v["accuracy %"],
                            "Δ vs Keras (points)": v["Δ vs Keras (points)"],
                            "max |Δlogit|": v["max |Δlogit|"], "size (MB)": v["size MB"],
                            "fp32 size / size": v["× smaller than fp32"]
                            if v["× smaller than fp32"] is not None else math.nan})
            rows.append(row)
    columns = ["model", "precision", "Keras acc (%)", "TFLite acc (%)", "Δ vs Keras (points)",
               "max |Δlogit|", "size (MB)", "fp32 size / size", "target", "status"]
    return pd.DataFrame(rows).reindex(columns=columns)


def grid_model(records: Sequence[Mapping]) -> Optional[str]:
    """The model whose fp32 records cover Table 7's norm × activation grid (the
    MobileBERT shape: BERT_BASE is exported with its own LayerNorm + gelu only)."""
    for model in dict.fromkeys(r["model"] for r in records):
        combos = {(r["normalization_type"], r["hidden_act"]) for r in records
                  if r["model"] == model and r["precision"] == "fp32"}
        if set(TABLE7_GRID) <= combos:
            return model
    return None


def table7(records: Sequence[Mapping]) -> Optional[pd.DataFrame]:
    """`export.tables.table7` of the grid model, one row per norm × activation with a pair
    of columns (ms, ratio to LayerNorm + gelu) per thread count, beside the paper's cells."""
    model = grid_model(records)
    if model is None:
        return None
    long = tables.table7(records, model)
    rows = []
    for (norm, act), group in long.groupby(["normalization", "activation"], sort=False):
        row = {"normalization": norm, "activation": act}
        for r in group.sort_values("threads").to_dict("records"):
            label = f"{r['threads']} thread{'s' * (r['threads'] > 1)}"
            row[f"ours {label} (ms)"] = r["median ms"]
            row[f"ours {label} / LN+gelu"] = r["ratio to LN+gelu"]
        row["paper Pixel 4 (ms)"] = group.iloc[0]["paper Pixel 4"]
        row["paper / LN+gelu"] = group.iloc[0]["paper ratio"]
        rows.append(row)
    return pd.DataFrame(rows).assign(model=model)


def ratios(records: Sequence[Mapping]) -> pd.DataFrame:
    """bench.tflite_latency.summarize: per (model, baseline, threads) the fp32 latency ratio
    (medians and fastest runs), the fastest precision's speed-up and the size ratios,
    beside the paper's 5.5× and 4.3×."""
    from mbert_lib.bench.tflite_latency import summarize

    rows = summarize(records)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame["paper faster"] = f"{paper.FASTER_THAN_BERT_BASE}×"
    frame["paper smaller"] = f"{paper.SMALLER_THAN_BERT_BASE}×"
    return frame


def targets(ratio_frame: pd.DataFrame, tflite: Optional[Mapping] = None,
            accuracy_model: str = "pkt") -> pd.DataFrame:
    """The project's four targets on the paper-size pair (mobilebert vs bert_base) at 2 threads;
    the fastest variant's SST-2 accuracy from `tflite` (`accuracy_model`) beside it."""
    rows = []
    pair = ratio_frame[(ratio_frame.model == TARGET_MODELS[0])
                       & (ratio_frame.baseline == TARGET_MODELS[1])] \
        if not ratio_frame.empty else ratio_frame
    two = pair[pair.threads == 2] if not pair.empty else pair
    if two.empty:
        return pd.DataFrame(columns=["target", "goal", "ours", "status"])
    r = two.iloc[0]
    accuracy = ""
    variant = ((tflite or {}).get("models", {}).get(accuracy_model, {})
               .get("variants", {}).get(r.fastest_precision, {}))
    if "accuracy" in variant:
        accuracy = f"; {accuracy_model} at {r.fastest_precision}: {100 * variant['accuracy']:.1f}%"
    size = paper.SMALLER_THAN_BERT_BASE
    rows = [
        {"target": "MobileBERT fp32, 2 threads", "goal": f"≤ {FP32_2THREAD_MS_TARGET:g} ms",
         "ours": f"{r.model_fp32_ms:.1f} ms", "status": met(
             r.model_fp32_ms <= FP32_2THREAD_MS_TARGET)},
        {"target": "BERT_BASE / MobileBERT latency, fp32", "goal":
         f"≥ {FP32_LATENCY_RATIO_TARGET:g}×", "ours": f"{r.latency_ratio_fp32:.2f}×",
         "status": met(r.latency_ratio_fp32 >= FP32_LATENCY_RATIO_TARGET)},
        {"target": "BERT_BASE fp32 / fastest MobileBERT variant",
         "goal": f"≥ {paper.FASTER_THAN_BERT_BASE:g}× (paper)",
         "ours": f"{r.fastest_speedup:.2f}× ({r.fastest_precision}{accuracy})",
         "status": met(r.fastest_speedup >= paper.FASTER_THAN_BERT_BASE)},
        {"target": "BERT_BASE / MobileBERT size, fp32", "goal": f"≥ {size:g}× (paper)",
         "ours": f"{r.size_ratio_fp32:.2f}×", "status": met(r.size_ratio_fp32 >= size)},
    ]
    return pd.DataFrame(rows)
