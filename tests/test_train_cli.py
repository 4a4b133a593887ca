"""`python -m mbert_lib pretrain`: trains, exports and resumes in fresh processes; bad input."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.train_fixtures import TINY

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "experiments" / "pretrain_synthetic_smoke.yaml"


def cli(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "mbert_lib", "pretrain", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_cli_trains_exports_and_resumes(tmp_path):
    model_dir = str(tmp_path / "run")
    common = ["--config_file", str(SMOKE), "--model_dir", model_dir, "--no_progress"]
    first = cli(
        *common, "--params_override", TINY + ",trainer.train_steps=4,trainer.checkpoint_interval=2"
    )
    assert first.returncode == 0, first.stderr
    assert "source: synthetic" in first.stdout  # the final config is printed
    for name in [
        "bert_config.json",
        "model.ckpt.index",
        "training_done.json",
        "experiment.yaml",
        "checkpoints/ckpt-4.index",
    ]:
        assert (tmp_path / "run" / name).exists(), name
    config = json.loads((tmp_path / "run" / "bert_config.json").read_text())
    assert (config["vocab_size"], config["num_hidden_layers"]) == (64, 1)

    again = cli(
        *common, "--params_override", TINY + ",trainer.train_steps=4,trainer.checkpoint_interval=2"
    )
    assert again.returncode == 0 and "already done" in again.stdout

    longer = cli(
        *common, "--params_override", TINY + ",trainer.train_steps=6,trainer.checkpoint_interval=2"
    )
    assert longer.returncode == 0, longer.stderr
    assert "resumed from" in longer.stdout and "at step 4" in longer.stdout
    done = json.loads((tmp_path / "run" / "training_done.json").read_text())
    assert done["train_steps"] == 6 and "mlm_accuracy" in done["eval"]


def test_cli_errors_are_one_clear_line(tmp_path, capsys):
    from mbert_lib.cli import main

    def run(*args):
        status = main(["pretrain", *args])
        return status, capsys.readouterr().err

    common = ["--config_file", str(SMOKE), "--model_dir", str(tmp_path / "x")]
    status, err = run(*common, "--params_override", "trainer.train_stepz=3")
    assert status == 2 and "error: unknown key 'trainer.train_stepz'" in err
    missing = tmp_path / "no_such_data"
    status, err = run(
        *common,
        "--params_override",
        f"data.source=local,data.data_dir={missing},data.vocab_size=64",
    )
    assert status == 2 and str(missing) in err
    assert not (tmp_path / "x").exists()  # nothing written before the data exists
    status, err = run("--config_file", str(tmp_path / "none.yaml"), "--model_dir", str(tmp_path))
    assert status == 2 and "none.yaml" in err
