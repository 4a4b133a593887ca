"""The reproduce pipeline's bookkeeping: finished steps are skipped, changed ones re-run."""

import json

import pytest

from mbert_lib.pipeline.core import Context, PipelineError, Step, read_record, run_steps
from tests.helpers import strict_json_loads


def _steps(calls, fail_on=None):
    def make(name):
        def run(ctx, settings):
            calls.append(name)
            if name == fail_on:
                raise RuntimeError(f"{name} killed")
            (ctx.step_dir(name) / "out.txt").write_text(str(settings))
            return {"value": settings.get("x", 0)}

        return run

    return [
        Step("a", "first", make("a")),
        Step("b", "second", make("b"), ("a",)),
        Step("c", "third", make("c")),
    ]


def _ctx(tmp_path, settings=None):
    return Context(
        out_dir=tmp_path, settings=settings or {"a": {"x": 1}, "b": {"x": 2}}, log=lambda _: None
    )


def test_second_run_skips_every_finished_step(tmp_path):
    calls = []
    first = run_steps(_steps(calls), _ctx(tmp_path))
    second = run_steps(_steps(calls), _ctx(tmp_path))
    assert calls == ["a", "b", "c"]
    assert [r["skipped"] for r in first] == [False] * 3
    assert [r["skipped"] for r in second] == [True] * 3
    assert second[1]["result"] == {"value": 2}


def test_changed_settings_rerun_the_step_and_its_dependents(tmp_path):
    calls = []
    run_steps(_steps(calls), _ctx(tmp_path))
    calls.clear()
    run_steps(_steps(calls), _ctx(tmp_path, {"a": {"x": 5}, "b": {"x": 2}}))
    assert calls == ["a", "b"]  # c does not depend on a


def test_outputs_of_old_settings_are_moved_aside_before_the_step_runs_again(tmp_path):
    seen = []

    def run(ctx, settings):
        seen.append(sorted(p.name for p in ctx.step_dir("a").iterdir()))
        (ctx.step_dir("a") / f"ckpt-{settings['x']}").write_text("")
        return {}

    steps = [Step("a", "first", run)]
    run_steps(steps, _ctx(tmp_path))
    old = read_record(tmp_path / "a")["fingerprint"]
    run_steps(steps, _ctx(tmp_path, {"a": {"x": 5}}))
    assert seen == [[], []], "the second run must start from an empty directory"
    assert sorted(p.name for p in (tmp_path / f"a.stale-{old}").iterdir()) == [
        "ckpt-1",
        "step.json",
    ]


def test_a_killed_step_leaves_no_record_and_runs_again(tmp_path):
    calls = []
    with pytest.raises(RuntimeError, match="b killed"):
        run_steps(_steps(calls, fail_on="b"), _ctx(tmp_path))
    assert read_record(tmp_path / "a") is not None and read_record(tmp_path / "b") is None
    calls.clear()
    run_steps(_steps(calls), _ctx(tmp_path))
    assert calls == ["b", "c"]


def test_only_runs_the_named_steps_and_their_dependencies(tmp_path):
    calls = []
    run_steps(_steps(calls), _ctx(tmp_path), only=["b"])
    assert calls == ["a", "b"]
    with pytest.raises(PipelineError, match="unknown step"):
        run_steps(_steps(calls), _ctx(tmp_path), only=["zzz"])


def test_corrupt_record_is_a_clear_error(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "step.json").write_text("{not json")
    with pytest.raises(PipelineError, match="delete it to re-run"):
        run_steps(_steps([]), _ctx(tmp_path))


def test_record_holds_result_settings_and_time(tmp_path):
    run_steps(_steps([]), _ctx(tmp_path))
    record = json.loads((tmp_path / "b" / "step.json").read_text())
    assert record["result"] == {"value": 2} and record["settings"] == {"x": 2}
    assert record["seconds"] >= 0 and len(record["fingerprint"]) == 16


def test_an_optional_step_runs_only_when_named(tmp_path):
    calls = []
    steps = _steps(calls) + [
        Step("extra", "optional", lambda ctx, s: calls.append("extra") or {}, ("a",), optional=True)
    ]
    full = run_steps(steps, _ctx(tmp_path))
    assert calls == ["a", "b", "c"] and [r["step"] for r in full] == ["a", "b", "c"]
    calls.clear()
    named = run_steps(steps, _ctx(tmp_path), only=["extra"])
    assert calls == ["extra"]  # its dependency "a" is done: skipped
    assert [(r["step"], r["skipped"]) for r in named] == [("a", True), ("extra", False)]


def test_a_nan_in_a_result_is_written_as_null_in_strict_json(tmp_path):
    def one_seed(ctx, settings):
        return {"mean": 0.75, "std": float("nan"), "values": [0.75, float("inf")]}

    run_steps([Step("a", "first", one_seed)], _ctx(tmp_path))
    record = strict_json_loads((tmp_path / "a" / "step.json").read_text())
    assert record["result"] == {"mean": 0.75, "std": None, "values": [0.75, None]}


def test_a_second_run_into_a_directory_in_use_is_refused_naming_the_first(tmp_path):
    from mbert_lib.run_lock import RunLockedError
    from tests.helpers import lock_held_by_another_process

    calls = []
    with lock_held_by_another_process(tmp_path) as pid:
        with pytest.raises(RunLockedError, match=rf"in use by another run \(pid {pid} on "):
            run_steps(_steps(calls), _ctx(tmp_path))
        assert calls == [] and not (tmp_path / "a").exists()
    run_steps(_steps(calls), _ctx(tmp_path))  # the lock went with its process
    assert calls == ["a", "b", "c"]


def test_a_run_with_nothing_to_do_reads_the_records_without_the_lock(tmp_path):
    from mbert_lib.run_lock import run_lock

    calls = []
    run_steps(_steps(calls), _ctx(tmp_path))
    with run_lock(tmp_path):  # held; flock refuses even this process's second open file
        records = run_steps(_steps(calls), _ctx(tmp_path))
    assert [r["skipped"] for r in records] == [True] * 3 and calls == ["a", "b", "c"]


def _records_only(ctx, name):
    """What a bundle leaves of a finished step: its record and the mark, no outputs."""
    from mbert_lib.step_records import RECORDS_ONLY_FILE

    directory = ctx.step_dir(name)
    for path in directory.iterdir():
        if path.name != "step.json":
            path.unlink()
    (directory / RECORDS_ONLY_FILE).write_text("{}")


def test_a_step_in_its_records_only_is_read_and_trained_when_a_later_step_needs_it(tmp_path):
    calls, logged = [], []
    ctx = _ctx(tmp_path)
    run_steps(_steps(calls), ctx)
    _records_only(ctx, "a")
    ctx.log = logged.append
    calls.clear()
    read = run_steps(_steps(calls), ctx, only=["a"])
    assert calls == [] and read[0]["result"] == {"value": 1}  # read, not trained
    assert any("its records only" in line for line in logged)
    (tmp_path / "b" / "step.json").unlink()  # b must run, and b reads a's outputs
    run_steps(_steps(calls), ctx, only=["b"])
    assert calls == ["a", "b"]
    assert (tmp_path / "a" / "out.txt").exists() and not (
        tmp_path / "a" / "records_only.json"
    ).exists()
    assert (tmp_path / f"a.stale-{read[0]['fingerprint']}" / "records_only.json").exists()
    calls.clear()
    run_steps(_steps(calls), ctx)  # trained now: a later run skips it
    assert calls == []


def test_a_step_that_only_reads_records_leaves_a_records_only_input_alone(tmp_path):
    calls = []
    steps = _steps(calls) + [
        Step("report", "summary", lambda ctx, s: calls.append("report") or {}, ("a",), rerun=True)
    ]
    ctx = _ctx(tmp_path)
    run_steps(steps, ctx)
    _records_only(ctx, "a")
    calls.clear()
    run_steps(steps, ctx)
    assert calls == ["report"]
