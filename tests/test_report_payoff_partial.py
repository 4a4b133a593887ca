"""REPORT.md's payoff section before the payoff step has run: the gate, held-out MLM over
seeds and the attention through the recipe, read from their own steps' records."""

import numpy as np
from scipy import stats

from mbert_lib.report.payoff import payoff_section

PKT = [0.3326, 0.3301, 0.3334]
COPY = [0.3237, 0.3221, 0.3270]


def _records(with_mlm=True):
    rows = {"pkt": PKT, "ablation_copy": COPY, "no_transfer": [0.083, 0.082, 0.076]}
    records = {
        "teacher": {"result": {"source": "trained", "train_steps": 100}},
        "teacher_gate": {"result": {"text": "the teacher beats the untaught student"}},
        "transfer": {
            "result": {
                "attention": [
                    {
                        "layer": 0,
                        "js": {
                            "before": 0.2,
                            "after_stage": 0.03,
                            "final": 0.02,
                            "untrained": 0.2,
                            "final_without_at": 0.1,
                        },
                    }
                ]
            }
        },
    }
    if with_mlm:
        records["mlm_seeds"] = {
            "result": {"rows": {r: {"mlm_accuracy": {"values": v}} for r, v in rows.items()}}
        }
    return records


def test_without_payoff_the_section_shows_the_paired_mlm_gap_from_mlm_seeds():
    text = payoff_section(_records(), figures={})
    d = 100 * (np.array(PKT) - np.array(COPY))
    low, high = stats.ttest_rel(100 * np.array(PKT), 100 * np.array(COPY)).confidence_interval()
    row = next(line for line in text.splitlines() if line.startswith("| PKT student − copy"))
    assert f"{d.mean():+.2f}" in row and f"[{low:+.2f}, {high:+.2f}]" in row and "beats" in row
    assert "the teacher beats the untaught student" in text
    assert "| 0 | 0.2 | 0.2 | 0.03 | 0.02 | 0.1 |" in text
    assert "Not finished in this run: `task_distillation`, `payoff`" in text


def test_a_finished_task_distillation_shows_before_the_payoff_step():
    """Its rows and its paired gains, computed again here with scipy."""
    labels_only, soft = [0.61, 0.58, 0.64], [0.70, 0.71, 0.72]
    records = _records()
    records["task_distillation"] = {
        "result": {
            "labels": 1000,
            "temperature": 2.0,
            "teacher": [0.745] * 3,
            "labels_only": labels_only,
            "soft_labels": soft,
            "pseudo_labels": [0.70, 0.70, 0.71],
        }
    }
    text = payoff_section(records, figures={})
    low, high = stats.ttest_rel(
        100 * np.array(soft), 100 * np.array(labels_only)
    ).confidence_interval()
    row = next(line for line in text.splitlines() if "soft" in line and "−" in line)
    assert f"[{low:+.2f}, {high:+.2f}]" in row and "beats" in row, row
    assert "Not finished in this run: `payoff`" in text
    # the teacher is fine-tuned once and listed per seed: its row shows no spread
    teacher = next(line for line in text.splitlines() if line.startswith("| IB-BERT teacher"))
    assert "| 74.5 |" in teacher and "±" not in teacher and "one fine-tuning run" in teacher
    students = next(line for line in text.splitlines() if line.startswith("| labels alone"))
    assert f"{100 * np.mean(labels_only):.1f} ± {100 * np.std(labels_only, ddof=1):.1f}" in students


def test_without_the_students_seeds_the_section_shows_seed_0_from_the_rows_unpaired():
    records = _records(with_mlm=False)
    assert "not run" in payoff_section(records, figures={})  # no rows yet either
    for row, value in (("pkt", 0.3326), ("ablation_copy", 0.3237), ("no_transfer", 0.083)):
        records[row] = {"result": {"eval": {"mlm_accuracy": value}}}
    text = payoff_section(records, figures={})
    assert "pre-training seed 0 (the optional `mlm_seeds` step adds seeds 1 and 2" in text
    assert "| PKT student | 33.3 | 33.26 |" in text
    assert "− copy" not in text  # one seed: nothing to pair
