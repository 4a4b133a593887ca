"""The latency step's records, read from the smoke run that test_pipeline_smoke.py builds
(the same xdist group, so it has run; on its own, `ensure` runs the step)."""

import json

import pytest

from mbert_lib.bench import tflite_latency
from mbert_lib.pipeline import ensure, fast_run_dir, make_context

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

FIELDS = {
    "model",
    "normalization_type",
    "hidden_act",
    "precision",
    "threads",
    "seq_length",
    "median_ms",
    "size_bytes",
}


def test_latency_step_writes_the_bench_records():
    ctx = make_context("smoke", str(fast_run_dir()), log=lambda _: None, show_progress=False)
    settings = ctx.settings["latency"]
    result = ensure(["latency"], ctx)["latency"]
    records = result["records"]
    with open(result["records_path"], encoding="utf-8") as f:
        assert json.load(f) == records
    grid = {
        (r["normalization_type"], r["hidden_act"])
        for r in records
        if r["model"] == "tiny_mobilebert" and r["precision"] == "fp32"
    }
    assert grid == set(tflite_latency.TABLE7_GRID)
    assert {r["model"] for r in records} == {"tiny_mobilebert", "tiny_bert"}
    assert {(r["precision"], r["threads"]) for r in records} == {
        (p, n) for p in settings["precisions"] for n in settings["threads"]
    }
    for r in records:
        assert FIELDS <= set(r)
        assert r["seq_length"] == settings["seq_length"]
        assert r["median_ms"] > 0 and r["size_bytes"] > 0
    left = sorted(p.name for p in ctx.step_dir("latency").iterdir())
    assert left == ["latency.json", "step.json"], f"the .tflite files stay after timing: {left}"
