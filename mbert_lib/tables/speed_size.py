""" "4.3× smaller, 5.5× faster than BERT_BASE": file sizes, latencies, their ratios and the
project's latency targets, from the `latency` step's records ({"model",
"normalization_type", "hidden_act", "precision", "threads", "median_ms", "min_ms",
"size_bytes", "params", ...}, `mbert_lib.bench.tflite_latency.measure`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from mbert_lib import paper
from mbert_lib.bench.tflite_latency import MODELS, summarize
from mbert_lib.tables.table6_quantization import met

# This project's latency targets for a 2-core x86 CPU (docs/reference.md for the paper's):
# (summary key, comparison, bound, what it is).
LATENCY_TARGETS = (
    ("model_fp32_ms", "<=", 40.0, "MobileBERT fp32 latency (ms)"),
    ("latency_ratio_fp32", ">=", 4.5, "BERT_BASE / MobileBERT latency, fp32"),
    (
        "fastest_speedup",
        ">=",
        paper.FASTER_THAN_BERT_BASE,
        "BERT_BASE fp32 / fastest MobileBERT variant",
    ),
    ("size_ratio_fp32", ">=", paper.SMALLER_THAN_BERT_BASE, "BERT_BASE / MobileBERT file size"),
)
_PAPER_VALUES = {
    "model_fp32_ms": f"{paper.PIXEL4_LATENCY_MS['mobilebert']:g} (Pixel 4, 4 thr.)",
    "latency_ratio_fp32": f"{paper.FASTER_THAN_BERT_BASE:g}",
    "fastest_speedup": f"{paper.FASTER_THAN_BERT_BASE:g}",
    "size_ratio_fp32": f"{paper.SMALLER_THAN_BERT_BASE:g} (parameters)",
}


def size_table(records: Sequence[Mapping]) -> pd.DataFrame:
    """Parameters and .tflite size per model and precision (each model's own norm/act),
    and the baseline / model size ratio beside the paper's 4.3×."""
    rows = {}
    for r in records:
        config = MODELS[r["model"]][0]
        if (r["normalization_type"], r["hidden_act"]) != (
            config.normalization_type,
            config.hidden_act,
        ):
            continue
        rows[(r["model"], r["precision"])] = {
            "model": r["model"],
            "precision": r["precision"],
            "params (M)": r["params"] / 1e6,
            "size MB": r["size_bytes"] / 1e6,
            "bytes / param": r["size_bytes"] / r["params"],
        }
    df = pd.DataFrame(list(rows.values()))
    ratios = []
    for _, row in df.iterrows():
        baseline = MODELS[row.model][1]
        base = rows.get((baseline, row.precision)) if baseline else None
        ratios.append(base["size MB"] / row["size MB"] if base else None)
    df["baseline / model"] = ratios
    df["paper"] = [
        f"{paper.SMALLER_THAN_BERT_BASE:g}× (parameters)" if r is not None else "" for r in ratios
    ]
    return df


def latency_table(records: Sequence[Mapping]) -> pd.DataFrame:
    """Median ms of every (model, norm, act, precision), one column per thread count."""
    df = pd.DataFrame(list(records))
    table = df.pivot_table(
        index=["model", "normalization_type", "hidden_act", "precision"],
        columns="threads",
        values="median_ms",
    )
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
        out.append(
            {
                "quantity": what,
                "pair": f"{summary['baseline']} / {summary['model']}",
                "threads": threads,
                "ours": value,
                "target": f"{op} {bound:g}",
                "met": bool(met),
                "paper": _PAPER_VALUES[key],
            }
        )
    return pd.DataFrame(out)


TARGET_MODELS = ("mobilebert", "bert_base")
_BOUNDS = {key: bound for key, _, bound, _ in LATENCY_TARGETS}
FP32_2THREAD_MS_TARGET = _BOUNDS["model_fp32_ms"]
FP32_LATENCY_RATIO_TARGET = _BOUNDS["latency_ratio_fp32"]


def ratios(records: Sequence[Mapping]) -> pd.DataFrame:
    """bench.tflite_latency.summarize: per (model, baseline, threads) the fp32 latency ratio
    (medians and fastest runs), the fastest precision's speed-up and the size ratios,
    beside the paper's 5.5× and 4.3×."""
    rows = summarize(records)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame["paper faster"] = f"{paper.FASTER_THAN_BERT_BASE}×"
    frame["paper smaller"] = f"{paper.SMALLER_THAN_BERT_BASE}×"
    return frame


def targets_summary(
    ratio_frame: pd.DataFrame, tflite: Mapping | None = None, accuracy_model: str = "pkt"
) -> pd.DataFrame:
    """The project's four targets on the paper-size pair (mobilebert vs bert_base) at 2 threads;
    the fastest variant's SST-2 accuracy from `tflite` (`accuracy_model`) beside it."""
    rows = []
    pair = (
        ratio_frame[
            (ratio_frame.model == TARGET_MODELS[0]) & (ratio_frame.baseline == TARGET_MODELS[1])
        ]
        if not ratio_frame.empty
        else ratio_frame
    )
    two = pair[pair.threads == 2] if not pair.empty else pair
    if two.empty:
        return pd.DataFrame(columns=["target", "goal", "ours", "status"])
    r = two.iloc[0]
    accuracy = ""
    variant = (
        (tflite or {})
        .get("models", {})
        .get(accuracy_model, {})
        .get("variants", {})
        .get(r.fastest_precision, {})
    )
    if "accuracy" in variant:
        accuracy = f"; {accuracy_model} at {r.fastest_precision}: {100 * variant['accuracy']:.1f}%"
    size = paper.SMALLER_THAN_BERT_BASE
    rows = [
        {
            "target": "MobileBERT fp32, 2 threads",
            "goal": f"≤ {FP32_2THREAD_MS_TARGET:g} ms",
            "ours": f"{r.model_fp32_ms:.1f} ms",
            "status": met(r.model_fp32_ms <= FP32_2THREAD_MS_TARGET),
        },
        {
            "target": "BERT_BASE / MobileBERT latency, fp32",
            "goal": f"≥ {FP32_LATENCY_RATIO_TARGET:g}×",
            "ours": f"{r.latency_ratio_fp32:.2f}×",
            "status": met(r.latency_ratio_fp32 >= FP32_LATENCY_RATIO_TARGET),
        },
        {
            "target": "BERT_BASE fp32 / fastest MobileBERT variant",
            "goal": f"≥ {paper.FASTER_THAN_BERT_BASE:g}× (paper)",
            "ours": f"{r.fastest_speedup:.2f}× ({r.fastest_precision}{accuracy})",
            "status": met(r.fastest_speedup >= paper.FASTER_THAN_BERT_BASE),
        },
        {
            "target": "BERT_BASE / MobileBERT size, fp32",
            "goal": f"≥ {size:g}× (paper)",
            "ours": f"{r.size_ratio_fp32:.2f}×",
            "status": met(r.size_ratio_fp32 >= size),
        },
    ]
    return pd.DataFrame(rows)
