"""`python -m mbert_lib reproduce`: the paper's pipeline at laptop scale, resumable, step by step.

    core.py      Step / Context / run_steps: records, skipping of finished steps, summary
    eta.py       the time a run has left, from recorded step times (step_seconds.json)
    checks.py    the data directory before a run, a full disk during one
    steps.py     data and teacher steps (thin glue to the library); steps_*.py the others
    steps_report.py  the last step: REPORT.md from every record (mbert_lib.report)
    registry.py  every step module in order; the `laptop` and `smoke` recipes, and
                 `attention_lab`, which runs its own step (steps_lab.py, mbert_lib.lab)
    recipes/     each recipe's settings per step, as data (laptop.yaml, smoke.yaml,
                 attention_lab.yaml), read by recipe_settings.py
    precision.py the bfloat16 opt-in: every trainer step's runtime.mixed_precision
    bundle.py    a finished run's trained steps in one checked file, installed by ensure()

Notebooks use the same steps to get (or make) the artifacts they discuss:
`ensure(["teacher"])` returns the finished step's result, training only what
is missing (after installing the trained steps of bundles/laptop.tar.xz, when
the repository has it: bundle.py).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from mbert_lib.pipeline import bundle, core, precision
from mbert_lib.pipeline.core import (
    DEFAULT_OUT,
    Context,
    DiskFullError,
    PipelineError,
    Step,
    data_dir_or_env,
    run_steps,
    summary_table,
)
from mbert_lib.pipeline.registry import RECIPES, STEPS, get_recipe
from mbert_lib.pipeline.teacher_choice import choose_teacher
from mbert_lib.runtime import REPO_ROOT, fast_mode


def make_context(
    recipe: str = "laptop",
    out_dir: str | None = None,
    data_dir: str | None = None,
    log=print,
    show_progress: bool = True,
    mixed_precision: str = "float32",
    teacher: str | None = None,
) -> Context:
    """A Context for `recipe`, writing under out_dir (default runs/<recipe>).

    mixed_precision "bfloat16" trains every step in bfloat16 (`precision.py`); it is
    refused on a CPU without native bfloat16. teacher: "shipped" or "trained" (None: the
    recipe's; `teacher_choice.py`).
    """
    precision.check_precision(mixed_precision)
    settings = get_recipe(recipe)
    if "teacher" in settings:
        settings = choose_teacher(settings, teacher)
    elif teacher is not None or mixed_precision != "float32":
        raise ValueError(
            f"recipe {recipe!r} trains its own small models: --teacher and --mixed_precision "
            "apply to the reproduction recipes (laptop, smoke)"
        )
    if mixed_precision != "float32":
        settings = precision.with_mixed_precision(settings, mixed_precision)
    out = Path(out_dir) if out_dir else core.DEFAULT_OUT / recipe
    return Context(
        out_dir=out,
        settings=settings,
        data_dir=data_dir_or_env(data_dir),
        log=log,
        show_progress=show_progress,
        recipe=recipe,
    )


def repo_relative_print(message: str) -> None:
    """print(), with paths inside the repository written relative to it (a notebook's
    outputs name no directory of the machine that ran it)."""
    print(str(message).replace(f"{REPO_ROOT}{os.sep}", ""))


def fast_run_dir() -> Path:
    """The scratch directory of the fast-mode (`smoke`) run that notebooks share, and
    that the end-to-end test builds first so the notebooks find every step done."""
    return Path(tempfile.gettempdir()) / "mbert_fast_runs"


def notebook_context(log=repo_relative_print, teacher: str | None = None) -> Context:
    """The context a notebook uses: `laptop` under runs/laptop in a full run (real data
    when MBERT_DATA_DIR is set), `smoke` in `fast_run_dir()` in fast mode, so a
    test run never touches the full run's artifacts. teacher="trained" (notebook 04, which
    looks inside a teacher's pre-training) is a run of its own beside those, whose teacher
    is pre-trained instead of installed from teachers/."""
    suffix = "" if teacher is None else f"-teacher-{teacher}"
    if fast_mode():
        out = fast_run_dir().with_name(fast_run_dir().name + suffix)
        return make_context("smoke", str(out), log=log, show_progress=False, teacher=teacher)
    out = core.DEFAULT_OUT / f"laptop{suffix}"
    ctx = make_context("laptop", str(out), log=log, teacher=teacher)
    ctx.bundle = (
        bundle.DEFAULT_BUNDLE if teacher is None and bundle.DEFAULT_BUNDLE.exists() else None
    )
    return ctx


def install_bundle(ctx: Context) -> None:
    """Installs the steps of ctx's bundle (a notebook's full run, pipeline/bundle.py) that
    are not done yet; a bundle this run cannot use (e.g. other data) is dropped from ctx,
    saying why, and its steps are left to be trained."""
    if ctx.bundle is not None:
        try:
            bundle.install(ctx.bundle, ctx)
        except bundle.BundleError as e:
            ctx.log(f"not using the bundle: {e}")
            ctx.bundle = None


def ensure(names: Sequence[str], ctx: Context) -> dict:
    """Runs the named steps (and what they need) unless done; {name: result}. With a
    bundle in ctx, its steps are installed first instead of trained (install_bundle)."""
    install_bundle(ctx)
    run_steps(STEPS, ctx, only=names)
    return {name: ctx.result(name) for name in names}


__all__ = [
    "DEFAULT_OUT",
    "Context",
    "DiskFullError",
    "PipelineError",
    "RECIPES",
    "STEPS",
    "Step",
    "ensure",
    "install_bundle",
    "fast_run_dir",
    "make_context",
    "notebook_context",
    "run_steps",
    "summary_table",
]
