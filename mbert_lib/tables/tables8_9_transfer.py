"""Tables 8 and 9 (knowledge-transfer strategies and ablations) beside the paper's, from a
run's step records (`mbert_lib.step_records`), and the paper's findings checked on our
rows over pre-training seeds. Accuracies are in %.

    Table 8   PKT > JKT > AKT             PKT − JKT > 0 and JKT − AKT > 0
    Table 9   PD helps                    +PD − (its row above) > 0
              FMT contributes most        FMT's gain − PD's > 0 and FMT's gain − AT's > 0
              AT helps                    +PD+FMT+AT − +PD+FMT > 0

Each comparison is a linear combination of rows paired seed by seed
(`mbert_lib.paired`: pre-training seed i of every row), on held-out MLM accuracy and on
the fine-tuned dev accuracy of the distill_seeds step (one fine-tuning run per
pre-training seed). A finding is "reproduced" on a metric when every one of its
comparisons "beats" zero: its 95 % confidence interval lies above it. Our +PD row's row
above is `ablation_copy` (the no-transfer student with the teacher's embedding and MLM
head, which +PD also has), so each gain is that of one change; the paper's column
compares its own rows (+PD against no transfer), in MNLI-m dev points.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from mbert_lib import paper
from mbert_lib.finetune.search import mean_std
from mbert_lib.paired import paired_contrast
from mbert_lib.step_records import Records, result
from mbert_lib.tables.sst2_finetuning import pm, sst2_cell

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


def standard_error(p: float, n: float) -> float:
    """Sampling error of an accuracy p measured on n predictions, sqrt(p (1 - p) / n)."""
    return math.sqrt(p * (1 - p) / n) if n and n > 0 else math.nan


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
                "ours: fine-tuned dev (%)": sst2_cell(finetune, step),
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


# finding -> [(comparison, our coefficients per step, the paper's per (table, row))]
# A finding is reproduced when each of its comparisons beats zero; SHOWN_BESIDE holds
# comparisons printed next to a finding that do not decide it.
FINDINGS = {
    "PKT > JKT > AKT (Table 8)": [
        ("PKT − JKT", {"pkt": 1, "jkt": -1}, {("8", "PKT"): 1, ("8", "JKT"): -1}),
        ("JKT − AKT", {"jkt": 1, "akt": -1}, {("8", "JKT"): 1, ("8", "AKT"): -1}),
    ],
    "PD helps (Table 9)": [
        (
            "+PD − the row above",
            {"ablation_pd": 1, "ablation_copy": -1},
            {("9", "+PD"): 1, ("9", "no transfer"): -1},
        )
    ],
    "FMT contributes most (Table 9)": [
        (
            "FMT's gain − PD's",
            {"ablation_pd_fmt": 1, "ablation_pd": -2, "ablation_copy": 1},
            {("9", "+PD+FMT"): 1, ("9", "+PD"): -2, ("9", "no transfer"): 1},
        ),
        (
            "FMT's gain − AT's",
            {"ablation_pd_fmt": 2, "ablation_pd": -1, "pkt": -1},
            {("9", "+PD+FMT"): 2, ("9", "+PD"): -1, ("9", "+PD+FMT+AT"): -1},
        ),
    ],
    "AT helps (Table 9)": [
        (
            "+PD+FMT+AT − +PD+FMT",
            {"pkt": 1, "ablation_pd_fmt": -1},
            {("9", "+PD+FMT+AT"): 1, ("9", "+PD+FMT"): -1},
        )
    ],
}
SHOWN_BESIDE = {
    "PD helps (Table 9)": [
        (
            "+PD − no transfer (the paper's pairing; copy and PD together)",
            {"ablation_pd": 1, "no_transfer": -1},
            {("9", "+PD"): 1, ("9", "no transfer"): -1},
        )
    ],
}
METRICS = {
    "held-out MLM acc": lambda entry: entry["mlm_accuracy"]["values"],
    "fine-tuned dev acc": lambda entry: entry["downstream"],
}


def _paper_points(coefficients: Mapping[tuple[str, str], float]) -> float:
    tables = {"8": paper.TABLE8, "9": paper.TABLE9}
    return sum(
        c * tables[t][row][paper.CONFIRMED_TASK].value for (t, row), c in coefficients.items()
    )


def findings_table(seed_rows: Mapping[str, dict]) -> pd.DataFrame | None:
    """One row per comparison: the paper's difference (MNLI-m points), and per metric ours
    (points, mean of the paired differences over seeds), its standard error, 95 % CI and
    verdict (beats / level / behind, `mbert_lib.paired`), and the finding's verdict.
    `seed_rows`: the distill_seeds step's result["rows"]. None without it."""
    if not seed_rows:
        return None
    out = []
    for finding, comparisons in FINDINGS.items():
        rows = []
        for name, ours, theirs in comparisons + SHOWN_BESIDE.get(finding, []):
            row = {
                "finding": finding,
                "comparison": name,
                "decides": (name, ours, theirs) in comparisons,
                "paper MNLI-m (points)": _paper_points(theirs),
            }
            for metric, values_of in METRICS.items():
                if not all(step in seed_rows for step in ours):
                    row.update(
                        {
                            f"{metric}: ours (points)": float("nan"),
                            f"{metric}: s.e.": float("nan"),
                            f"{metric}: 95% CI": "—",
                            f"{metric}: verdict": "row not run",
                        }
                    )
                    continue
                values = {step: [100 * v for v in values_of(seed_rows[step])] for step in ours}
                r = paired_contrast(ours, values)
                row.update(
                    {
                        f"{metric}: ours (points)": r.mean,
                        f"{metric}: s.e.": r.se,
                        f"{metric}: 95% CI": f"[{r.low:+.2f}, {r.high:+.2f}]",
                        f"{metric}: verdict": r.verdict,
                    }
                )
            rows.append(row)
        for metric in METRICS:
            reproduced = all(r[f"{metric}: verdict"] == "beats" for r in rows if r["decides"])
            for r in rows:
                r[f"{metric}: finding"] = "reproduced" if reproduced else "not reproduced"
        out += rows
    return pd.DataFrame(out)
