"""The core: the modules a reader of the paper needs, closed under import, no tooling.

The paper's modules (PAPER: the model, its layers and config; the losses, the
transfer plan, the step and progressive transfer; the optimizer) and every
mbert_lib module they import, however indirectly, form the core. This test fails
when the core imports tooling (the pipeline, reports, benchmarks, exports,
conversions, figures, tables, the CLI) or the run machinery around training
(checkpoints, progress bars, run directories, data), and when the README's
account of the core's size no longer matches it.
"""

from __future__ import annotations

import re

from mbert_lib.runtime import REPO_ROOT
from tests.test_layering import ROOT, import_graph

PAPER = (
    "mbert_lib.config",
    "mbert_lib.layers",
    "mbert_lib.models",
    "mbert_lib.optim",
    "mbert_lib.distill.losses",
    "mbert_lib.distill.plan",
    "mbert_lib.distill.objective",
    "mbert_lib.distill.step",
    "mbert_lib.distill.progressive",
    "mbert_lib.train.step",
)
TOOLING = ("pipeline", "report", "bench", "export", "convert", "viz", "tables", "cli")
RUN_MACHINERY = (
    "mbert_lib.checkpoints",
    "mbert_lib.data",
    "mbert_lib.train.checkpointing",
    "mbert_lib.train.loop",
    "mbert_lib.train.progress",
    "mbert_lib.train.run",
    "mbert_lib.train.run_dir",
    "mbert_lib.distill.trainer",
)


def core_modules(graph: dict[str, set[str]]) -> set[str]:
    """PAPER, their submodules, and everything they import."""
    found, todo = set(), [m for m in graph if m.startswith(PAPER)]
    while todo:
        module = todo.pop()
        if module not in found:
            found.add(module)
            todo.extend(graph[module])
    return found


def source_lines(module: str) -> int:
    path = ROOT.parent / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = ROOT.parent / module.replace(".", "/") / "__init__.py"
    return len(path.read_text(encoding="utf-8").splitlines())


def test_the_core_imports_no_tooling_and_no_run_machinery():
    core = core_modules(import_graph())
    tooling = sorted(m for m in core if m.split(".")[1] in TOOLING)
    assert not tooling, f"the core imports tooling: {tooling}"
    machinery = sorted(m for m in core if m.startswith(RUN_MACHINERY))
    assert not machinery, f"the core imports the run machinery: {machinery}"


def test_the_core_finds_the_modules_it_should():
    core = core_modules(import_graph())
    assert {"mbert_lib.layers.attention", "mbert_lib.optim.lamb", "mbert_lib.config"} <= core
    assert "mbert_lib.distill.trainer" not in core


def test_the_readme_states_the_cores_size():
    core = core_modules(import_graph())
    lines = sum(source_lines(m) for m in core)
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    stated = re.search(r"The core is ([\d,]+) lines in (\d+) modules", readme)
    assert stated, "README.md: no sentence 'The core is N lines in M modules'"
    assert (int(stated[1].replace(",", "")), int(stated[2])) == (lines, len(core)), (
        f"README.md says {stated[0]!r}; the core is {lines:,} lines in {len(core)} modules"
    )
