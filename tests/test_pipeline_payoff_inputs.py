"""The payoff steps refuse settings that cannot run, naming them, before training anything;
the payoff reads the optional steps only when they belong to this run."""

import json

import pytest

from mbert_lib.config_tree import apply_overrides
from mbert_lib.experiment.finetune import FinetuneExperiment
from mbert_lib.pipeline.core import RECORD_FILE, Context, PipelineError
from mbert_lib.pipeline.steps_payoff import (
    _budget_size,
    _mlm_values,
    budget_overrides,
    check_task_distillation,
    check_task_distillation_sweep,
)

SETTINGS = {"labels": 1000, "seeds": 5, "temperature": 2.0}


@pytest.mark.parametrize("budget", ["0", "-5", "67350", "1e3", "500.5", "0500", "most"])
def test_a_label_budget_outside_the_training_set_is_refused(budget):
    with pytest.raises(PipelineError, match=f"{budget!r} is not a label budget.*67,349"):
        _budget_size(budget, 67349)


def test_label_budgets_within_the_training_set_and_all():
    assert _budget_size("1", 67349) == 1 and _budget_size("67349", 67349) == 67349
    assert _budget_size("all", 67349) is None


def test_a_budgets_overrides_set_its_size_length_and_the_models_settings():
    spec = {"seeds": 5, "train_steps": 300}
    pairs = budget_overrides(2000, spec, {"trainer.learning_rate": 3e-3})
    experiment = apply_overrides(FinetuneExperiment(), pairs)
    assert experiment.trainer.learning_rate == 3e-3
    assert experiment.trainer.train_steps == 300 and experiment.task.max_train_examples == 2000
    pairs = budget_overrides(None, {"seeds": 3, "epochs": 1}, {"trainer.learning_rate": 1e-3})
    experiment = apply_overrides(FinetuneExperiment(), pairs)
    assert experiment.trainer.learning_rate == 1e-3 and experiment.trainer.epochs == 1
    assert experiment.task.max_train_examples is None


@pytest.mark.parametrize(
    "change, message",
    [
        ({"temperature": 0}, "temperature 0 must be a number > 0"),
        ({"temperature": -1.0}, "temperature -1.0"),
        ({"temperature": float("inf")}, "temperature inf"),
        ({"labels": 0}, "labels: 0 must be a whole number .* from 1 to 67,348"),
        ({"labels": 67349}, "labels: 67349"),
        ({"seeds": 1}, "pairing needs at least 2"),
    ],
)
def test_task_distillation_settings_that_cannot_run_are_refused(change, message):
    check_task_distillation(SETTINGS, 67349)
    with pytest.raises(PipelineError, match=message):
        check_task_distillation({**SETTINGS, **change}, 67349)


@pytest.mark.parametrize(
    "runs, message",
    [
        (None, r"runs: expected a mapping .* got None"),
        ({}, r"runs: expected a mapping"),
        ({"tau0": {"temperature": 0.0}}, r"runs.tau0: temperature 0.0 must be a number > 0"),
        ({"t": {}}, r"runs.t: temperature None must be"),
        ({"t": {"temperature": 2.0, "train_steps": 0}}, r"runs.t.train_steps: 0 must be"),
        ({"t": {"temperature": 2.0, "steps": 10}}, r"runs.t: expected \{temperature"),
    ],
)
def test_a_temperature_sweep_that_cannot_run_is_refused(runs, message):
    check_task_distillation_sweep({"runs": {"tau4": {"temperature": 4.0, "train_steps": 900}}})
    with pytest.raises(PipelineError, match=message):
        check_task_distillation_sweep({"runs": runs})


def _write(out, step, result):
    (out / step).mkdir(parents=True, exist_ok=True)
    record = {"step": step, "result": result, "seconds": 1.0, "fingerprint": "x"}
    (out / step / RECORD_FILE).write_text(json.dumps(record))


def test_payoff_takes_the_mlm_seeds_only_when_they_start_from_this_runs_rows(tmp_path):
    own = {"pkt": 0.33, "ablation_copy": 0.32, "no_transfer": 0.08}
    for row, value in own.items():
        _write(tmp_path, row, {"eval": {"mlm_accuracy": value}})
    ctx = Context(out_dir=tmp_path, settings={}, log=lambda _: None)
    assert _mlm_values(ctx) == (
        {"pkt": [0.33], "copy_only": [0.32], "no_transfer": [0.08]},
        "rows (seed 0)",
    )
    seeds = {row: {"mlm_accuracy": {"values": [v, v + 0.01]}} for row, v in own.items()}
    _write(tmp_path, "mlm_seeds", {"rows": seeds})
    mlm, source = _mlm_values(ctx)
    assert source == "mlm_seeds" and mlm["copy_only"] == [0.32, 0.33]
    seeds["pkt"]["mlm_accuracy"]["values"][0] = 0.34  # seed 0 of another PKT row: stale
    _write(tmp_path, "mlm_seeds", {"rows": seeds})
    assert _mlm_values(ctx)[1] == "rows (seed 0)"
