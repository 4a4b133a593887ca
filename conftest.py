"""Test-run layout for `pytest -n 2 --dist loadgroup` (pytest-xdist, the README's command).

The end-to-end smoke test builds the fast-mode run that the notebooks then reuse
(`mbert_lib.pipeline.fast_run_dir`): it and every notebook form one group, so they
run on one worker, in collection order (the test first), while the other worker
takes the remaining tests. Without xdist the marks change nothing.
"""

import pytest

SHARED_FAST_RUN = "fast_run"


def pytest_itemcollected(item):
    """Marked as each item is collected, before xdist reads the marks to name the groups."""
    if (item.nodeid.startswith("notebooks/")
            or item.nodeid.startswith("tests/test_pipeline_smoke.py")):
        item.add_marker(pytest.mark.xdist_group(SHARED_FAST_RUN))
