"""mbert_lib.bench.timing: call counts, statistics, interleaving, JSON output.

A fake clock replaces time.perf_counter, so every sample is known exactly and
nothing here depends on how fast the machine is.
"""

import json
import os

import pytest

from mbert_lib.bench import timing
from mbert_lib.bench.timing import Timing, interleaved_timings, time_callable, write_json


class FakeClock:
    """perf_counter() returns `now` (seconds); a timed fn advances it."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(timing.time, "perf_counter", fake)
    return fake


def test_timing_from_known_samples():
    t = Timing.from_samples([3.0, 1.0, 10.0, 2.0])
    assert t == Timing(median_ms=2.5, min_ms=1.0, max_ms=10.0, repeats=4)
    assert Timing.from_samples([7.0]) == Timing(7.0, 7.0, 7.0, 1)
    with pytest.raises(ValueError, match="empty"):
        Timing.from_samples([])


def test_time_callable_calls_warmup_plus_repeats_and_measures_each_call(clock):
    durations_s = iter([9.0, 9.0] + [0.004, 0.001, 0.003, 0.002, 0.100])  # 2 warm-up, 5 timed
    calls = []

    def fn():
        calls.append(1)
        clock.now += next(durations_s)

    t = time_callable(fn, repeats=5, warmup=2)
    assert len(calls) == 7
    # The 9 s warm-up calls are not part of the statistics.
    assert t.repeats == 5
    assert t.median_ms == pytest.approx(3.0)
    assert t.min_ms == pytest.approx(1.0)
    assert t.max_ms == pytest.approx(100.0)


def test_interleaved_order_and_attribution(clock):
    order = []

    def make(name, seconds):
        def fn():
            order.append(name)
            clock.now += seconds

        return fn

    fns = {"a": make("a", 0.001), "b": make("b", 0.005), "c": make("c", 0.002)}
    result = interleaved_timings(fns, repeats=4, warmup=2)
    # Warm-up: each callable in turn; then round-robin rounds a, b, c.
    assert order == ["a", "a", "b", "b", "c", "c"] + ["a", "b", "c"] * 4
    assert list(result) == ["a", "b", "c"]
    assert result["a"].median_ms == pytest.approx(1.0)
    assert result["b"].median_ms == pytest.approx(5.0)
    assert result["c"].median_ms == pytest.approx(2.0)
    assert all(t.repeats == 4 for t in result.values())


@pytest.mark.parametrize("repeats, warmup", [(0, 3), (-1, 0), (5, -1), (2.5, 1), (True, 1)])
def test_bad_counts_raise(repeats, warmup):
    with pytest.raises(ValueError, match="repeats|warmup"):
        time_callable(lambda: None, repeats=repeats, warmup=warmup)
    with pytest.raises(ValueError, match="repeats|warmup"):
        interleaved_timings({"f": lambda: None}, repeats=repeats, warmup=warmup)


def test_bad_callables_raise():
    with pytest.raises(ValueError, match="callable"):
        time_callable(42)
    with pytest.raises(ValueError, match="empty"):
        interleaved_timings({})
    with pytest.raises(ValueError, match=r"\['x'\]"):
        interleaved_timings({"ok": lambda: None, "x": "not a function"})


def test_write_json_round_trip(tmp_path):
    records = [
        {"model": "m", "median_ms": 1.5, "jit": False, "shape": [1, 2]},
        {"model": "n", "median_ms": 2.0, "jit": True, "shape": [3]},
    ]
    path = tmp_path / "sub" / "latency.json"
    write_json(iter(records), path)  # any iterable; parent directories created
    assert json.loads(path.read_text(encoding="utf-8")) == records
    assert os.listdir(path.parent) == ["latency.json"]


@pytest.mark.parametrize("bad", [{"x": float("nan")}, {"x": float("inf")}, {"x": object()}])
def test_write_json_never_half_writes(tmp_path, bad):
    path = tmp_path / "latency.json"
    write_json([{"ok": 1}], path)
    with pytest.raises((ValueError, TypeError)):
        write_json([{"fine": 2}, bad], path)
    # The old file is intact and no temporary file is left behind.
    assert json.loads(path.read_text(encoding="utf-8")) == [{"ok": 1}]
    assert os.listdir(tmp_path) == ["latency.json"]


def test_write_json_failed_rename_keeps_old_file(tmp_path, monkeypatch):
    path = tmp_path / "latency.json"
    write_json([{"ok": 1}], path)

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_json([{"new": 2}], path)
    monkeypatch.undo()
    assert json.loads(path.read_text(encoding="utf-8")) == [{"ok": 1}]
    assert os.listdir(tmp_path) == ["latency.json"]
