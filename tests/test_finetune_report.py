"""Tables of a fine-tuning comparison: mean ± std, missing models, the aim, the mistakes."""

import math

import numpy as np
import pytest

from mbert_lib.data.glue import GlueExample
from mbert_lib.finetune import report


def entry(values, params=1000):
    mean = float(np.mean(values))
    std = float(np.std(values, ddof=1)) if len(values) > 1 else math.nan
    return {"status": "done", "metric": "accuracy", "values": values, "mean": mean, "std": std,
            "params": params, "train_seconds": [10.0] * len(values)}


RESULT = {"task": "sst2", "source": "local", "models": {
    "teacher": entry([0.80, 0.82, 0.81], 2_000_000),
    "pkt": {"status": "missing", "reason": "no finished step 'pkt'"},
    "student_scratch": entry([0.70, 0.72, 0.74])}}


def test_results_table_rows_missing_models_and_the_paper():
    table = report.results_table(RESULT, {"teacher": "Teacher"}, [("paper", 92.8)])
    assert list(table["step"]) == ["teacher", "pkt", "student_scratch", "paper"]
    column = "dev accuracy (mean ± std)"
    assert list(table[column]) == ["81.0 ± 1.0", "no result: the step has not run",
                                   "72.0 ± 2.0", "92.8"]
    assert table.loc[0, "model"] == "Teacher" and table.loc[0, "encoder params"] == "2,000,000"
    assert table.loc[2, "per seed"] == "70.0, 72.0, 74.0" and table.loc[0, "seeds"] == 3
    assert report.mean_std_text(0.5, math.nan) == "50.0"


def test_aim_needs_all_three_models_and_checks_both_conditions():
    assert report.aim_check(RESULT)["status"] == "cannot check"
    close = {**RESULT, "models": {**RESULT["models"], "pkt": entry([0.795, 0.80, 0.805])}}
    aim = report.aim_check(close)
    assert aim["status"] == "met" and aim["gap_to_teacher"] == pytest.approx(0.01)
    far = {**RESULT, "models": {**RESULT["models"], "pkt": entry([0.77, 0.78, 0.79])}}
    assert report.aim_check(far)["status"] == "not met"          # 3 points below the teacher
    below = {**RESULT, "models": {**RESULT["models"], "pkt": entry([0.80]),
                                  "student_scratch": entry([0.85])}}
    assert report.aim_check(below)["status"] == "not met"        # not above no-transfer


def test_misclassified_lists_the_most_confident_mistakes_first():
    examples = [GlueExample(f"s{i}", None, 0) for i in range(4)]
    labels = np.array([0, 1, 1, 0])
    probs = np.array([[0.9, 0.1], [0.6, 0.4], [0.95, 0.05], [0.3, 0.7]])
    table = report.misclassified(examples, labels, probs, ("neg", "pos"), limit=2)
    assert list(table["sentence"]) == ["s2", "s3"]
    assert list(table["P(true label)"]) == [0.05, 0.3]
    assert list(table["true label"]) == ["pos", "neg"] and list(table["predicted"]) == ["neg",
                                                                                       "pos"]


def test_length_buckets_and_error_rates():
    groups, order = report.length_buckets(np.array([3, 16, 17, 64, 65]), 64)
    assert groups == ["<= 16 tokens", "<= 16 tokens", "17-32", "33-64", "> 64 (truncated)"]
    table = report.error_rates(np.array([True, False, True, True, False]), groups, order)
    assert list(table.index) == ["<= 16 tokens", "17-32", "33-64", "> 64 (truncated)"]
    assert table.loc["<= 16 tokens", "error rate"] == 0.5
    assert table.loc["> 64 (truncated)", "errors"] == 1
