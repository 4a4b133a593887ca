"""Paper-vs-ours tables of the export steps: Table 6, sizes, latency ratios, Table 7.

Inputs are the results of the pipeline steps (`mbert_lib.pipeline.steps_export`):
the `tflite` step's result (accuracy per precision) and the `latency` step's
records (`mbert_lib.bench.tflite_latency.measure`). Every function returns a
pandas DataFrame, so the notebook and the report print the same numbers.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

import pandas as pd

from mbert_lib import paper
from mbert_lib.bench.tflite_latency import MODELS, TABLE7_GRID, summarize
from mbert_lib.paper import TABLE7_MS

# This project's latency targets for a 2-core x86 CPU (docs/reference.md for the paper's):
# (summary key, comparison, bound, what it is).
LATENCY_TARGETS = (
    ("model_fp32_ms", "<=", 40.0, "MobileBERT fp32 latency (ms)"),
    ("latency_ratio_fp32", ">=", 4.5, "BERT_BASE / MobileBERT latency, fp32"),
    ("fastest_speedup", ">=", paper.FASTER_THAN_BERT_BASE,
     "BERT_BASE fp32 / fastest MobileBERT variant"),
    ("size_ratio_fp32", ">=", paper.SMALLER_THAN_BERT_BASE, "BERT_BASE / MobileBERT file size"),
)
_PAPER_VALUES = {"model_fp32_ms": f"{paper.PIXEL4_LATENCY_MS['mobilebert']:g} (Pixel 4, 4 thr.)",
                 "latency_ratio_fp32": f"{paper.FASTER_THAN_BERT_BASE:g}",
                 "fastest_speedup": f"{paper.FASTER_THAN_BERT_BASE:g}",
                 "size_ratio_fp32": f"{paper.SMALLER_THAN_BERT_BASE:g} (parameters)"}


def table6(result: Mapping, names: Optional[Mapping[str, str]] = None) -> pd.DataFrame:
    """One row per (model, precision) of a `tflite` step result: dev accuracy through the
    interpreter, its difference from the Keras model in points, max |Δlogit|, size, and
    how many times smaller than fp32; a precision that failed has its error instead."""
    rows = []
    for model, entry in result["models"].items():
        keras = entry["keras_accuracy"]
        fp32 = entry["variants"].get("fp32", {}).get("size_bytes")
        rows.append({"model": (names or {}).get(model, model), "precision": "Keras (float32)",
                     "accuracy %": 100 * keras, "Δ vs Keras (points)": 0.0,
                     "max |Δlogit|": 0.0, "size MB": None, "× smaller than fp32": None,
                     "error": ""})
        for precision, v in entry["variants"].items():
            if "error" in v:
                rows.append({"model": (names or {}).get(model, model), "precision": precision,
                             "error": v["error"]})
                continue
            rows.append({"model": (names or {}).get(model, model), "precision": precision,
                         "accuracy %": 100 * v["accuracy"],
                         "Δ vs Keras (points)": 100 * (v["accuracy"] - keras),
                         "max |Δlogit|": v["max_abs_logit_diff"],
                         "size MB": v["size_bytes"] / 1e6,
                         "× smaller than fp32": fp32 / v["size_bytes"] if fp32 else None,
                         "error": ""})
    return pd.DataFrame(rows)


def paper_table6() -> pd.DataFrame:
    """The paper's SST-2 dev accuracy before and after 8-bit quantization (≈: unconfirmed)."""
    return pd.DataFrame([{"model": name, "SST-2 dev accuracy": str(value)}
                         for name, value in paper.TABLE6_SST2_DEV.items()])


def size_table(records: Sequence[Mapping]) -> pd.DataFrame:
    """Parameters and .tflite size per model and precision (each model's own norm/act),
    and the baseline / model size ratio beside the paper's 4.3×."""
    rows = {}
    for r in records:
        config = MODELS[r["model"]][0]
        if (r["normalization_type"], r["hidden_act"]) != (config.normalization_type,
                                                          config.hidden_act):
            continue
        rows[(r["model"], r["precision"])] = {
            "model": r["model"], "precision": r["precision"], "params (M)": r["params"] / 1e6,
            "size MB": r["size_bytes"] / 1e6, "bytes / param": r["size_bytes"] / r["params"]}
    df = pd.DataFrame(list(rows.values()))
    ratios = []
    for _, row in df.iterrows():
        baseline = MODELS[row.model][1]
        base = rows.get((baseline, row.precision)) if baseline else None
        ratios.append(base["size MB"] / row["size MB"] if base else None)
    df["baseline / model"] = ratios
    df["paper"] = [f"{paper.SMALLER_THAN_BERT_BASE:g}× (parameters)" if r is not None else ""
                   for r in ratios]
    return df


def latency_table(records: Sequence[Mapping]) -> pd.DataFrame:
    """Median ms of every (model, norm, act, precision), one column per thread count."""
    df = pd.DataFrame(list(records))
    table = df.pivot_table(index=["model", "normalization_type", "hidden_act", "precision"],
                           columns="threads", values="median_ms")
    table.columns = [f"{n} thread{'s' if n > 1 else ''} (ms)" for n in table.columns]
    return table.reset_index()


def targets(records: Sequence[Mapping], threads: int = 2) -> pd.DataFrame:
    """The project's targets checked on the summary of `records` at `threads`
    (the paper-size pair when measured, else the tiny stand-ins)."""
    rows = [s for s in summarize(records) if s["threads"] == threads]
    if not rows:
        raise ValueError(f"no MobileBERT / baseline pair measured with {threads} threads")
    summary = next((s for s in rows if s["model"] == "mobilebert"), rows[0])
    out = []
    for key, op, bound, what in LATENCY_TARGETS:
        value = summary[key]
        met = value <= bound if op == "<=" else value >= bound
        out.append({"quantity": what, "pair": f"{summary['baseline']} / {summary['model']}",
                    "threads": threads, "ours": value, "target": f"{op} {bound:g}",
                    "met": bool(met), "paper": _PAPER_VALUES[key]})
    return pd.DataFrame(out)


def table7(records: Sequence[Mapping], model: str = "mobilebert") -> pd.DataFrame:
    """Table 7: fp32 latency of `model` by normalization × activation and thread count,
    the ratio to LayerNorm + gelu at the same thread count, and the paper's Pixel 4 cells."""
    df = pd.DataFrame([r for r in records if r["model"] == model and r["precision"] == "fp32"])
    if df.empty:
        raise ValueError(f"no fp32 records of {model!r}")
    rows = []
    baseline = TABLE7_MS[("layer_norm", "gelu")]
    for threads, group in df.groupby("threads"):
        cells = {(r.normalization_type, r.hidden_act): r for r in group.itertuples()}
        if ("layer_norm", "gelu") not in cells:
            raise ValueError(f"no LayerNorm + gelu record of {model!r} at {threads} threads")
        base = cells[("layer_norm", "gelu")].median_ms
        for combo in TABLE7_GRID:
            if combo not in cells:
                continue
            p = TABLE7_MS[combo]
            rows.append({"normalization": combo[0], "activation": combo[1], "threads": threads,
                         "median ms": cells[combo].median_ms, "min ms": cells[combo].min_ms,
                         "ratio to LN+gelu": cells[combo].median_ms / base,
                         "paper Pixel 4": str(p),
                         "paper ratio": ("≈" if p.approx or baseline.approx else "")
                         + f"{p.value / baseline.value:.2f}"})
    return pd.DataFrame(rows)
