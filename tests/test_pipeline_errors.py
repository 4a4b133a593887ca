"""Bad input and interruptions of `reproduce`: unknown recipe, unusable data directory, a full
disk (ENOSPC simulated), the partial summary of a failed run, and load averages in records."""

import errno
import json
import os

import pytest

from mbert_lib import atomic
from mbert_lib.cli import main
from mbert_lib.pipeline import checks, core
from mbert_lib.pipeline.core import Context, DiskFullError, PipelineError, Step, run_steps


def _data_dir(root, wikitext=True, sst2=True):
    if wikitext:
        (root / "wikitext-2").mkdir(parents=True)
        (root / "wikitext-2" / "valid.txt").write_text(" = A = \n some text . \n")
    if sst2:
        (root / "glue" / "SST-2").mkdir(parents=True)
        for name in ("train.tsv", "dev.tsv"):
            (root / "glue" / "SST-2" / name).write_text("sentence\tlabel\ngood\t1\n")
    return root


def test_unknown_recipe_names_the_known_ones(tmp_path, capsys):
    assert main(["reproduce", "--recipe", "huge", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown recipe 'huge'" in err and "laptop" in err and "smoke" in err


@pytest.mark.parametrize(
    "command", [["reproduce"], ["bundle", "write"], ["bundle", "install"]], ids=" ".join
)
@pytest.mark.parametrize("value", [["smoke"], []], ids=["with a value", "alone"])
def test_the_former_preset_flag_says_it_was_renamed(tmp_path, capsys, command, value):
    with pytest.raises(SystemExit) as stopped:
        main([*command, "--preset", *value, "--out", str(tmp_path / "run")])
    assert stopped.value.code == 2
    assert "--preset was renamed --recipe" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_missing_data_dir_names_it_and_the_expected_files(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    assert (
        main(
            [
                "reproduce",
                "--recipe",
                "smoke",
                "--data-dir",
                str(missing),
                "--out",
                str(tmp_path / "out"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert str(missing) in err and "does not exist" in err
    assert "wikitext-2/valid.txt" in err and "dev.tsv" in err
    assert not (tmp_path / "out").exists()  # nothing ran


def test_data_dir_without_the_files_lists_what_is_missing(tmp_path):
    root = _data_dir(tmp_path / "d", wikitext=False)
    with pytest.raises(PipelineError) as e:
        checks.check_data_dir(root)
    assert f"missing WikiText-2: none of {root}/wikitext-2/train.txt" in str(e.value)
    assert "missing GLUE SST-2" not in str(e.value)
    root = _data_dir(tmp_path / "e", sst2=False)
    with pytest.raises(
        PipelineError, match=r"missing GLUE SST-2: .*glue/SST-2/\{train.tsv,dev.tsv\}"
    ):
        checks.check_data_dir(root)
    assert checks.check_data_dir(_data_dir(tmp_path / "ok")) == str(tmp_path / "ok")


def test_unreadable_data_dir_is_a_clear_error(tmp_path, monkeypatch):
    root = _data_dir(tmp_path / "d")
    real = os.access
    monkeypatch.setattr(
        checks.os, "access", lambda p, mode: False if str(p) == str(root) else real(p, mode)
    )
    with pytest.raises(PipelineError, match=f"data directory {root} is not readable"):
        checks.check_data_dir(root)
    monkeypatch.setattr(checks.os, "access", lambda p, mode: not str(p).endswith("dev.tsv"))
    with pytest.raises(PipelineError, match=r"not readable: .*SST-2/dev.tsv"):
        checks.check_data_dir(root)


def _ctx(tmp_path):
    return Context(out_dir=tmp_path, settings={}, log=lambda _: None)


def test_enospc_in_a_step_says_how_to_resume_and_the_rerun_resumes(tmp_path):
    calls = []

    def run(ctx, settings):
        calls.append(1)
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "a" / "ckpt"))
        return {"ok": True}

    steps = [Step("a", "first", run)]
    partial = []
    with pytest.raises(DiskFullError) as e:
        run_steps(steps, _ctx(tmp_path), records=partial)
    message = str(e.value)
    assert "disk full while step 'a'" in message and str(tmp_path / "a" / "ckpt") in message
    assert "run the same command again" in message and "resumes" in message
    assert not (tmp_path / "a" / "step.json").exists()
    assert partial[0]["failed"] and core.status(partial[0]) == "FAILED"
    assert "FAILED" in core.summary_table(partial)
    run_steps(steps, _ctx(tmp_path))
    assert len(calls) == 2 and (tmp_path / "a" / "step.json").exists()


def test_enospc_while_writing_the_record_leaves_no_half_file(tmp_path, monkeypatch):
    class FullDisk:
        def __init__(self, path, *args, **kwargs):
            self.f = open(path, *args, **kwargs)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, text):
            self.f.write(text[: len(text) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic, "open", FullDisk, raising=False)
    with pytest.raises(DiskFullError, match="disk full while step 'a'"):
        run_steps([Step("a", "first", lambda ctx, s: {"x": 1})], _ctx(tmp_path))
    assert os.listdir(tmp_path / "a") == []  # no step.json, no temp file


def test_tensorflow_disk_full_error_is_recognised():
    import tensorflow as tf

    error = tf.errors.ResourceExhaustedError(
        None, None, "/run/ckpt-3_temp/part-00000; No space left on device"
    )
    assert checks.is_disk_full(error)
    assert not checks.is_disk_full(tf.errors.ResourceExhaustedError(None, None, "OOM"))
    assert not checks.is_disk_full(OSError(errno.EACCES, "denied"))


def test_failed_cli_run_prints_the_partial_summary(tmp_path, monkeypatch, capsys):
    import mbert_lib.pipeline as pipeline

    def full(ctx, settings):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(
        pipeline, "STEPS", [Step("a", "first", lambda c, s: {}), Step("b", "second", full)]
    )
    assert main(["reproduce", "--recipe", "smoke", "--out", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "[1/2] first" in captured.out and "[2/2] second" in captured.out
    assert "FAILED" in captured.out and "run the same command again" in captured.out
    assert "disk full while step 'b'" in captured.err


def test_record_holds_load_average_at_start_and_end(tmp_path, monkeypatch):
    loads = iter([(1.0, 2.0, 3.0), (4.0, 5.0, 6.0)])
    monkeypatch.setattr(core.os, "getloadavg", lambda: next(loads))
    run_steps([Step("a", "first", lambda ctx, s: {})], _ctx(tmp_path))
    record = json.loads((tmp_path / "a" / "step.json").read_text())
    assert record["load_average"] == {"start": [1.0, 2.0, 3.0], "end": [4.0, 5.0, 6.0]}
    assert record["cpu_count"] == os.cpu_count()


def test_a_rerun_step_runs_every_time(tmp_path):
    calls = []
    steps = [
        Step("a", "first", lambda c, s: calls.append("a") or {}),
        Step("r", "report", lambda c, s: calls.append("r") or {}, rerun=True),
    ]
    run_steps(steps, _ctx(tmp_path))
    second = run_steps(steps, _ctx(tmp_path))
    assert calls == ["a", "r", "r"] and [r["skipped"] for r in second] == [True, False]


def test_reproduce_refuses_a_file_as_its_output_and_an_empty_step_list(tmp_path, capsys):
    not_a_dir = tmp_path / "out.txt"
    not_a_dir.write_text("x")
    assert main(["reproduce", "--recipe", "smoke", "--out", str(not_a_dir)]) == 2
    assert f"--out {not_a_dir} is a file" in capsys.readouterr().err
    assert (
        main(["reproduce", "--recipe", "smoke", "--out", str(tmp_path / "run"), "--steps", " , "])
        == 2
    )
    assert "--steps names no step" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_ctrl_c_says_how_to_resume_instead_of_a_traceback(monkeypatch, capsys):
    from mbert_lib.cli import presets

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(presets, "run", interrupted)
    assert main(["presets"]) == 130
    assert "run the same command again to resume" in capsys.readouterr().err
