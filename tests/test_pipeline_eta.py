"""The run's time estimate: recorded step times, scaled by the pace this run shows."""

import json

import pytest

from mbert_lib.pipeline import core, eta
from mbert_lib.pipeline.core import Context, Step, run_steps


def test_pace_scales_every_expectation_by_the_steps_seen_so_far():
    estimate = eta.Estimate({"a": 100.0, "b": 300.0, "c": 50.0})
    assert estimate.remaining(["a", "b", "c", "new"]) == (450.0, 1)
    estimate.observe("a", 250.0)  # 2.5x slower than the reference
    assert estimate.pace == pytest.approx(2.5)
    assert estimate.step("b") == pytest.approx(750.0)
    assert estimate.remaining(["b", "c"]) == (pytest.approx(875.0), 0)
    estimate.observe("new", 999.0)  # a step with no expectation: no pace change
    assert estimate.pace == pytest.approx(2.5)
    assert estimate.describe("b", ["b", "c"]) == "about 12 min; the run: about 15 min"
    assert eta.Estimate({}).describe("x", ["x"]) == ""


@pytest.mark.parametrize("seconds,text", [(45, "45 s"), (600, "10 min"), (3900, "1 h 05 min")])
def test_format_seconds(seconds, text):
    assert eta.format_seconds(seconds) == text


def test_run_steps_prints_the_estimate_from_the_reference_and_this_run(tmp_path, monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(core.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(core, "load_average", lambda: [0.5, 0.5, 0.5])  # a quiet CPU
    durations = {"a": 200.0, "b": 600.0, "c": 30.0}

    def run(name):
        def step(ctx, settings):
            clock[0] += durations[name]
            return {}

        return step

    steps = [Step(n, f"step {n}", run(n)) for n in "abc"]
    reference = tmp_path / "step_seconds.json"
    monkeypatch.setattr(eta, "REFERENCE_FILE", reference)
    reference.write_text(json.dumps({"toy": {"cpu": "x", "seconds": {"a": 100, "b": 300}}}))
    lines = []
    run_steps(steps, Context(out_dir=tmp_path / "run", settings={}, log=lines.append, recipe="toy"))
    starts = [line for line in lines if not line.endswith(" s") and "finished" not in line]
    assert starts == [
        "[1/3] step a (about 2 min; the run: about 7 min + 1 step(s) never timed)",
        # a took 2x the reference: b is expected at 2 x 300 s
        "[2/3] step b (about 10 min; the run: about 10 min + 1 step(s) never timed)",
        "[3/3] step c",
    ]

    reference_dir = tmp_path / "run"
    written = eta.write_reference(reference_dir, "toy")
    assert written["seconds"] == durations


def test_a_step_timed_on_a_loaded_cpu_keeps_its_reference_time(tmp_path):
    def record(step, seconds, load):
        directory = tmp_path / "run" / step
        directory.mkdir(parents=True)
        text = {
            "step": step,
            "seconds": seconds,
            "cpu_count": 2,
            "load_average": {"start": [load, 1.0, 1.0], "end": [1.0, 1.0, 1.0]},
        }
        (directory / "step.json").write_text(json.dumps(text))

    record("a", 500.0, 4.1)  # 4.1 > 1.25 x 2 cores: another job shared the CPU
    record("b", 80.0, 2.4)  # a step using both cores alone
    record("new", 900.0, 6.0)  # loaded, but there is nothing better to keep
    reference = tmp_path / "step_seconds.json"
    reference.write_text(json.dumps({"toy": {"cpu": "x", "seconds": {"a": 200, "b": 100}}}))
    written = eta.write_reference(tmp_path / "run", "toy", reference)
    assert written["seconds"] == {"a": 200, "b": 80.0, "new": 900.0}
    assert json.loads(reference.read_text())["toy"] == written
