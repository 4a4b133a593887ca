"""Table 7: latency of the MobileBERT shape by normalization × activation (NoNorm, relu).

Two measurements: the TFLite interpreter's (the `latency` step's records,
`mbert_lib.bench.tflite_latency`; `table7`, and `table7_by_threads` for the report)
and the Keras model's (`mbert_lib.bench.keras_latency.norm_act_latency`, with and
without XLA; `keras_table7`). Each beside the paper's Pixel 4 cells.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from mbert_lib.bench.tflite_latency import TABLE7_GRID
from mbert_lib.paper import TABLE7_MS, PaperValue

NORM_LABEL = {"layer_norm": "LayerNorm", "no_norm": "NoNorm"}
BASELINE = ("layer_norm", "gelu")


def combination_label(norm: str, act: str, sep: str = "\n") -> str:
    """("no_norm", "relu") -> "NoNorm\\n+ relu"."""
    return f"{NORM_LABEL.get(norm, norm)}{sep}+ {act}"


def paper_ratio_text(value: PaperValue, baseline: PaperValue) -> str:
    """value / baseline to 2 decimals, with "≈" if either is approximate."""
    approx = value.approx or baseline.approx
    return ("≈" if approx else "") + f"{value.value / baseline.value:.2f}"


def table7(records: Sequence[Mapping], model: str = "mobilebert") -> pd.DataFrame:
    """Table 7: fp32 latency of `model` by normalization × activation and thread count,
    the ratio to LayerNorm + gelu at the same thread count, and the paper's Pixel 4 cells."""
    df = pd.DataFrame([r for r in records if r["model"] == model and r["precision"] == "fp32"])
    if df.empty:
        raise ValueError(f"no fp32 records of {model!r}")
    rows = []
    baseline = TABLE7_MS[BASELINE]
    for threads, group in df.groupby("threads"):
        cells = {(r.normalization_type, r.hidden_act): r for r in group.itertuples()}
        if BASELINE not in cells:
            raise ValueError(f"no LayerNorm + gelu record of {model!r} at {threads} threads")
        base = cells[BASELINE].median_ms
        for combo in TABLE7_GRID:
            if combo not in cells:
                continue
            p = TABLE7_MS[combo]
            rows.append(
                {
                    "normalization": combo[0],
                    "activation": combo[1],
                    "threads": threads,
                    "median ms": cells[combo].median_ms,
                    "min ms": cells[combo].min_ms,
                    "ratio to LN+gelu": cells[combo].median_ms / base,
                    "paper Pixel 4": str(p),
                    "paper ratio": ("≈" if p.approx or baseline.approx else "")
                    + f"{p.value / baseline.value:.2f}",
                }
            )
    return pd.DataFrame(rows)


def grid_model(records: Sequence[Mapping]) -> str | None:
    """The model whose fp32 records cover Table 7's norm × activation grid (the
    MobileBERT shape: BERT_BASE is exported with its own LayerNorm + gelu only)."""
    for model in dict.fromkeys(r["model"] for r in records):
        combos = {
            (r["normalization_type"], r["hidden_act"])
            for r in records
            if r["model"] == model and r["precision"] == "fp32"
        }
        if set(TABLE7_GRID) <= combos:
            return model
    return None


def table7_by_threads(records: Sequence[Mapping]) -> pd.DataFrame | None:
    """`table7` of the grid model, one row per norm × activation with a pair
    of columns (ms, ratio to LayerNorm + gelu) per thread count, beside the paper's cells."""
    model = grid_model(records)
    if model is None:
        return None
    long = table7(records, model)
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


def keras_table7(records: Sequence[Mapping], paper: Mapping = TABLE7_MS) -> pd.DataFrame:
    """One row per (normalization, activation, jit): median/min ms, ratio to LayerNorm+gelu
    of the same jit mode, and the paper's Pixel 4 ms and ratio (text, "≈" when approximate)."""
    df = pd.DataFrame(list(records))
    needed = {"normalization_type", "hidden_act", "jit", "median_ms", "min_ms"}
    if df.empty or not needed <= set(df.columns):
        raise ValueError(f"records must be non-empty dicts with keys {sorted(needed)}")
    base = df[(df.normalization_type == BASELINE[0]) & (df.hidden_act == BASELINE[1])]
    if set(base.jit) != set(df.jit):
        raise ValueError("records need a LayerNorm + gelu baseline for every jit mode")
    base_ms = base.set_index("jit").median_ms
    df["ratio"] = df.median_ms / df.jit.map(base_ms)
    cells = [paper.get((n, a)) for n, a in zip(df.normalization_type, df.hidden_act)]
    df["paper Pixel 4"] = [str(v) if v else "" for v in cells]
    df["paper ratio"] = [paper_ratio_text(v, paper[BASELINE]) if v else "" for v in cells]
    df["combination"] = [
        combination_label(n, a, " ") for n, a in zip(df.normalization_type, df.hidden_act)
    ]
    columns = ["combination", "jit", "median_ms", "min_ms", "ratio", "paper Pixel 4", "paper ratio"]
    return df[columns].reset_index(drop=True)
