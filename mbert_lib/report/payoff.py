"""REPORT.md's first section: does distillation pay off? Read from the payoff step's record.

Every "A beats B" here is `mbert_lib.paired.paired_difference` over the same seeds: the
verdict word (beats / level / behind) is the 95 % confidence interval's, never a reading
of two means.
"""

from __future__ import annotations

from collections.abc import Mapping

from mbert_lib.report.markdown import not_run, table
from mbert_lib.step_records import Records, result
from mbert_lib.tables import payoff as payoff_tables

FIGURES = {"label_budget": "report_label_budget.png", "attention": "report_attention_recipe.png"}


def gate_text(gate: Mapping, teacher: Mapping) -> str:
    """The teacher gate's sentence, with where the teacher came from."""
    source = teacher.get("source", "trained")
    about = (
        f"the shipped teacher ({teacher['shipped']['train_steps']:,} pre-training steps, "
        f"{teacher['shipped']['wall_seconds'] / 3600:.1f} h on {teacher['shipped']['hardware']})"
        if source == "shipped"
        else f"a teacher pre-trained in this run ({teacher.get('train_steps')} steps)"
    )
    return f"Teacher: {about}. Gate: {gate['text']}."


MLM_NAMES = {"pkt": "pkt", "ablation_copy": "copy_only", "no_transfer": "no_transfer"}


def partial_section(records: Records) -> str:
    """What a run without a finished payoff step already shows: the gate, held-out MLM
    over seeds and the attention through the recipe, from their own steps' records."""
    gate, mlm, transfer = (result(records, s) for s in ("teacher_gate", "mlm_seeds", "transfer"))
    rows = {r: result(records, r) for r in MLM_NAMES}
    if gate is None or (mlm is None and None in rows.values()):
        return not_run("payoff")
    partial = {
        "mlm": (
            {MLM_NAMES[r]: e["mlm_accuracy"]["values"] for r, e in mlm["rows"].items()}
            if mlm
            else {MLM_NAMES[r]: [e["eval"]["mlm_accuracy"]] for r, e in rows.items()}
        ),
        "attention": [
            {"layer": row["layer"], **row["js"]} for row in (transfer or {}).get("attention", [])
        ],
    }
    parts = [gate_text(gate, result(records, "teacher")), *_mlm_parts(partial["mlm"], None)]
    if partial["attention"]:
        parts += [
            "**Attention through the recipe** (`transfer`): each student layer's "
            "Jensen-Shannon distance to its teacher layer's attention (nats, at most "
            "ln 2 = 0.693), on one held-out batch:",
            table(payoff_tables.attention_table(partial), index=True, decimals=5),
        ]
    distill = result(records, "task_distillation")
    if distill is not None:
        parts += _distill_parts({"task_distillation": distill})
    missing = [s for s in ("task_distillation", "transfer") if result(records, s) is None]
    parts.append(
        f"_Not finished in this run: {', '.join(f'`{s}`' for s in [*missing, 'payoff'])}._"
    )
    return "\n\n".join(parts)


def _mlm_parts(mlm: Mapping, updates) -> list[str]:
    """The held-out MLM table, and its paired comparisons when there are seeds to pair."""
    after = f" after the same {updates} updates" if updates else ""
    if min(len(v) for v in mlm.values()) < 2:
        return [
            f"**Held-out MLM accuracy** of the students{after}, pre-training seed 0 (the "
            "optional `mlm_seeds` step adds seeds 1 and 2, and the paired comparisons):",
            table(payoff_tables.mlm_table({"mlm": mlm})),
        ]
    return [
        f"**Held-out MLM accuracy** of the students{after}, over their pre-training seeds "
        "(`mlm_seeds`), and each pair compared seed by seed:",
        table(payoff_tables.mlm_table({"mlm": mlm})),
        table(payoff_tables.comparisons(mlm, payoff_tables.MLM_PAIRS)),
    ]


def _distill_parts(payoff: Mapping) -> list[str]:
    distill = payoff["task_distillation"]
    return [
        f"**Output distillation** (`task_distillation`): the PKT student with "
        f"{distill['labels']:,} labels, alone or with the fine-tuned teacher's targets on "
        f"the other training sentences (soft: τ = {distill['temperature']:g}; hard: its "
        "argmax), the same steps and seeds:",
        table(payoff_tables.task_distillation_table(payoff)),
        table(payoff_tables.comparisons(distill, payoff_tables.DISTILL_PAIRS)),
    ]


def payoff_section(records: Records, figures: Mapping[str, str | None]) -> str:
    payoff = result(records, "payoff")
    if payoff is None:
        return partial_section(records)
    parts = [gate_text(result(records, "teacher_gate"), result(records, "teacher"))]
    updates = (result(records, "pkt") or {}).get("train_steps")
    parts += _mlm_parts(payoff["mlm"], updates)
    if payoff["label_budget"]:
        parts += [
            "**SST-2 with few labels** (`label_budget`): every model fine-tuned on the same N "
            "training sentences per seed for the same number of steps, dev accuracy (%) at "
            "the end; each comparison paired by seed, in points with its 95 % CI and verdict:",
            table(payoff_tables.label_budget_table(payoff)),
        ]
        budgets = [result(records, s) or {} for s in ("label_budget", "label_budget_all")]
        opens = next((b["opens_at"] for b in budgets if b.get("opens_at")), None)
        parts.append(
            f"Teacher > PKT > no transfer (each beating the next) first holds at {opens} labels."
            if opens
            else "Teacher > PKT > no transfer (each beating the next) holds at no budget measured."
        )
        if figures.get("label_budget"):
            parts.append(f"![label budget]({figures['label_budget']})")
    else:
        parts.append(
            "_SST-2 with few labels: the optional `label_budget` step has not run "
            "(`--steps label_budget,payoff,report`)._"
        )
    parts += _distill_parts(payoff)
    parts += [
        "**Attention through the recipe** (`transfer`): each student layer's Jensen-Shannon "
        "distance to its teacher layer's attention (nats, at most ln 2 = 0.693), on one "
        "held-out batch:",
        table(payoff_tables.attention_table(payoff), index=True, decimals=3),
    ]
    if figures.get("attention"):
        parts.append(f"![attention through the recipe]({figures['attention']})")
    return "\n\n".join(parts)
