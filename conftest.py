"""Test-run layout for `pytest -n 2 --dist loadgroup` (pytest-xdist, the README's command).

Each item is put in an xdist group; a group runs on one worker, in collection order,
and the longest group, the shared fast run, is collected first:

- `fast_run`: the end-to-end smoke test, which builds the fast-mode run that the
  notebooks reuse (`mbert_lib.pipeline.fast_run_dir`), the tests that read that run,
  and every notebook that opens it (`notebook_context()`), after the test;
- every other test module is a group of its own, so that its module-scoped
  fixtures (a trained model, a two-replica strategy) are built once, not once on
  each worker that gets one of its tests; a notebook that does not read the fast
  run is a group of one.

Without xdist the marks change nothing.
"""

from functools import lru_cache
from pathlib import Path

import pytest

SHARED_FAST_RUN = "fast_run"
READS_FAST_RUN = ("notebook_context(", "fast_run_dir(")
GROUP = pytest.StashKey[str]()


@lru_cache(maxsize=None)
def _reads_fast_run(notebook: str) -> bool:
    """Whether a notebook opens the shared fast-mode run (its py:percent twin says so)."""
    source = Path(notebook).with_suffix(".py")
    text = source.read_text(encoding="utf-8") if source.exists() else Path(notebook).read_text(
        encoding="utf-8")
    return any(call in text for call in READS_FAST_RUN)


def pytest_itemcollected(item):
    """Marked as each item is collected, before xdist reads the marks to name the groups."""
    module = item.nodeid.split("::")[0]
    if module.startswith("tests/test_pipeline_smoke") or (
            module.startswith("notebooks/") and _reads_fast_run(str(item.path))):
        group = SHARED_FAST_RUN
    else:
        group = module
    item.add_marker(pytest.mark.xdist_group(group))
    item.stash[GROUP] = group


def pytest_collection_modifyitems(items):
    """The shared-run group first: it is the longest, so it must not wait for a free worker
    (a stable sort: the smoke test stays ahead of the notebooks; `--no-loadscope-reorder`
    keeps xdist from reordering the groups by size)."""
    items.sort(key=lambda item: item.stash.get(GROUP, None) != SHARED_FAST_RUN)


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
            "xdist 3.8); install the versions in constraints.txt")
