"""The optional `distill_seeds` step added to the smoke run that test_pipeline_smoke.py
builds (conftest.py runs this after it, in a group of its own, so that the notebooks
that do not read this step need not wait for it)."""

import shutil

import numpy as np
import pytest

from mbert_lib.cli import main
from mbert_lib.pipeline import fast_run_dir
from mbert_lib.pipeline.core import read_record
from mbert_lib.step_records import load_records
from mbert_lib.tables import tables8_9_transfer

pytestmark = pytest.mark.slow


def test_optional_seeds_step_trains_every_table_row_again(monkeypatch, capsys):
    """`--steps distill_seeds,report`: every row of Tables 8 and 9 again with seed 1, nothing else
    re-run; seed 0 is the row's own step; the report's Tables 8/9 average over both."""
    monkeypatch.delenv("MBERT_DATA_DIR", raising=False)
    out = fast_run_dir()
    if read_record(out / "report") is None:  # run alone: the smoke run first
        assert main(["reproduce", "--recipe", "smoke", "--out", str(out)]) == 0
        capsys.readouterr()
    shutil.rmtree(out / "distill_seeds", ignore_errors=True)  # left by an earlier pytest run
    assert (
        main(
            ["reproduce", "--recipe", "smoke", "--out", str(out), "--steps", "distill_seeds,report"]
        )
        == 0
    )
    text = capsys.readouterr().out
    rows = text[text.rindex("\nstep ") :].splitlines()[2:]
    rows = rows[: next(k for k, line in enumerate(rows) if line.startswith("total "))]
    ran = [line.split()[0] for line in rows if "skipped (done)" not in line]
    assert ran == ["distill_seeds", "report"], ran
    rows = read_record(out / "distill_seeds")["result"]["rows"]
    assert set(rows) == {
        "pkt",
        "jkt",
        "akt",
        "no_transfer",
        "ablation_copy",
        "ablation_pd",
        "ablation_pd_fmt",
    }
    for step, entry in rows.items():
        assert entry["seeds"] == [0, 1]
        assert entry["eval"][0] == {
            k: v
            for k, v in read_record(out / step)["result"]["eval"].items()
            if k in entry["eval"][0]
        }
        assert entry["train_steps"][0] == entry["train_steps"][1]  # equal compute
        mlm = [e["mlm_accuracy"] for e in entry["eval"]]
        assert entry["mlm_accuracy"]["mean"] == pytest.approx(np.mean(mlm))
        assert entry["mlm_accuracy"]["std"] == pytest.approx(np.std(mlm, ddof=1))
    # the seed reaches training: some row's seed-1 student differs from its seed-0 one
    assert any(e["eval"][0]["mlm_loss"] != e["eval"][1]["mlm_loss"] for e in rows.values())
    t8 = tables8_9_transfer.table8(load_records(out)).set_index("step")
    assert (t8["pre-training seeds"] == "0, 1").all()
    assert "averaged over the pre-training seeds" in (out / "REPORT.md").read_text()
