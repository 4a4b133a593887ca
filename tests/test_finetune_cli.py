"""`python -m mbert_lib finetune` end to end, its errors, and the grid search's bookkeeping."""

import json
import math

import pytest

from mbert_lib.cli import main
from mbert_lib.finetune import search
from tests.finetune_fixtures import experiment, save_pretrained, write_sst2

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("finetune_cli")
    return save_pretrained(root / "pretrained"), write_sst2(root / "data")


def last_json(text):
    return json.loads(text[text.rindex("\n{") + 1 :])


def test_cli_fine_tunes_and_prints_dev_metrics_as_json(setup, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MBERT_DATA_DIR", raising=False)
    pretrained, data_dir = setup
    argv = [
        "finetune",
        "--task",
        "sst2",
        "--init_checkpoint",
        pretrained,
        "--model_dir",
        str(tmp_path / "run"),
        "--data-dir",
        data_dir,
        "--no_progress",
        "--params_override",
        "task.seq_length=12,trainer.epochs=1,trainer.batch_size=16,"
        "trainer.learning_rate=1e-2,model.dropout_rate=0.0",
    ]
    assert main(argv) == 0
    out = last_json(capsys.readouterr().out)
    assert out["task"] == "sst2" and out["source"] == "local" and out["metric"] == "accuracy"
    assert 0.0 <= out["dev"]["accuracy"] <= 1.0 and out["dev"]["examples"] == 64
    assert out["truncated"] == {"train": 0, "dev": 0} and out["best_epoch"] == 1
    assert (tmp_path / "run" / "model.ckpt.index").exists()
    assert main(argv) == 0  # finished: not redone
    assert "already done" in capsys.readouterr().out


def test_cli_errors_are_one_line_messages(setup, tmp_path, capsys):
    pretrained, data_dir = setup
    assert (
        main(
            [
                "finetune",
                "--task",
                "sst5",
                "--init_checkpoint",
                pretrained,
                "--model_dir",
                str(tmp_path / "a"),
                "--data-dir",
                data_dir,
            ]
        )
        == 2
    )
    assert "unknown task 'sst5'" in capsys.readouterr().err
    assert main(["finetune", "--task", "sst2", "--model_dir", str(tmp_path / "b")]) == 2
    assert "--init_checkpoint is required" in capsys.readouterr().err
    assert (
        main(
            [
                "finetune",
                "--task",
                "sst2",
                "--init_checkpoint",
                pretrained,
                "--source",
                "builtin",
                "--model_dir",
                str(tmp_path / "c"),
            ]
        )
        == 2
    )
    assert "no source 'builtin'" in capsys.readouterr().err
    assert (
        main(
            [
                "finetune",
                "--init_checkpoint",
                pretrained,
                "--model_dir",
                str(tmp_path),
                "--params_override",
                "trainer.warmup_fraction=1.5",
            ]
        )
        == 2
    )
    assert "trainer.warmup_fraction must be in [0, 1)" in capsys.readouterr().err


def test_grid_runs_every_point_and_seed_and_summarizes(setup, tmp_path):
    calls = []

    def fake_run(exp, model_dir, data, show_progress, log):
        calls.append((exp.trainer.batch_size, exp.trainer.learning_rate, exp.trainer.seed))
        accuracy = {16: 0.8, 32: 0.7}[exp.trainer.batch_size] + exp.trainer.seed / 100
        return {
            "metric": "accuracy",
            "eval": {"accuracy": accuracy},
            "best_epoch": 1,
            "seconds": {"train": 2.0},
        }

    grid = {"trainer.batch_size": [16, 32], "trainer.learning_rate": [1e-4]}
    records = search.run_grid(
        experiment(*setup), tmp_path, grid, seeds=[0, 1, 2], run=fake_run, log=lambda _: None
    )
    assert calls == [
        (16, 1e-4, 0),
        (16, 1e-4, 1),
        (16, 1e-4, 2),
        (32, 1e-4, 0),
        (32, 1e-4, 1),
        (32, 1e-4, 2),
    ]
    assert records[0]["model_dir"].endswith("batch_size=16,learning_rate=0.0001,seed=0")
    best, worst = search.summarize(records)
    assert best["trainer.batch_size"] == 16 and best["seeds"] == 3
    assert best["mean"] == pytest.approx(0.81) and best["std"] == pytest.approx(0.01)
    assert worst["mean"] == pytest.approx(0.71)
    assert math.isnan(search.mean_std([0.5])[1])
    with pytest.raises(ValueError, match="non-empty list"):
        search.grid_points({"trainer.batch_size": 16})
