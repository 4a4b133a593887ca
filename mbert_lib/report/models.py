"""Paper vs reproduced model tables: Table 1 (sizes), Tables 8 and 9 (transfer), SST-2.

Inputs are step records (see records.py); every number of "ours" comes from
them, every number of the paper from `mbert_lib.paper`. Accuracies are in %.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from mbert_lib import paper
from mbert_lib.finetune.search import mean_std
from mbert_lib.report.records import Records, result

# Pipeline step -> the row of paper Table 8 / Table 9 it reproduces.
TABLE8_ROWS = {"akt": "AKT", "jkt": "JKT", "pkt": "PKT"}
TABLE9_ROWS = {
    "no_transfer": "no transfer",
    "ablation_copy": "+copied embedding and MLM head (not in the paper)",
    "ablation_pd": "+PD",
    "ablation_pd_fmt": "+PD+FMT",
    "pkt": "+PD+FMT+AT",
    "ablation_fmt_at": "FMT+AT, no PD (not in the paper)",
}
# Fine-tuned model (step) -> what it is, and the paper's SST-2 number beside it.
SST2_MODELS = {
    "teacher": ("IB-BERT teacher", None),
    "pkt": (
        "MobileBERT student, PKT",
        ("MobileBERT, GLUE test", paper.PaperValue(paper.GLUE_TEST_MOBILEBERT["SST-2"])),
    ),
    "no_transfer": (
        "student, no transfer",
        ("no transfer, dev (Table 9)", paper.TABLE9["no transfer"]["SST-2"]),
    ),
    "bert_baseline": ("plain BERT of the student's size", None),
    "jkt": ("student, JKT", ("JKT, dev (Table 8)", paper.TABLE8["JKT"]["SST-2"])),
    "akt": ("student, AKT", ("AKT, dev (Table 8)", paper.TABLE8["AKT"]["SST-2"])),
}


def pm(values: Sequence[float], scale: float = 100.0) -> str:
    """ "mean ± std" of `values` × scale to one decimal ("mean" alone for one value)."""
    mean, std = mean_std(np.asarray(values, np.float64) * scale)
    return f"{mean:.1f}" if math.isnan(std) else f"{mean:.1f} ± {std:.1f}"


def table1(records: Records) -> pd.DataFrame:
    """Paper Table 1 parameter counts beside the presets' encoders (closed form), and the
    encoders the latency step built (when it ran), in millions."""
    from mbert_lib.anatomy.params import param_total
    from mbert_lib.config import get_preset

    built = {
        r["model"]: r["params"]
        for r in (result(records, "latency") or {}).get("records", [])
        if "params" in r
    }
    rows = []
    for name, row in paper.TABLE1.items():
        ours = param_total(get_preset(name)) / 1e6
        rows.append(
            {
                "model": name,
                "layers": row["layers"],
                "paper (M)": row["params_m"],
                "ours, encoder (M)": ours,
                "ours, built by the latency step (M)": built.get(name, math.nan) / 1e6
                if name in built
                else math.nan,
                "ours vs paper (%)": 100 * (ours / row["params_m"] - 1),
            }
        )
    return pd.DataFrame(rows)


def run_sizes(records: Records) -> pd.DataFrame | None:
    """Encoder parameters of the models this run fine-tuned (built models), and each one's
    size relative to the teacher beside the paper's MobileBERT / IB-BERT_LARGE."""
    finetune = result(records, "finetune")
    if finetune is None:
        return None
    done = {m: e for m, e in finetune["models"].items() if e.get("status") == "done"}
    teacher = done.get("teacher", {}).get("params")
    ratio = paper.TABLE1["ibbert_large"]["params_m"] / paper.TABLE1["mobilebert"]["params_m"]
    rows = [
        {
            "model": SST2_MODELS.get(m, (m,))[0],
            "step": m,
            "encoder params": f"{int(e['params']):,}",
            "teacher / model": teacher / e["params"] if teacher else math.nan,
            "paper: IB-BERT_LARGE / MobileBERT": ratio if m == "pkt" else math.nan,
        }
        for m, e in done.items()
    ]
    return pd.DataFrame(rows)


def standard_error(p: float, n: float) -> float:
    """Sampling error of an accuracy p measured on n predictions, sqrt(p (1 - p) / n)."""
    return math.sqrt(p * (1 - p) / n) if n and n > 0 else math.nan


def _sst2_cell(finetune: dict | None, step: str) -> str:
    """ "mean ± std (n=k)" of the step's fine-tuned dev metric, or why there is none."""
    if finetune is None:
        return "finetune not run"
    entry = finetune["models"].get(step)
    if entry is None:
        return "not fine-tuned (not in the finetune settings)"
    if entry.get("status") != "done":
        return "not run"
    return pm(entry["values"]) + f" (n={len(entry['values'])})"


def _seed_cells(entry: dict | None) -> dict:
    """The distill_seeds step's cells of one row: seeds, MLM accuracy over them (mean, std,
    "mean ± std") and the fine-tuned dev metric over them; "not run" without the step."""
    if entry is None:
        return {
            "pre-training seeds": "not run (optional step distill_seeds)",
            "ours, seeds: MLM acc mean (%)": math.nan,
            "ours, seeds: MLM acc std (points)": math.nan,
            "ours, seeds: fine-tuned dev (%)": "—",
        }
    mlm = entry["mlm_accuracy"]["values"]
    mean, std = mean_std(mlm)
    return {
        "pre-training seeds": ", ".join(map(str, entry["seeds"])),
        "ours, seeds: MLM acc mean (%)": 100 * mean,
        "ours, seeds: MLM acc std (points)": 100 * std,
        "ours, seeds: fine-tuned dev (%)": pm(entry["downstream"]),
    }


def transfer_table(
    records: Records, rows: Mapping[str, str], paper_rows: Mapping[str, dict]
) -> pd.DataFrame | None:
    """One row per step of `rows` (step -> paper row label): the paper's MNLI-m dev
    accuracy (confirmed) and SST-2 dev accuracy (≈; none for Table 8's PKT); our seed-0
    run's held-out MLM accuracy with its sampling error, perplexity, NSP accuracy, student
    updates and fine-tuned dev metric (when the finetune step has the row); and, when the
    optional distill_seeds step ran, MLM accuracy and fine-tuned dev metric over its
    pre-training seeds (mean ± std).
    None when no step of `rows` has run."""
    if not any(step in records for step in rows):
        return None
    finetune = result(records, "finetune")
    seeds = (result(records, "distill_seeds") or {}).get("rows", {})
    out = []
    for step, label in rows.items():
        cells = paper_rows.get(label)
        r = result(records, step)
        metrics = (r or {}).get("eval") or {}
        out.append(
            {
                "row": label,
                "step": step,
                "ours": "not run" if r is None else "done",
                "paper MNLI-m dev (%)": cells[paper.CONFIRMED_TASK].value if cells else math.nan,
                "paper SST-2 dev (≈, %)": (
                    cells["SST-2"].value if cells and "SST-2" in cells else math.nan
                ),
                "ours: held-out MLM acc (%)": 100 * metrics.get("mlm_accuracy", math.nan),
                "± s.e. (points)": 100
                * standard_error(
                    metrics.get("mlm_accuracy", math.nan), metrics.get("predictions", math.nan)
                ),
                "perplexity": metrics.get("perplexity", math.nan),
                "NSP acc (%)": 100 * metrics.get("nsp_accuracy", math.nan),
                "student updates": str((r or {}).get("train_steps", "—")),
                "ours: fine-tuned dev (%)": _sst2_cell(finetune, step),
                **_seed_cells(seeds.get(step)),
            }
        )
    return pd.DataFrame(out)


def table8(records: Records) -> pd.DataFrame | None:
    return transfer_table(records, TABLE8_ROWS, paper.TABLE8)


def table9(records: Records) -> pd.DataFrame | None:
    return transfer_table(records, TABLE9_ROWS, paper.TABLE9)


def ranking(
    frame: pd.DataFrame, column: str = "ours: held-out MLM acc (%)", decimals: int = 2
) -> str:
    """Rows with a number in `column`, best first, ties at `decimals` shown as "=":
    "PKT > JKT = AKT"."""
    scored = frame[frame[column].notna()].sort_values(column, ascending=False, kind="stable")
    text, previous = "", None
    for label, value in zip(scored["row"], scored[column].round(decimals)):
        text += ("" if previous is None else " = " if value == previous else " > ") + label
        previous = value
    return text


def _paper_text(ref: tuple[str, paper.PaperValue]) -> str:
    label, value = ref
    return f"{'≈' if value.approx else ''}{value.value:g} ({label})"


def sst2_table(records: Records) -> pd.DataFrame | None:
    """The finetune step's models: encoder params, dev metric mean ± std over seeds (%),
    per seed, fine-tuning seconds per run, and the paper's SST-2 number where it has one
    (only when the task is SST-2)."""
    finetune = result(records, "finetune")
    if finetune is None:
        return None
    order = [m for m in SST2_MODELS if m in finetune["models"]]
    order += [m for m in finetune["models"] if m not in order]
    rows = []
    for step in order:
        entry = finetune["models"][step]
        label, ref = SST2_MODELS.get(step, (step, None))
        row = {
            "model": label,
            "step": step,
            "encoder params": "—",
            "dev (%), mean ± std": "not run",
            "seeds": math.nan,
            "per seed (%)": "",
            "fine-tuning s/run": math.nan,
            "paper (%)": _paper_text(ref) if ref and finetune["task"] == "sst2" else "—",
        }
        if entry.get("status") == "done":
            row.update(
                {
                    "encoder params": f"{int(entry['params']):,}",
                    "dev (%), mean ± std": pm(entry["values"]),
                    "seeds": len(entry["values"]),
                    "per seed (%)": ", ".join(f"{100 * v:.1f}" for v in entry["values"]),
                    "fine-tuning s/run": float(np.mean(entry["train_seconds"])),
                }
            )
        rows.append(row)
    return pd.DataFrame(rows)
