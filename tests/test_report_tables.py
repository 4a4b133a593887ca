"""Report tables from fixture records: the numbers, computed independently, and "not run"."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mbert_lib import paper
from mbert_lib.report import ReportRun, build_markdown, load_records, run, section_status
from mbert_lib.report.markdown import table
from mbert_lib.tables import speed_size, sst2_finetuning, tables8_9_transfer
from mbert_lib.tables.table6_quantization import table6_with_targets
from mbert_lib.tables.table7_norm_act import table7_by_threads
from tests.report_fixtures import (
    DISTILL,
    FINETUNE_VALUES,
    LATENCY,
    PARAMS,
    PAYOFF,
    PREDICTIONS,
    make_run,
)

MACHINE = {
    "cpu": "Test CPU",
    "cores": 2,
    "memory_gib": 24.0,
    "os": "Linux",
    "versions": {"python": "3.11", "tensorflow": "2.21.0"},
    "load_average": [0.5, 0.4, 0.3],
}


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    out = make_run(tmp_path_factory.mktemp("run"))
    return load_records(out, order=["data", "teacher", "pkt"])


def _markdown(records):
    return build_markdown(
        records,
        MACHINE,
        ReportRun(
            recipe="laptop",
            budget_minutes=45,
            command_line="python -m mbert_lib reproduce",
            source="runs/laptop",
        ),
    )


def test_sst2_mean_std_over_seeds_matches_numpy(records):
    frame = sst2_finetuning.sst2_table(records).set_index("step")
    for step, values in FINETUNE_VALUES.items():
        v = 100 * np.array(values)
        expected = f"{v.mean():.1f} ± {v.std(ddof=1):.1f}" if len(v) > 1 else f"{v.mean():.1f}"
        assert frame.loc[step, "dev (%), mean ± std"] == expected
        assert frame.loc[step, "encoder params"] == f"{PARAMS[step]:,}"
        assert frame.loc[step, "seeds"] == len(values)
    assert frame.loc["pkt", "fine-tuning s/run"] == pytest.approx(31.0)  # mean of 30, 31, 32
    assert frame.loc["akt", "dev (%), mean ± std"] == "not run"
    assert str(paper.GLUE_TEST_MOBILEBERT["SST-2"]) in frame.loc["pkt", "paper (%)"]
    assert list(frame.index[:4]) == ["teacher", "pkt", "no_transfer", "bert_baseline"]


def test_table8_and_9_rows_and_paper_means(records):
    t8 = tables8_9_transfer.table8(records).set_index("row")
    for label, step, mnli in (("PKT", "pkt", 83.9), ("JKT", "jkt", 83.5), ("AKT", "akt", 83.0)):
        assert t8.loc[label, "paper MNLI-m dev (%)"] == mnli  # the confirmed column
        p = DISTILL[step]
        assert t8.loc[label, "ours: held-out MLM acc (%)"] == pytest.approx(100 * p)
        assert t8.loc[label, "± s.e. (points)"] == pytest.approx(
            100 * np.sqrt(p * (1 - p) / PREDICTIONS)
        )
    assert t8.loc["PKT", "ours: fine-tuned dev (%)"].startswith("83.3 ± 2.5 (n=3)")
    assert t8.loc["AKT", "ours: fine-tuned dev (%)"] == "not run"
    assert (
        tables8_9_transfer.ranking(t8.reset_index()) == "PKT > AKT = JKT"
    )  # ties keep the table order
    assert np.isnan(t8.loc["PKT", "paper SST-2 dev (≈, %)"])  # no source for it
    assert t8.loc["JKT", "paper SST-2 dev (≈, %)"] == 92.4
    t9 = tables8_9_transfer.table9(records).set_index("row")
    paper_rows = [r for r in t9.index if r in paper.TABLE9]
    assert paper_rows == list(paper.TABLE9)
    assert list(t9.loc[paper_rows, "paper MNLI-m dev (%)"]) == [80.8, 81.1, 83.8, 84.4]
    # each row differs from the one above in one thing: the copied embedding has its own row
    assert list(t9["step"][:3]) == ["no_transfer", "ablation_copy", "ablation_pd"]
    assert np.isnan(t9.loc[t9.index[1], "paper MNLI-m dev (%)"])
    assert t9.loc["+PD+FMT+AT", "step"] == "pkt"
    assert t9.loc["+PD", "ours: fine-tuned dev (%)"].startswith("not fine-tuned")


def test_table6_differences_and_targets(records):
    frame = table6_with_targets(records["tflite"]["result"]).set_index("precision")
    assert frame.loc["dynamic_int8", "Δ vs Keras (points)"] == pytest.approx(80.5 - 82.0)
    assert frame.loc["dynamic_int8", "status"] == "not met"  # 1.5 points > 1
    assert frame.loc["float16", "status"] == "met"
    assert frame.loc["fp32", "status"] == "met"  # |Δlogit| 5e-5 <= 1e-4
    assert frame.loc["fp32", "fp32 size / size"] == pytest.approx(1.0)
    assert frame.loc["dynamic_int8", "fp32 size / size"] == pytest.approx(3.0)
    assert frame.loc["int8", "TFLite acc (%)"].startswith("export failed: FULLY_CONNECTED")


def test_table7_ratios_to_layernorm_gelu(records):
    frame = table7_by_threads(records["latency"]["result"]["records"])
    base = LATENCY[("mobilebert", "layer_norm", "gelu", "fp32", 2)][0]
    row = frame[(frame.normalization == "no_norm") & (frame.activation == "relu")].iloc[0]
    assert row["ours 2 threads (ms)"] == 46.0
    assert row["ours 2 threads / LN+gelu"] == pytest.approx(46.0 / base)
    assert row["paper / LN+gelu"] == f"{62 / 192:.2f}"
    approx = frame[(frame.normalization == "no_norm") & (frame.activation == "gelu")].iloc[0]
    assert approx["paper / LN+gelu"].startswith("≈")
    assert (
        table7_by_threads(
            [r for r in records["latency"]["result"]["records"] if r["hidden_act"] != "gelu"]
        )
        is None
    )


def test_latency_ratios_and_targets(records):
    recs = records["latency"]["result"]["records"]
    frame = speed_size.ratios(recs)
    row = frame[(frame.model == "mobilebert") & (frame.threads == 2)].iloc[0]
    assert row.latency_ratio_fp32 == pytest.approx(176.0 / 46.0)
    assert row.fastest_precision == "dynamic_int8"
    assert row.fastest_speedup == pytest.approx(176.0 / 30.0)
    assert row.size_ratio_fp32 == pytest.approx(434 / 97)
    goals = speed_size.targets_summary(frame, records["tflite"]["result"]).set_index("target")
    assert goals["status"].tolist() == ["not met", "not met", "met", "met"]  # 46 ms, 3.83x
    assert "pkt at dynamic_int8: 80.5%" in goals.iloc[2]["ours"]


def test_wall_time_budget_and_busy_machine(records):
    times = run.wall_time_table(records, cores=2).set_index("step")
    total = sum(r["seconds"] for r in records.values())
    assert times["share (%)"].sum() == pytest.approx(100.0)
    assert times.loc["teacher", "busy machine"] == "yes"  # load 5 > 2 + 1
    assert times.loc["pkt", "busy machine"] == "no"
    summary = run.budget_summary(records, budget_minutes=45)
    assert summary["minutes"] == pytest.approx(total / 60)
    assert summary["status"] == ("met" if total <= 45 * 60 else "not met")
    assert run.budget_summary(records, budget_minutes=1)["status"] == "not met"


def test_full_report_has_every_section_and_no_not_run_but_the_optional_one(records):
    text = _markdown(records)
    status = section_status(text)
    findings = "Tables 8 and 9: the paper's findings over pre-training seeds"
    assert len(status) == 13 and status.pop(findings) == "not run", status
    assert set(status.values()) == {"ok"}, status
    assert "Test CPU" in text and "12345" in text and "aa" * 32 in text
    assert "5.5× faster" in text and "4.3× smaller" in text
    assert "The teacher, for reference: held-out MLM accuracy 35.00%, perplexity 90.0." in text


def test_the_payoff_section_pairs_each_comparison_by_seed(records):
    """Its numbers against numpy and scipy, from the fixture's per-seed lists."""
    text = _markdown(records)
    section = text.split("## Does distillation pay off?")[1].split("\n## ")[0]
    assert "the shipped teacher (15,000 pre-training steps, 3.2 h on Test CPU)" in section
    pkt, copy = (100 * np.array(PAYOFF["mlm"][k]) for k in ("pkt", "copy_only"))
    d = pkt - copy
    se = d.std(ddof=1) / np.sqrt(3)
    half = stats.t.ppf(0.975, 2) * se
    row = f"| PKT student − copy-only student | {d.mean():+.2f} | {se:.2f} | "
    assert row + f"[{d.mean() - half:+.2f}, {d.mean() + half:+.2f}] | beats | 3 |" in section
    assert f"| PKT student | {pkt.mean():.1f} ± {pkt.std(ddof=1):.1f} |" in section
    soft, alone = (
        100 * np.array(PAYOFF["task_distillation"][k]) for k in ("soft_labels", "labels_only")
    )
    assert f"| + soft targets − labels alone | {(soft - alone).mean():+.2f} |" in section
    assert "first holds at 500 labels" in section
    assert "| 0 | 0.3 | 0.3 | 0.05 | 0.08 | 0.25 |" in section  # JS per point, 3 decimals


def test_missing_steps_say_not_run(tmp_path):
    records = load_records(make_run(tmp_path, ["data"]))
    text = build_markdown(
        records,
        MACHINE,
        ReportRun(
            recipe="smoke",
            budget_minutes=3,
            command_line="c",
            source="s",
            steps=["data", "teacher", "finetune"],
        ),
    )
    assert "partial: 2 step(s) of the pipeline have not run (teacher, finetune)" in text
    status = section_status(text)
    assert status["Machine"] == status["Data and seeds"] == status["Table 1: model sizes"] == "ok"
    not_run = [t for t, s in status.items() if s == "not run"]
    assert len(not_run) == 9, status  # payoff, Tables 8, 9, findings, transfer, 6, 7, SST-2, ratios
    empty = section_status(_markdown(load_records(tmp_path / "nothing")))
    assert empty["Wall time per step"] == "not run" and empty["Data and seeds"] == "not run"


def test_markdown_table_cells():
    text = table(pd.DataFrame({"a|b": ["x|y", None], "n": [1234567, 3], "f": [0.123456, 2.0]}))
    lines = text.splitlines()
    assert lines[0] == "| a\\|b | n | f |" and lines[1] == "|---|---:|---:|"
    assert lines[2] == "| x\\|y | 1,234,567 | 0.1235 |" and lines[3] == "| — | 3 | 2 |"


def test_a_corrupt_record_is_a_warning_and_counts_as_not_run(tmp_path):
    out = make_run(tmp_path, ["data", "pkt"])
    (out / "pkt" / "step.json").write_text("{half a record")
    with pytest.warns(UserWarning, match="pkt.*not valid JSON"):
        records = load_records(out)
    assert list(records) == ["data"]


def test_records_without_load_average_are_not_called_quiet(tmp_path):
    records = load_records(make_run(tmp_path, ["data", "pkt"]))
    del records["data"]["load_average"]
    text = _markdown(records)
    assert "no step with a recorded load ran on a busy machine" in text
    assert "Unknown for data: their records were made before" in text


def test_latency_throughput_and_per_measurement_load(tmp_path):
    from mbert_lib.anatomy.flops import flops
    from mbert_lib.config import get_preset

    records = load_records(make_run(tmp_path, ["latency"]))
    del records["latency"]["load_average"]
    for r in records["latency"]["result"]["records"]:
        r["load_1min"] = 4.5
    text = _markdown(records)
    gflop = flops(get_preset("mobilebert"), 128) / 1e9
    assert (
        f"mobilebert 2 thread(s): {gflop:.2f} GFLOP in 46 ms = {gflop / 0.046:.0f} GFLOP/s" in text
    )
    assert "1-minute load average during `latency` (per measurement): 4.5 to 4.5: **busy" in text


def test_outputs_moved_aside_by_a_settings_change_are_not_steps(tmp_path):
    out = make_run(tmp_path, ["data", "teacher"])
    (out / "teacher").rename(out / "teacher.stale-0123456789abcdef")
    assert list(load_records(out)) == ["data"]


SEED_MLM = {
    "pkt": [0.3012, 0.2990, 0.3050],
    "jkt": [0.2950, 0.3100, 0.3080],
    "akt": [0.2950, 0.2800, 0.2850],
}
SEED_DEV = {"pkt": [0.81, 0.80, 0.84], "jkt": [0.79, 0.82, 0.80], "akt": [0.75, 0.77, 0.76]}


def test_tables_8_9_over_pretraining_seeds_and_budget_without_optional_steps(tmp_path):
    from tests.report_fixtures import _write

    out = make_run(tmp_path)
    rows = {
        step: {
            "seeds": [0, 1, 2],
            "eval": [{"mlm_accuracy": v} for v in mlm],
            "downstream": SEED_DEV[step],
            "metric": "accuracy",
            "mlm_accuracy": {"values": mlm},
        }
        for step, mlm in SEED_MLM.items()
    }
    _write(out, "distill_seeds", {"task": "sst2", "rows": rows}, seconds=3600.0)
    records = load_records(out, order=["data", "teacher", "pkt"])
    t8 = tables8_9_transfer.table8(records).set_index("step")
    for step, mlm in SEED_MLM.items():
        assert t8.loc[step, "ours, seeds: MLM acc mean (%)"] == pytest.approx(100 * np.mean(mlm))
        assert t8.loc[step, "ours, seeds: MLM acc std (points)"] == pytest.approx(
            100 * np.std(mlm, ddof=1)
        )
        dev = 100 * np.array(SEED_DEV[step])
        assert t8.loc[step, "ours, seeds: fine-tuned dev (%)"] == (
            f"{dev.mean():.1f} ± {dev.std(ddof=1):.1f}"
        )
        assert t8.loc[step, "pre-training seeds"] == "0, 1, 2"
    # seed 0 alone ranks PKT first; the seed means rank JKT first
    assert tables8_9_transfer.ranking(t8, "ours, seeds: MLM acc mean (%)") == "JKT > PKT > AKT"
    t9 = tables8_9_transfer.table9(records).set_index("step")
    assert t9.loc["ablation_pd", "pre-training seeds"].startswith("not run")
    text = build_markdown(
        records,
        MACHINE,
        ReportRun(
            recipe="laptop",
            budget_minutes=45,
            command_line="c",
            source="runs/laptop",
            optional=["distill_seeds"],
        ),
    )
    counted = sum(r["seconds"] for k, r in records.items() if k != "distill_seeds") / 60
    assert f"**Total {counted:.1f} min**" in text
    assert "the optional distill_seeds not counted" in text
    assert "Ours, by held-out MLM accuracy averaged over the pre-training seeds" in text
    seeds = run.seeds_table(records).set_index("step")
    assert seeds.loc["distill_seeds/jkt", "seed"] == "0, 1, 2"
    # the findings section: Table 8's comparisons present, Table 9's rows not run
    assert "## Tables 8 and 9: the paper's findings over pre-training seeds" in text
    pkt_jkt = 100 * (np.mean(SEED_MLM["pkt"]) - np.mean(SEED_MLM["jkt"]))
    assert f"| {pkt_jkt:.2f} |" in text
    assert "row not run" in text
