"""Run-mode switches (MBERT_FAST, figure paths) and atomic writes."""

import os

import pytest

from mbert_lib import atomic, runtime


@pytest.fixture
def env(monkeypatch, tmp_path):
    """A clean MBERT_* environment and a private temp dir for the fast-mode scratch."""
    monkeypatch.delenv("MBERT_FAST", raising=False)
    monkeypatch.delenv("MBERT_FIGURES_DIR", raising=False)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    return monkeypatch


@pytest.mark.parametrize(
    "value, fast",
    [
        (None, False),
        ("", False),
        ("0", False),
        ("1", True),
        ("true", True),
        (" TRUE ", True),
        ("false", False),
    ],
)
def test_fast_mode_parsing(env, value, fast):
    if value is not None:
        env.setenv("MBERT_FAST", value)
    assert runtime.fast_mode() is fast
    assert runtime.pick("full", "fast") == ("fast" if fast else "full")


@pytest.mark.parametrize("value", ["yes", "2", "fast", "on"])
def test_bad_fast_mode_value_raises_naming_the_variable(env, value):
    env.setenv("MBERT_FAST", value)
    with pytest.raises(ValueError, match="MBERT_FAST"):
        runtime.fast_mode()
    with pytest.raises(ValueError, match="MBERT_FAST"):
        runtime.pick(1, 2)


def test_fast_mode_figures_go_to_scratch_never_into_figures(env, tmp_path):
    env.setenv("MBERT_FAST", "1")
    path = runtime.figure_path("01_nonorm.png")
    figures = runtime.REPO_ROOT / "figures"
    assert path.name == "01_nonorm.png"
    assert path.parent.is_dir()
    assert tmp_path in path.parents
    assert figures != path.parent and figures not in path.parents


def test_full_mode_figures_go_to_the_repository_figures_dir(env):
    env.setenv("MBERT_FAST", "0")
    assert runtime.figure_path("x.png") == runtime.REPO_ROOT / "figures" / "x.png"


def test_figures_dir_override_wins(env, tmp_path):
    env.setenv("MBERT_FAST", "1")
    env.setenv("MBERT_FIGURES_DIR", str(tmp_path / "mine"))
    assert runtime.figure_path("x.png") == tmp_path / "mine" / "x.png"
    assert (tmp_path / "mine").is_dir()


def test_write_text_replaces_the_file(tmp_path):
    path = tmp_path / "sub" / "config.json"
    atomic.write_text(path, "old")
    atomic.write_text(path, "new ✓")
    assert path.read_text(encoding="utf-8") == "new ✓"
    assert os.listdir(path.parent) == ["config.json"]


def test_failure_midway_leaves_the_old_file_intact(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("old content", encoding="utf-8")
    with pytest.raises(RuntimeError, match="disk full"):
        with atomic.atomic_path(path) as tmp:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write("half of the new")
                f.flush()
                raise RuntimeError("disk full")
    assert path.read_text(encoding="utf-8") == "old content"
    assert os.listdir(tmp_path) == ["config.json"]  # the temp file is gone


def test_write_text_that_cannot_be_encoded_leaves_the_old_file(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("old content", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        atomic.write_text(path, "x" * 100_000 + "\ud800")  # lone surrogate: not UTF-8
    assert path.read_text(encoding="utf-8") == "old content"
    assert os.listdir(tmp_path) == ["notes.txt"]


def test_failed_rename_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "notes.txt"
    path.write_text("old content", encoding="utf-8")

    def fail(src, dst):
        raise OSError("rename failed")

    monkeypatch.setattr(atomic.os, "replace", fail)
    with pytest.raises(OSError, match="rename failed"):
        atomic.write_text(path, "new content")
    assert path.read_text(encoding="utf-8") == "old content"
    assert os.listdir(tmp_path) == ["notes.txt"]


def test_stopwatch_prints_the_blocks_wall_time(capsys, monkeypatch):
    clock = iter([100.0, 102.5])
    monkeypatch.setattr(runtime.time, "perf_counter", lambda: next(clock))
    with runtime.stopwatch("exercise 1"):
        pass
    assert capsys.readouterr().out == "exercise 1: 2.5 s wall time\n"


def test_stopwatch_prints_nothing_when_the_block_fails(capsys):
    with pytest.raises(ZeroDivisionError), runtime.stopwatch("exercise 2"):
        _ = 1 / 0
    assert capsys.readouterr().out == ""
