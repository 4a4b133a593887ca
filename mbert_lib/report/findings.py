"""The paper's findings in Tables 8 and 9, checked on our rows over pre-training seeds.

    Table 8   PKT > JKT > AKT             PKT − JKT > 0 and JKT − AKT > 0
    Table 9   PD helps                    +PD − (its row above) > 0
              FMT contributes most        FMT's gain − PD's > 0 and FMT's gain − AT's > 0
              AT helps                    +PD+FMT+AT − +PD+FMT > 0

Each comparison is a linear combination of row means (`mbert_lib.seed_contrast`),
on held-out MLM accuracy and on the fine-tuned dev accuracy of the
distill_seeds step (one fine-tuning run per pre-training seed). A finding is
"reproduced" on a metric when every one of its comparisons is more than twice
its standard error above zero. Our +PD row's row above is `ablation_copy`
(the no-transfer student with the teacher's embedding and MLM head, which +PD
also has), so each gain is that of one change; the paper's column compares
its own rows (+PD against no transfer), in MNLI-m dev points.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from mbert_lib import paper
from mbert_lib.seed_contrast import contrast, verdict

# finding -> [(comparison, our coefficients per step, the paper's per (table, row))]
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
    (points, mean over seeds), its standard error and verdict, and the finding's verdict.
    `seed_rows`: the distill_seeds step's result["rows"]. None without it."""
    if not seed_rows:
        return None
    out = []
    for finding, comparisons in FINDINGS.items():
        rows = []
        for name, ours, theirs in comparisons:
            row = {
                "finding": finding,
                "comparison": name,
                "paper MNLI-m (points)": _paper_points(theirs),
            }
            for metric, values_of in METRICS.items():
                if not all(step in seed_rows for step in ours):
                    row.update(
                        {
                            f"{metric}: ours (points)": float("nan"),
                            f"{metric}: s.e.": float("nan"),
                            f"{metric}: verdict": "row not run",
                        }
                    )
                    continue
                values = {step: [100 * v for v in values_of(seed_rows[step])] for step in ours}
                d, se = contrast(ours, values)
                row.update(
                    {
                        f"{metric}: ours (points)": d,
                        f"{metric}: s.e.": se,
                        f"{metric}: verdict": verdict(d, se),
                    }
                )
            rows.append(row)
        for metric in METRICS:
            reproduced = all(r[f"{metric}: verdict"] == "shown" for r in rows)
            for r in rows:
                r[f"{metric}: finding"] = "reproduced" if reproduced else "not reproduced"
        out += rows
    return pd.DataFrame(out)
