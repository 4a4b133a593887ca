"""`python -m mbert_lib reproduce --preset smoke` end to end on the offline default data."""

import pytest

from mbert_lib.cli import main


@pytest.mark.slow
def test_smoke_reproduction_runs_and_resumes(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MBERT_DATA_DIR", raising=False)
    out = tmp_path / "smoke"
    assert main(["reproduce", "--preset", "smoke", "--out", str(out)]) == 0
    first = capsys.readouterr().out
    assert "ran" in first and (out / "teacher" / "model.ckpt.index").exists()
    assert main(["reproduce", "--preset", "smoke", "--out", str(out)]) == 0
    second = capsys.readouterr().out
    assert "skipped (done)" in second and " ran " not in second


def test_unknown_preset_and_missing_data_dir_are_clear_errors(tmp_path, capsys):
    assert main(["reproduce", "--preset", "huge", "--out", str(tmp_path)]) == 2
    assert "unknown preset 'huge'" in capsys.readouterr().err
    assert main(["reproduce", "--preset", "smoke", "--data-dir", str(tmp_path / "none"),
                 "--out", str(tmp_path)]) == 2
    assert "does not exist" in capsys.readouterr().err
