"""The pipeline's `report` step on a fixture run: where it writes, figure links, publishing."""

from mbert_lib.pipeline import STEPS, steps_report
from mbert_lib.pipeline.core import Context, run_steps
from mbert_lib.pipeline.registry import get_recipe
from tests.report_fixtures import make_run


def _run(out, publish, log):
    settings = {"report": {**get_recipe("laptop")["report"], "publish": publish}}
    ctx = Context(out_dir=out, settings=settings, log=log.append, show_progress=False)
    return run_steps(steps_report.STEPS, ctx)[0]["result"]


def test_report_step_writes_under_out_and_publishes_for_laptop(tmp_path, monkeypatch):
    out = make_run(tmp_path / "run", ["data", "teacher", "pkt", "finetune"])
    repo = tmp_path / "repo"
    monkeypatch.setattr(steps_report, "REPO_ROOT", repo)
    log = []
    result = _run(out, publish=False, log=log)
    text = (out / "REPORT.md").read_text(encoding="utf-8")
    assert result["report"] == str(out / "REPORT.md") and result["published"] is None
    assert "](report/report_step_times.png)" in text and "](report/report_finetune.png)" in text
    assert (out / "report" / "report_finetune.png").stat().st_size > 10_000
    assert not repo.exists()
    assert result["sections"]["Table 6: accuracy per TFLite precision"] == "not run"
    assert any("not run yet" in line and "Table 6" in line for line in log)

    result = _run(out, publish=True, log=log)  # another --out: the repository's stays
    assert result["published"] is None and not repo.exists()

    monkeypatch.setattr("mbert_lib.pipeline.core.DEFAULT_OUT", tmp_path)
    (tmp_path / "laptop").symlink_to(out)
    result = _run(out, publish=True, log=log)  # a rerun step: runs again
    published = (repo / "results" / "REPORT.md").read_text(encoding="utf-8")
    assert result["published"] == str(repo / "results" / "REPORT.md")
    assert "](../figures/report_step_times.png)" in published
    assert (repo / "figures" / "report_step_times.png").exists()
    assert "# MobileBERT, step by step: reproduction report (`laptop` recipe)" in published


def test_the_report_lists_the_registry_steps_in_order():
    """The report's settings carry the pipeline's step order, optional steps apart."""
    report = get_recipe("smoke")["report"]
    assert report["order"] == [s.name for s in STEPS if not s.optional]
    assert report["optional"] == [s.name for s in STEPS if s.optional]
    # a full run: the main student, the rows the transfer step and the payoff read
    main = {"pkt", "no_transfer", "ablation_copy", "ablation_pd_fmt", "teacher_gate", "tflite"}
    assert main | {"task_distillation", "payoff"} <= set(report["order"])
    assert set(report["optional"]) == {
        "jkt",
        "akt",
        "ablation_pd",
        "ablation_fmt_at",
        "bert_baseline",
        "finetune",
        "distill_seeds",
        "mlm_seeds",
        "label_budget",
        "label_budget_all",
        "task_distillation_sweep",
        "latency",
        "compress",
    }
    assert report["order"][0] == "data" and report["order"][-1] == "report"


def test_the_wall_time_record_sums_the_full_runs_steps_and_lists_the_optional_ones():
    records = {"data": {"seconds": 60.0}, "pkt": {"seconds": 1800.0}, "mlm_seeds": {"seconds": 600}}
    wall = steps_report.wall_time_record(
        records, ["data", "pkt", "report"], ["mlm_seeds", "latency"], 45, "cpu"
    )
    assert wall["full_run"] == {
        "minutes": 31.0,
        "status": "met",
        "missing": [],
        "steps": {"data": 1.0, "pkt": 30.0},
    }
    assert wall["optional"] == {"mlm_seeds": 10.0} and wall["cpu"] == "cpu"
    over = steps_report.wall_time_record(records, ["data", "pkt"], [], 30, "cpu")
    assert over["full_run"]["status"] == "not met"
    partial = steps_report.wall_time_record(records, ["data", "tflite"], [], 45, "cpu")
    assert partial["full_run"]["status"] == "not met" and partial["full_run"]["missing"] == [
        "tflite"
    ]
