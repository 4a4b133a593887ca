"""Tables of a fine-tuning comparison: mean ± std, missing models, the aim, the mistakes."""

import json
import math

import numpy as np
import pytest

from mbert_lib.data.glue import GlueExample
from mbert_lib.finetune import report
from mbert_lib.paper import PaperValue
from mbert_lib.train.shipped_teacher import INSTALLED_RECORD


def entry(values, params=1000):
    mean = float(np.mean(values))
    std = float(np.std(values, ddof=1)) if len(values) > 1 else math.nan
    return {
        "status": "done",
        "metric": "accuracy",
        "values": values,
        "mean": mean,
        "std": std,
        "params": params,
        "train_seconds": [10.0] * len(values),
    }


RESULT = {
    "task": "sst2",
    "source": "local",
    "models": {
        "teacher": entry([0.80, 0.82, 0.81], 2_000_000),
        "pkt": {"status": "missing", "reason": "no finished step 'pkt'"},
        "no_transfer": entry([0.70, 0.72, 0.74]),
    },
}


def test_results_table_rows_missing_models_and_the_paper():
    table = report.results_table(
        RESULT, {"teacher": "Teacher"}, [("paper", 92.8), ("recalled", PaperValue(92.5, "%", True))]
    )
    assert list(table["step"]) == ["teacher", "pkt", "no_transfer", "paper", "paper"]
    column = "dev accuracy (mean ± std)"
    assert list(table[column]) == [
        "81.0 ± 1.0",
        "no result: the step has not run",
        "72.0 ± 2.0",
        "92.8",
        "≈92.5",
    ]
    assert table.loc[0, "model"] == "Teacher" and table.loc[0, "encoder params"] == "2,000,000"
    assert table.loc[2, "per seed"] == "70.0, 72.0, 74.0" and table.loc[0, "seeds"] == 3
    assert table.loc[3, "seeds"] == "" and table.loc[3, "encoder params"] == ""
    assert report.mean_std_text(0.5, math.nan) == "50.0"
    assert report.mean_std_text(0.5, None) == "50.0"  # a record's null


def test_aim_is_the_order_teacher_student_baseline_each_beating_the_next_over_paired_seeds():
    assert report.aim_check(RESULT)["status"] == "cannot check"
    # teacher 80/82/81, pkt 76/77/78: seed by seed 4, 5, 3 points (mean 4, s.e. 1/sqrt(3))
    ordered = {**RESULT, "models": {**RESULT["models"], "pkt": entry([0.76, 0.77, 0.78])}}
    aim = report.aim_check(ordered)
    assert aim["status"] == "met", aim["text"]
    top, bottom = aim["gaps"]["teacher − pkt"], aim["gaps"]["pkt − no_transfer"]
    assert top["mean"] == pytest.approx(4.0) and top["se"] == pytest.approx(1 / math.sqrt(3))
    assert top["low"] == pytest.approx(4.0 - 4.303 / math.sqrt(3), abs=1e-3)
    assert bottom["mean"] == pytest.approx(5.0) and bottom["verdict"] == "beats"
    assert aim["gap_to_teacher"] == pytest.approx(0.04)
    # 1 point below the teacher, seed by seed 1, 2, 0: the interval holds zero
    close = {**RESULT, "models": {**RESULT["models"], "pkt": entry([0.79, 0.80, 0.81])}}
    aim = report.aim_check(close)
    assert aim["status"] == "not met" and aim["gaps"]["teacher − pkt"]["verdict"] == "level"
    above = {**RESULT, "models": {**RESULT["models"], "pkt": entry([0.89, 0.90, 0.91])}}
    aim = report.aim_check(above)
    assert aim["status"] == "not met" and aim["gaps"]["teacher − pkt"]["verdict"] == "behind"
    assert "teacher − pkt = -9.0 [" in aim["text"] and "NOT met" in aim["text"]
    one_seed = {**RESULT, "models": {**RESULT["models"], "pkt": entry([0.77])}}
    assert report.aim_check(one_seed)["status"] == "cannot check"


def test_misclassified_lists_the_most_confident_mistakes_first():
    examples = [GlueExample(f"s{i}", None, 0) for i in range(4)]
    labels = np.array([0, 1, 1, 0])
    probs = np.array([[0.9, 0.1], [0.6, 0.4], [0.95, 0.05], [0.3, 0.7]])
    table = report.misclassified(examples, labels, probs, ("neg", "pos"), limit=2)
    assert list(table["sentence"]) == ["s2", "s3"]
    assert list(table["P(true label)"]) == [0.05, 0.3]
    assert list(table["true label"]) == ["pos", "neg"] and list(table["predicted"]) == [
        "neg",
        "pos",
    ]


def test_length_buckets_and_error_rates():
    groups, order = report.length_buckets(np.array([3, 16, 17, 64, 65]), 64)
    assert groups == ["<= 16 tokens", "<= 16 tokens", "17-32", "33-64", "> 64 (truncated)"]
    table = report.error_rates(np.array([True, False, True, True, False]), groups, order)
    assert list(table.index) == ["<= 16 tokens", "17-32", "33-64", "> 64 (truncated)"]
    assert table.loc["<= 16 tokens", "error rate"] == 0.5
    assert table.loc["> 64 (truncated)", "errors"] == 1


def test_pretraining_summary_reads_batch_and_length_from_the_model_directory(tmp_path):
    records = {}
    for step, steps, batch in (("pkt", 600, 32), ("no_transfer", 2000, 16)):
        model_dir = tmp_path / step
        model_dir.mkdir()
        (model_dir / "experiment.yaml").write_text(
            f"trainer:\n  batch_size: {batch}\ndata:\n  seq_length: 128\n"
        )
        records[step] = {
            "seconds": 61.4,
            "result": {
                "model_dir": str(model_dir),
                "train_steps": steps,
                "eval": {"mlm_accuracy": 0.25, "nsp_accuracy": 0.75},
            },
        }
    table = report.pretraining_summary(records)
    assert table.loc["pkt", "sequences"] == 600 * 32
    assert table.loc["no_transfer", "sequences"] == 2000 * 16
    assert table.loc["pkt", "wall s"] == 61 and table.loc["pkt", "held-out MLM acc"] == 0.25
    (tmp_path / "pkt" / "experiment.yaml").write_text("trainer: {}\n")
    with pytest.raises(ValueError, match="pkt.*trainer.batch_size"):
        report.pretraining_summary(records)


def test_pretraining_summary_reads_an_installed_shipped_teacher_from_its_record(tmp_path):
    """An installed teacher has no experiment.yaml: its batch, length and training time are
    those of the record installed beside its weights, not the installation's seconds."""
    model_dir = tmp_path / "teacher"
    model_dir.mkdir()
    record = {"experiment": {"trainer": {"batch_size": 32}, "data": {"seq_length": 128}}}
    (model_dir / INSTALLED_RECORD).write_text(json.dumps(record))
    records = {
        "teacher": {
            "seconds": 17.6,
            "result": {
                "model_dir": str(model_dir),
                "train_steps": 15000,
                "eval": {"mlm_accuracy": 0.19},
                "source": "shipped",
                "shipped": {"wall_seconds": 11791.2},
            },
        }
    }
    table = report.pretraining_summary(records)
    assert table.loc["teacher", "sequences"] == 15000 * 32
    assert table.loc["teacher", "seq_length"] == 128 and table.loc["teacher", "wall s"] == 11791
    (model_dir / INSTALLED_RECORD).write_text(json.dumps({"experiment": {"trainer": {}}}))
    with pytest.raises(ValueError, match="shipped_teacher.json.*teacher"):
        report.pretraining_summary(records)


def test_agreement_counts_shared_errors_against_the_reference():
    labels = np.array([0, 1, 1, 0, 1, 0])
    predicted = {
        "teacher": np.array([0, 1, 0, 1, 1, 0]),  # wrong on 2, 3
        "pkt": np.array([0, 1, 0, 1, 0, 0]),  # wrong on 2, 3, 4
        "scratch": np.array([1, 0, 1, 0, 1, 0]),
    }  # wrong on 0, 1
    table = report.agreement(predicted, labels, "teacher")
    assert table.loc["teacher", "accuracy"] == pytest.approx(4 / 6, abs=1e-3)
    assert table.loc["pkt", "agrees with teacher"] == pytest.approx(5 / 6, abs=1e-3)
    assert table.loc["pkt", "errors"] == 3
    assert table.loc["pkt", "errors teacher also makes"] == pytest.approx(2 / 3, abs=1e-3)
    assert table.loc["scratch", "errors teacher also makes"] == 0.0
    assert table.loc["scratch", "agrees with teacher"] == pytest.approx(2 / 6, abs=1e-3)
    with pytest.raises(ValueError, match="'pkt'.*one per dev example"):
        report.agreement({**predicted, "pkt": np.zeros(5)}, labels, "teacher")
