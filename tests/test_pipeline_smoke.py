"""`python -m mbert_lib reproduce --recipe smoke` end to end on the offline default data."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from mbert_lib.cli import main
from mbert_lib.pipeline import STEPS, fast_run_dir
from mbert_lib.pipeline.core import read_record
from mbert_lib.report import section_status
from tests.helpers import strict_json_loads

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

SECTIONS = (
    "Does distillation pay off",
    "Machine",
    "Data and seeds",
    "Wall time per step",
    "Table 1: model sizes",
    "Table 8",
    "Table 9",
    "Does each transfer objective",
    "Fine-tuning",
    "Table 6",
    "Table 7",
    "Latency and size ratios",
)


def test_smoke_reproduction_runs_resumes_and_reports(monkeypatch, capsys):
    """Runs in the fast notebooks' shared directory (emptied first): the notebooks that
    pytest runs after the tests then find every smoke step done instead of training it
    again, one notebook at a time."""
    monkeypatch.delenv("MBERT_DATA_DIR", raising=False)
    out = fast_run_dir()
    shutil.rmtree(out, ignore_errors=True)
    assert main(["reproduce", "--recipe", "smoke", "--out", str(out)]) == 0
    first = capsys.readouterr().out
    assert "ran" in first and (out / "teacher" / "model.ckpt.index").exists()
    left_out = [s.name for s in STEPS if s.optional]
    assert not any((out / name).exists() for name in left_out)  # a full run leaves them out
    assert f"optional steps not run: {', '.join(left_out)}" in first
    # without the optional steps, payoff.json holds seed 0's MLM and no label-budget curve
    early = strict_json_loads((out / "payoff.json").read_text())
    assert early["sources"] == {"mlm": "rows (seed 0)", "label_budget": []}
    assert {len(v) for v in early["mlm"].values()} == {1} and early["label_budget"] == {}
    # the notebooks read the optional rows and latency too: added as a reader would add them
    # (distill_seeds has a test of its own; label_budget_all, label_budget's code with the
    # "all" budget, is left out to keep CI short: nothing here runs its "all" row)
    extra = [name for name in left_out if name not in ("distill_seeds", "label_budget_all")]
    steps = ",".join([*extra, "payoff", "report"])
    assert main(["reproduce", "--recipe", "smoke", "--out", str(out), "--steps", steps]) == 0
    assert all(read_record(out / name) is not None for name in extra)
    capsys.readouterr()
    report = (out / "REPORT.md").read_text(encoding="utf-8")
    status = section_status(report)
    for name in SECTIONS:
        assert any(title.startswith(name) for title in status), (name, list(status))
    for name in (
        "Does distillation pay off",
        "Machine",
        "Data and seeds",
        "Wall time per step",
        "Table 8",
        "Table 9",
        "Fine-tuning",
    ):
        assert next(s for t, s in status.items() if t.startswith(name)) == "ok", status
    assert "builtin_shuffled" in report and "NOT SST-2" in report
    _transfer_summary(out)
    _payoff(out)
    _compress(out)
    assert (out / "report" / "report_step_times.png").exists()
    assert (out / "report" / "report_label_budget.png").exists()
    assert main(["reproduce", "--recipe", "smoke", "--out", str(out)]) == 0
    second = capsys.readouterr().out
    summary = second[
        second.rindex("\nstep ") : second.index("optional steps not run:")
    ].splitlines()[2:-1]
    rerun = {s.name for s in STEPS if s.rerun}  # the report and the payoff summary
    assert rerun == {"report", "payoff"}
    assert summary and all(
        ("skipped (done)" in line) != (line.split()[0] in rerun) for line in summary
    ), summary


def _transfer_summary(out):
    """<out>/pkt/transfer.json: strict JSON, one row per student layer, the AT ablation."""
    summary = strict_json_loads((out / "pkt" / "transfer.json").read_text())
    assert [r["layer"] for r in summary["layers"]] == [0]  # the smoke student: 1 layer
    row = summary["layers"][0]
    assert row["teacher_layer"] == 1 and 0 < row["max_prob_uniform"] < row["max_prob_after"]
    assert row["at_before"] > 0 and row["mse_before"] > 0
    assert set(summary["ablation_at_kl"]) == {"with_at", "without_at"}
    assert all(v > 0 for v in summary["ablation_at_kl"].values())
    assert read_record(out / "transfer")["result"]["layers"] == summary["layers"]


def _compress(out):
    """<out>/compress/compress.json: one row per method; pruning's zeros shrink the gzipped
    file and not the file, int8 shrinks both; paired differences recomputed in numpy."""
    result = strict_json_loads((out / "compress" / "compress.json").read_text())
    rows = {r["method"]: r for r in result["rows"]}
    assert list(rows) == [
        "teacher",
        "fp32",
        "dynamic_int8",
        "full_int8",
        "prune_50",
        "prune_90",
        "ffn_units_50",
        "qat_int8",
        "prune_90_qat_int8",
    ]
    assert result["seeds"] == [0, 1] and result["hardware"]
    params = result["params"]  # pruning reaches the blocks' kernels, never the embeddings
    assert 0 < params["pruned_kernels"] < params["total"] - params["embeddings"]
    fp32 = rows["fp32"]
    for method, row in rows.items():
        assert len(row["accuracy"]) == len(row["keras_accuracy"]) == 2, method
        assert row["latency_ms"] > 0 and row["gzip_bytes"] < row["bytes"], method
        assert row["latency_vs_fp32"] == pytest.approx(
            row["latency_ms"] / fp32["latency_ms"], rel=1e-3
        )
        if method != "fp32":
            d = np.subtract(row["accuracy"], fp32["accuracy"])
            assert row["vs_fp32"]["mean"] == pytest.approx(d.mean(), abs=1e-12), method
    assert fp32["vs_fp32"] is None and fp32["sparsity"] == 0
    teacher = rows["teacher"]  # what distillation compressed: more weights, none zero
    assert teacher["kernel_params"] > fp32["kernel_params"] and teacher["sparsity"] == 0
    assert teacher["bytes"] > fp32["bytes"] and teacher["precision"] == "fp32"
    for method, target in (("prune_50", 0.5), ("prune_90", 0.9)):
        row = rows[method]
        assert row["sparsity"] == pytest.approx(target, abs=0.01)
        assert abs(row["bytes"] - fp32["bytes"]) < 0.01 * fp32["bytes"]  # same shapes
        assert row["accuracy"] == pytest.approx(row["keras_accuracy"], abs=0.02)  # LiteRT = Keras
    assert rows["prune_90"]["gzip_bytes"] < rows["prune_50"]["gzip_bytes"] < fp32["gzip_bytes"]
    assert rows["dynamic_int8"]["bytes"] < fp32["bytes"] / 2.5
    # half the FFN units out: the file shrinks by the FFN weights gone (4 bytes each)
    ffn = rows["ffn_units_50"]
    gone = fp32["kernel_params"] - ffn["kernel_params"]
    assert ffn["sparsity"] == pytest.approx(gone / fp32["kernel_params"], abs=1e-6)
    assert fp32["bytes"] - ffn["bytes"] == pytest.approx(4 * gone, rel=0.05)
    assert rows["full_int8"]["bytes"] < fp32["bytes"] / 2.5
    assert rows["qat_int8"]["bytes"] < fp32["bytes"] / 2.5
    both = rows["prune_90_qat_int8"]  # QAT after pruning: int8 bytes, the zeros kept
    assert both["sparsity"] == pytest.approx(rows["prune_90"]["sparsity"], abs=0.01)
    assert both["gzip_bytes"] < rows["qat_int8"]["gzip_bytes"]
    # the scan: the smoke student's one block, then all blocks, each at 50 %
    scan = result["sensitivity"]
    assert [(p["block"], p["sparsity"]) for p in scan] == [(0, 0.5), ("all", 0.5)]
    for probe in scan:
        d = np.subtract(probe["accuracy"], fp32["keras_accuracy"])
        assert probe["vs_dense"]["mean"] == pytest.approx(d.mean(), abs=1e-12)


def _payoff(out):
    """<out>/payoff.json: the issue's schema, every list one value per seed in one order."""
    payoff = strict_json_loads((out / "payoff.json").read_text())
    assert payoff["teacher"]["source"] == "shipped"
    assert payoff["teacher"]["gate"] in ("beats", "level", "behind")
    assert 0 < payoff["teacher"]["mlm_accuracy"] < 1
    assert payoff["sources"] == {"mlm": "mlm_seeds", "label_budget": ["label_budget"]}
    assert set(payoff["mlm"]) == {"pkt", "copy_only", "no_transfer"}
    assert {len(v) for v in payoff["mlm"].values()} == {2}  # smoke: seeds 0 and 1
    assert {"64"} <= set(payoff["label_budget"]) <= {"64", "all"}
    for budget, models in payoff["label_budget"].items():
        everyone = {"teacher", "pkt", "copy_only", "no_transfer"}
        assert set(models) == everyone if budget != "all" else set(models) <= everyone
        assert {len(v) for v in models.values()} == {2}
        assert all(0 <= x <= 1 for v in models.values() for x in v)
    # the label-budget classifiers read the mean of the tokens (the recipe's model.pooling)
    budget = read_record(out / "label_budget")["result"]["budgets"]["64"]
    config = Path(budget["models"]["pkt"]["model_dirs"][0]) / "bert_config.json"
    assert strict_json_loads(config.read_text())["classifier_pooling"] == "mean"
    distill = payoff["task_distillation"]
    assert distill["labels"] == 64 and distill["temperature"] == 2.0
    rows = ("teacher", "labels_only", "soft_labels", "pseudo_labels")
    assert {len(distill[r]) for r in rows} == {2}
    [layer] = payoff["attention"]
    assert layer["layer"] == 0 and layer["distance"] == "js"
    points = ("before", "after_stage", "final", "untrained", "final_without_at")
    assert all(0 <= layer[p] <= 0.6932 for p in points)
    assert layer["before"] == layer["untrained"]  # layer 0's stage starts from the init
    # the quoted comparisons: a second code path (numpy) over the same per-seed lists
    d = np.subtract(payoff["mlm"]["pkt"], payoff["mlm"]["copy_only"]) * 100
    quoted = payoff["paired"]["mlm"]["pkt-copy_only"]
    assert quoted["mean"] == pytest.approx(d.mean()) and quoted["n"] == len(d)
    assert quoted["se"] == pytest.approx(d.std(ddof=1) / np.sqrt(len(d)))
    assert set(payoff["paired"]["label_budget"]) == set(payoff["label_budget"])
    # the optional temperature sweep pairs with the task_distillation rows, seed by seed
    sweep = read_record(out / "task_distillation_sweep")["result"]
    run = sweep["runs"]["tau4"]
    assert sweep["seeds"] == [0, 1] and run["temperature"] == 4.0 and run["train_steps"] == 8
    d = (np.array(run["values"]) - np.array(distill["labels_only"])) * 100
    assert run["comparisons"]["tau4 − labels_only"]["mean"] == pytest.approx(d.mean())
    assert run["gap_to_teacher"] == pytest.approx(
        100 * (distill["teacher"][0] - np.mean(run["values"]))
    )
