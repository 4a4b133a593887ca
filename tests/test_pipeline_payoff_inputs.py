"""The payoff steps refuse settings that cannot run, naming them, before training anything."""

import pytest

from mbert_lib.pipeline.core import PipelineError
from mbert_lib.pipeline.steps_payoff import _budget_size, check_task_distillation

SETTINGS = {"labels": 1000, "seeds": 5, "temperature": 2.0}


@pytest.mark.parametrize("budget", ["0", "-5", "67350", "1e3", "500.5", "0500", "most"])
def test_a_label_budget_outside_the_training_set_is_refused(budget):
    with pytest.raises(PipelineError, match=f"{budget!r} is not a label budget.*67,349"):
        _budget_size(budget, 67349)


def test_label_budgets_within_the_training_set_and_all():
    assert _budget_size("1", 67349) == 1 and _budget_size("67349", 67349) == 67349
    assert _budget_size("all", 67349) is None


@pytest.mark.parametrize(
    "change, message",
    [
        ({"temperature": 0}, "temperature 0 must be a number > 0"),
        ({"temperature": -1.0}, "temperature -1.0"),
        ({"temperature": float("inf")}, "temperature inf"),
        ({"sweep": {"temperatures": [1.0, 0.0], "seeds": 2}}, "temperature 0.0"),
        ({"labels": 0}, "labels: 0 must be a whole number .* from 1 to 67,348"),
        ({"labels": 67349}, "labels: 67349"),
        ({"seeds": 1}, "pairing needs at least 2"),
    ],
)
def test_task_distillation_settings_that_cannot_run_are_refused(change, message):
    check_task_distillation(SETTINGS, 67349)
    with pytest.raises(PipelineError, match=message):
        check_task_distillation({**SETTINGS, **change}, 67349)
