"""Does distillation pay off? Tables of a run's payoff.json, every comparison paired by seed.

`payoff` is what the pipeline's payoff step writes (<out>/payoff.json, results/payoff.json
for the published laptop run): per-seed lists in one seed order, accuracies as fractions.
Tables show percentages; each "A − B" row is `mbert_lib.paired.paired_difference` of the
two lists, in points, with its 95 % confidence interval and verdict.

    mlm_table                 held-out MLM accuracy of PKT, copy-only and no transfer
    label_budget_table        SST-2 dev accuracy per label budget and model
    task_distillation_table   labels alone, + soft targets, + hard targets, the teacher
    attention_table           each layer's attention distance to the teacher, through the recipe
    comparisons               the paired rows for any lists
    paired_records            every comparison above as PairedDifference dicts (points)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from mbert_lib.paired import paired_difference

NAMES = {
    "teacher": "IB-BERT teacher",
    "pkt": "PKT student",
    "copy_only": "copy-only student",
    "ablation_copy": "copy-only student",
    "no_transfer": "no-transfer student",
    "labels_only": "labels alone",
    "soft_labels": "+ soft targets",
    "pseudo_labels": "+ hard targets (pseudo-labels)",
}
MLM_PAIRS = (("pkt", "copy_only"), ("copy_only", "no_transfer"), ("pkt", "no_transfer"))
BUDGET_PAIRS = (
    ("teacher", "pkt"),
    ("pkt", "copy_only"),
    ("pkt", "no_transfer"),
    ("copy_only", "no_transfer"),
)
DISTILL_PAIRS = (
    ("soft_labels", "labels_only"),
    ("pseudo_labels", "labels_only"),
    ("soft_labels", "pseudo_labels"),
    ("teacher", "soft_labels"),
)


def mean_std(values: Sequence[float], scale: float = 100.0) -> str:
    """ "81.2 ± 0.4" over the values (× scale); one value alone has no ±."""
    x = scale * np.asarray(values, np.float64)
    return f"{x.mean():.1f}" if len(x) < 2 else f"{x.mean():.1f} ± {x.std(ddof=1):.1f}"


def comparisons(
    values: Mapping[str, Sequence[float]], pairs, scale: float = 100.0, digits: int = 2
) -> pd.DataFrame:
    """One row per pair (a, b) present in `values`: a − b over the seeds both have, in
    points (× scale): mean, s.e. and 95 % CI (as text, `digits` decimals), verdict, n."""
    rows = []
    for a, b in pairs:
        if a not in values or b not in values:
            continue
        n = min(len(values[a]), len(values[b]))
        if n < 2:
            continue
        d = paired_difference(
            [scale * v for v in values[a][:n]], [scale * v for v in values[b][:n]]
        )
        rows.append(
            {
                "comparison": f"{NAMES.get(a, a)} − {NAMES.get(b, b)}",
                "difference (points)": f"{d.mean:+.{digits}f}",
                "s.e.": f"{d.se:.{digits}f}",
                "95% CI": f"[{d.low:+.{digits}f}, {d.high:+.{digits}f}]",
                "verdict": d.verdict,
                "seeds": d.n,
            }
        )
    return pd.DataFrame(rows)


def _paired(values: Mapping[str, Sequence[float]], pairs) -> dict:
    """{"a-b": PairedDifference dict in points} for each pair both lists have (n >= 2)."""
    out = {}
    for a, b in pairs:
        if a in values and b in values and min(len(values[a]), len(values[b])) >= 2:
            n = min(len(values[a]), len(values[b]))
            d = paired_difference(
                [100 * v for v in values[a][:n]], [100 * v for v in values[b][:n]]
            )
            out[f"{a}-{b}"] = d.to_dict()
    return out


def paired_records(payoff: Mapping) -> dict:
    """Every comparison the tables show, as records (points): what README and the docs
    quote. {"mlm": {"pkt-copy_only": {...}}, "label_budget": {"500": {...}},
    "task_distillation": {...}}."""
    return {
        "mlm": _paired(payoff["mlm"], MLM_PAIRS),
        "label_budget": {
            budget: _paired(models, BUDGET_PAIRS)
            for budget, models in payoff["label_budget"].items()
        },
        "task_distillation": _paired(payoff["task_distillation"], DISTILL_PAIRS),
    }


def mlm_table(payoff: Mapping) -> pd.DataFrame:
    """Held-out MLM accuracy (%) per student over its pre-training seeds."""
    mlm = payoff["mlm"]
    return pd.DataFrame(
        [
            {
                "student": NAMES[name],
                "held-out MLM accuracy (%)": mean_std(values),
                "per seed": ", ".join(f"{100 * v:.2f}" for v in values),
            }
            for name, values in mlm.items()
        ]
    )


def label_budget_table(payoff: Mapping) -> pd.DataFrame:
    """SST-2 dev accuracy (%, mean ± std over the budget's seeds) per label budget and
    model, and each paired comparison's verdict."""
    rows = []
    for budget, models in payoff["label_budget"].items():
        row = {"labels": budget, "seeds": len(next(iter(models.values())))}
        row.update({NAMES.get(m, m): mean_std(v) for m, v in models.items()})
        for a, b in BUDGET_PAIRS:
            found = comparisons(models, [(a, b)], digits=1)
            if len(found):
                r = found.iloc[0]
                row[f"{a} − {b}"] = f"{r['difference (points)']} {r['95% CI']} {r['verdict']}"
        rows.append(row)
    return pd.DataFrame(rows)


def task_distillation_table(payoff: Mapping) -> pd.DataFrame:
    """SST-2 dev accuracy (%) of the student with N labels alone and with the teacher's
    targets on the other training sentences, beside the teacher's."""
    distill = payoff["task_distillation"]

    def row(name: str) -> dict:
        values = distill[name]
        if name == "teacher" and len(set(values)) == 1:  # fine-tuned once, listed per seed
            return {
                "model": NAMES[name],
                "dev accuracy (%)": f"{100 * values[0]:.1f}",
                "per seed": "one fine-tuning run, the same for every seed",
            }
        return {
            "model": NAMES[name],
            "dev accuracy (%)": mean_std(values),
            "per seed": ", ".join(f"{100 * v:.1f}" for v in values),
        }

    return pd.DataFrame(
        [row(name) for name in ("teacher", "labels_only", "soft_labels", "pseudo_labels")]
    )


ATTENTION_POINTS = ("untrained", "before", "after_stage", "final", "final_without_at")


def attention_table(payoff: Mapping) -> pd.DataFrame:
    """Per student layer, the Jensen-Shannon distance of its attention to the teacher's
    (nats, at most ln 2 = 0.693) at each point of the recipe."""
    return pd.DataFrame(
        [
            {"layer": row["layer"], **{point: row[point] for point in ATTENTION_POINTS}}
            for row in payoff["attention"]
        ]
    ).set_index("layer")
