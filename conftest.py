"""Test-run layout for `pytest -n 2 --dist loadgroup` (pytest-xdist, the README's command).

Each item is put in an xdist group; a group runs on one worker, in collection order,
and a worker takes the next group when it has run out:

- `fast_run`: the end-to-end smoke test, which builds the fast-mode run that the
  notebooks reuse (`mbert_lib.pipeline.fast_run_dir`), and the bundle tests that read
  that run; collected first, it starts at once on one worker;
- `fast_run_seeds`: the optional `distill_seeds` step added to that run
  (tests/test_pipeline_seeds.py); it waits for `fast_run`, and only the notebooks that
  read that step (06 and its solutions) wait for it;
- `fast_lab`: tests/test_lab.py, which trains the tiny attention lab
  (`mbert_lib.pipeline.steps_lab.fast_lab_dir`), then notebook 10 and its solutions,
  which read it: one worker, in that order, so the lab trains once;
- every other test module is a group of its own, so that its module-scoped
  fixtures (a trained model, a two-replica strategy) are built once, not once on
  each worker that gets one of its tests; each notebook is a group of one;
- the notebooks that open the shared run (`notebook_context()`) are collected last,
  so both workers share them, and each waits, before it starts, until the shared
  groups it reads have finished in this pytest run (`built_by`): by then every step
  it opens is done, and none of them trains into the run while a shared group does.

Without xdist the marks change nothing, and the collection order does the same.
Every notebook is also marked `slow`, as are the pipeline, training and client tests in
their modules: `pytest -m "not slow"` is the few-minute run.
"""

import os
import time
from functools import cache
from pathlib import Path

import pytest

SHARED_FAST_RUN = "fast_run"
FAST_RUN_SEEDS = "fast_run_seeds"
SHARED_GROUPS = (SHARED_FAST_RUN, FAST_RUN_SEEDS)
FAST_LAB = "fast_lab"
READS_FAST_RUN = ("notebook_context(", "fast_run_dir(")
READS_SEEDS = "distill_seeds"
WAIT_FOR_FAST_RUN_S = 3600
GROUP = pytest.StashKey[str]()
WAITS_FOR = pytest.StashKey[tuple]()
READER = pytest.StashKey[bool]()


@cache
def _source(notebook: str) -> str:
    """A notebook's text, from its py:percent twin where there is one."""
    source = Path(notebook).with_suffix(".py")
    return (source if source.exists() else Path(notebook)).read_text(encoding="utf-8")


def built_by(group: str = SHARED_FAST_RUN) -> Path:
    """Holds the xdist run id of the pytest run in which shared `group` last finished."""
    from mbert_lib.pipeline import fast_run_dir

    directory = fast_run_dir()
    suffix = "" if group == SHARED_FAST_RUN else f"-{group}"
    return directory.with_name(f"{directory.name}.built-by{suffix}")


def _group(module: str) -> str:
    if module.startswith("tests/test_pipeline_smoke"):
        return SHARED_FAST_RUN
    if module == "tests/test_lab.py" or "10_attention_lab" in module:
        return FAST_LAB
    return FAST_RUN_SEEDS if module == "tests/test_pipeline_seeds.py" else module


def pytest_itemcollected(item):
    """Marked as each item is collected, before xdist reads the marks to name the groups."""
    module = item.nodeid.split("::")[0]
    group = _group(module)
    reader = module.startswith("notebooks/") and any(
        call in _source(str(item.path)) for call in READS_FAST_RUN
    )
    if reader:
        seeds = (FAST_RUN_SEEDS,) if READS_SEEDS in _source(str(item.path)) else ()
        waits = (SHARED_FAST_RUN, *seeds)
    else:
        waits = (SHARED_FAST_RUN,) if group == FAST_RUN_SEEDS else ()
    item.stash[READER], item.stash[WAITS_FOR], item.stash[GROUP] = reader, waits, group
    item.add_marker(pytest.mark.xdist_group(group))
    if module.startswith("notebooks/"):
        item.add_marker(pytest.mark.slow)  # `pytest -m "not slow"` leaves every notebook out


def pytest_collection_modifyitems(items):
    """The shared-run group first (the longest: it must not wait for a free worker), then
    the other tests, the seeds group, and the notebooks that read the shared run last: the
    longer solution notebooks first among them, those that wait for the seeds group at the
    very end (a stable sort; `--no-loadscope-reorder` keeps xdist from reordering the
    groups by size)."""

    def rank(item):
        group = item.stash.get(GROUP, None)
        if group == SHARED_FAST_RUN:
            return (0, 0)
        if group == FAST_RUN_SEEDS:
            return (2, 0)
        if not item.stash.get(READER, False):
            return (1, 0)
        waits_for_seeds = FAST_RUN_SEEDS in item.stash.get(WAITS_FOR, ())
        return (3 + waits_for_seeds, 0 if "/solutions/" in item.nodeid else 1)

    items.sort(key=rank)


def pytest_collection_finish(session):
    """Under `--dist loadgroup`, xdist tags each node id with its group ("...@fast_run");
    without the tags the groups are split across workers and the notebooks race the test
    that builds their run, so stop here instead."""
    if not session.config.getoption("loadgroup", default=False):
        return
    untagged = [item.nodeid for item in session.items if "@" not in item.nodeid]
    if untagged:
        raise pytest.UsageError(
            f"pytest-xdist did not tag {len(untagged)} node ids with their xdist_group (e.g. "
            f"{untagged[0]}): this pytest and pytest-xdist do not work together (pytest 9 with "
            "xdist 3.8); install the versions in constraints.txt"
        )


def _run_id():
    return os.environ.get("PYTEST_XDIST_TESTRUNUID")


def pytest_runtest_setup(item):
    """An item that reads a shared group's run waits for that group to finish (under
    xdist, when the group is part of this run)."""
    run_id = _run_id()
    if not run_id:
        return
    present = {other.stash.get(GROUP, None) for other in item.session.items}
    for group in item.stash.get(WAITS_FOR, ()):
        if group not in present:
            continue
        marker, deadline = built_by(group), time.monotonic() + WAIT_FOR_FAST_RUN_S
        while not (marker.exists() and marker.read_text(encoding="utf-8") == run_id):
            if time.monotonic() > deadline:
                pytest.fail(
                    f"the `{group}` group did not finish within "
                    f"{WAIT_FOR_FAST_RUN_S} s ({marker} does not name this run)"
                )
            time.sleep(2)


def pytest_runtest_teardown(item, nextitem):
    """The last item of a shared group on its worker marks the group done in this run."""
    run_id, group = _run_id(), item.stash.get(GROUP, None)
    if (
        run_id
        and group in SHARED_GROUPS
        and (nextitem is None or nextitem.stash.get(GROUP, None) != group)
    ):
        built_by(group).write_text(run_id, encoding="utf-8")
