"""Test-run layout for `pytest -n 2 --dist loadgroup` (pytest-xdist, the README's command).

Each item is put in an xdist group; a group runs on one worker, in collection order,
and a worker takes the next group when it has run out:

- `fast_run`: the end-to-end smoke test, which builds the fast-mode run that the
  notebooks reuse (`mbert_lib.pipeline.fast_run_dir`), and the tests that read that
  run; collected first, it starts at once on one worker;
- every other test module is a group of its own, so that its module-scoped
  fixtures (a trained model, a two-replica strategy) are built once, not once on
  each worker that gets one of its tests; each notebook is a group of one;
- the notebooks that open the shared run (`notebook_context()`) are collected last,
  so both workers share them, and each waits, before it starts, until the
  `fast_run` group of this pytest run has finished (`built_by`): by then
  every step they open is done, and none of them trains into the run while the
  smoke test does.

Without xdist the marks change nothing, and the collection order does the same.
"""

import os
import time
from functools import cache
from pathlib import Path

import pytest

SHARED_FAST_RUN = "fast_run"
READS_FAST_RUN = ("notebook_context(", "fast_run_dir(")
WAIT_FOR_FAST_RUN_S = 3600
GROUP = pytest.StashKey[str]()
READER = pytest.StashKey[bool]()


@cache
def _reads_fast_run(notebook: str) -> bool:
    """Whether a notebook opens the shared fast-mode run (its py:percent twin says so)."""
    source = Path(notebook).with_suffix(".py")
    text = (
        source.read_text(encoding="utf-8")
        if source.exists()
        else Path(notebook).read_text(encoding="utf-8")
    )
    return any(call in text for call in READS_FAST_RUN)


def built_by() -> Path:
    """Holds the xdist run id of the pytest run whose `fast_run` group last finished."""
    from mbert_lib.pipeline import fast_run_dir

    directory = fast_run_dir()
    return directory.with_name(directory.name + ".built-by")


def pytest_itemcollected(item):
    """Marked as each item is collected, before xdist reads the marks to name the groups."""
    module = item.nodeid.split("::")[0]
    item.stash[READER] = module.startswith("notebooks/") and _reads_fast_run(str(item.path))
    group = SHARED_FAST_RUN if module.startswith("tests/test_pipeline_smoke") else module
    item.add_marker(pytest.mark.xdist_group(group))
    item.stash[GROUP] = group


def pytest_collection_modifyitems(items):
    """The shared-run group first (the longest: it must not wait for a free worker), the
    notebooks that read its run last, the longer solution notebooks first among them (a
    stable sort; `--no-loadscope-reorder` keeps xdist from reordering the groups by size)."""

    def rank(item):
        if item.stash.get(GROUP, None) == SHARED_FAST_RUN:
            return 0
        if not item.stash.get(READER, False):
            return 1
        return 2 if "/solutions/" in item.nodeid else 3

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
    """A notebook that reads the shared run waits for this run's `fast_run` group (under
    xdist, when that group is part of the run)."""
    run_id = _run_id()
    if not (run_id and item.stash.get(READER, False)) or not any(
        other.stash.get(GROUP, None) == SHARED_FAST_RUN for other in item.session.items
    ):
        return
    marker, deadline = built_by(), time.monotonic() + WAIT_FOR_FAST_RUN_S
    while not (marker.exists() and marker.read_text(encoding="utf-8") == run_id):
        if time.monotonic() > deadline:
            pytest.fail(
                f"the `{SHARED_FAST_RUN}` group did not finish within "
                f"{WAIT_FOR_FAST_RUN_S} s ({marker} does not name this run)"
            )
        time.sleep(2)


def pytest_runtest_teardown(item, nextitem):
    """The last `fast_run` item on its worker marks the shared run as built by this run."""
    run_id = _run_id()
    if (
        run_id
        and item.stash.get(GROUP, None) == SHARED_FAST_RUN
        and (nextitem is None or nextitem.stash.get(GROUP, None) != SHARED_FAST_RUN)
    ):
        built_by().write_text(run_id, encoding="utf-8")
