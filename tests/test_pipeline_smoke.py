"""`python -m mbert_lib reproduce --preset smoke` end to end on the offline default data."""

import pytest

from mbert_lib.cli import main
from mbert_lib.report import section_status

SECTIONS = ("Machine", "Data and seeds", "Wall time per step", "Table 1: model sizes",
            "Table 8", "Table 9", "Fine-tuning", "Table 6", "Table 7", "Latency and size ratios")


@pytest.mark.slow
def test_smoke_reproduction_runs_resumes_and_reports(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MBERT_DATA_DIR", raising=False)
    out = tmp_path / "smoke"
    assert main(["reproduce", "--preset", "smoke", "--out", str(out)]) == 0
    first = capsys.readouterr().out
    assert "ran" in first and (out / "teacher" / "model.ckpt.index").exists()
    report = (out / "REPORT.md").read_text(encoding="utf-8")
    status = section_status(report)
    for name in SECTIONS:
        assert any(title.startswith(name) for title in status), (name, list(status))
    for name in ("Machine", "Data and seeds", "Wall time per step", "Table 8", "Table 9",
                 "Fine-tuning"):
        assert next(s for t, s in status.items() if t.startswith(name)) == "ok", status
    assert "builtin_shuffled" in report and "NOT SST-2" in report
    assert (out / "report" / "report_step_times.png").exists()
    assert main(["reproduce", "--preset", "smoke", "--out", str(out)]) == 0
    second = capsys.readouterr().out
    summary = second[second.rindex("\nstep "):].splitlines()[2:-1]
    assert summary and all(("skipped (done)" in line) != line.startswith("report ")
                           for line in summary), summary
