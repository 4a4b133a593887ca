"""The fine-tuning comparison beside the paper's SST-2 numbers, from a run's step records
(`mbert_lib.step_records`): every model the finetune step fine-tuned, its dev metric over
seeds. Accuracies are in %.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from mbert_lib import paper
from mbert_lib.finetune.search import mean_std
from mbert_lib.step_records import Records, result

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


def sst2_cell(finetune: dict | None, step: str) -> str:
    """ "mean ± std (n=k)" of the step's fine-tuned dev metric, or why there is none."""
    if finetune is None:
        return "finetune not run"
    entry = finetune["models"].get(step)
    if entry is None:
        return "not fine-tuned (not in the finetune settings)"
    if entry.get("status") != "done":
        return "not run"
    return pm(entry["values"]) + f" (n={len(entry['values'])})"


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
