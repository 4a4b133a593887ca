"""The progress bar's throughput: items per step over the measured seconds, in its unit."""

import pytest

from mbert_lib.train import progress


def _run(monkeypatch, per_step, unit, step_seconds):
    clock = iter(step_seconds)
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    bar = progress.Progress(len(step_seconds), 0, per_step, disable=True, unit=unit)
    for _ in step_seconds:
        bar.update({"loss": 1.0})
    return bar


def test_throughput_leaves_out_the_first_step_and_counts_the_unit(monkeypatch):
    # steps end at 0, 1, 1.5, 2.5 s: the first (which traced the step function) has no
    # start on the clock; the 3 after it took 2.5 s at 32 examples a step
    bar = _run(monkeypatch, 32, "examples", [0.0, 1.0, 1.5, 2.5])
    assert bar.per_second == pytest.approx(3 * 32 / 2.5)
    assert "ex_s" in bar.bar.postfix and "tok_s" not in bar.bar.postfix


def test_tokens_are_the_default_unit(monkeypatch):
    bar = _run(monkeypatch, 16 * 128, "tokens", [0.0, 1.0, 3.0])
    assert bar.per_second == pytest.approx(2 * 16 * 128 / 3.0)
    assert "tok_s" in bar.bar.postfix


def test_an_unknown_unit_is_refused():
    with pytest.raises(ValueError, match="throughput unit must be one of"):
        progress.Progress(10, 0, 32, disable=True, unit="sentences")
