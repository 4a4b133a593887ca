"""mbert_lib's shape: its packages form layers, and nothing imports upward or in a circle.

LAYERS names every top-level package and module of mbert_lib, lowest first. A
package may import only from layers below its own, and within a package the
modules import each other without a circle. Imports are read from the source
(`ast`), function bodies included, so an import hidden inside a function to
dodge a circle still counts. `from package import name` counts as an import of
the submodule `package.name` when there is one, else of the package's
`__init__`.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from mbert_lib.runtime import REPO_ROOT

ROOT = REPO_ROOT / "mbert_lib"

# Lowest first; a package may import from the layers before its own.
LAYERS = (
    {
        "atomic",
        "hardware",
        "paired",
        "paper",
        "quiet_start",
        "run_lock",
        "runtime",
        "step_records",
        "strict_json",
    },  # no mbert_lib imports
    {"config", "config_tree", "layers"},  # the model's vocabulary
    {"models", "experiment"},  # Keras models; the yaml schema
    {"checkpoints", "anatomy", "optim", "data"},  # what models are made of
    {"train"},  # the training loop, pre-training
    {"compress"},  # pruning beyond the paper: tfmot on our layers
    {"distill", "finetune"},  # the other two trainers
    {"lab"},  # the attention-transfer lab on a generated task
    {"convert"},  # released checkpoints in: TF1, Hugging Face
    {"export"},  # trained models out: TFLite, Hugging Face, SavedModel
    {"bench"},  # benchmarks
    {"tables"},  # paper-vs-ours tables
    {"viz"},  # figures
    {"report"},  # REPORT.md
    {"pipeline"},  # `reproduce`
    {"cli"},  # the commands
    {"__main__"},
)


def _module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """{module: the mbert_lib modules it imports}, from every .py under `root`."""
    modules = {_module_name(p, root.parent): p for p in root.rglob("*.py")}
    graph = defaultdict(set)
    for name, path in modules.items():
        graph[name]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                subs = [
                    f"{node.module}.{a.name}"
                    for a in node.names
                    if f"{node.module}.{a.name}" in modules
                ]
                targets = subs + ([node.module] if len(subs) < len(node.names) else [])
            else:
                continue
            graph[name].update(t for t in targets if t in modules and t != name)
    return dict(graph)


def top_level(module: str) -> str:
    """mbert_lib.data.corpus -> "data"; mbert_lib -> "" (the package root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_violations(graph: dict[str, set[str]], layers=LAYERS) -> list[str]:
    """One line per import from a package to one in its own or a higher layer."""
    rank = {name: i for i, layer in enumerate(layers) for name in layer}
    problems = []
    for module, targets in sorted(graph.items()):
        source = top_level(module)
        for target in sorted(targets):
            dest = top_level(target)
            if not source or not dest or source == dest:
                continue  # the root re-exports the model API; a package's own modules
            if rank[dest] >= rank[source]:
                problems.append(
                    f"{module} imports {target}: layer {rank[source]} ({source}) "
                    f"-> layer {rank[dest]} ({dest})"
                )
    return problems


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles among modules (strongly connected components of more than one)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = _pop_component(stack, on_stack, v)
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _pop_component(stack: list[str], on_stack: set[str], root: str) -> list[str]:
    """Pops Tarjan's stack down to `root` (inclusive), taking each off `on_stack`; returns
    the popped modules, the strongly connected component of `root`, last pushed first."""
    component = []
    while True:
        w = stack.pop()
        on_stack.discard(w)
        component.append(w)
        if w == root:
            return component


GRAPH = import_graph()


def test_every_package_has_a_layer():
    named = set().union(*LAYERS)
    packages = {top_level(m) for m in GRAPH} - {""}
    assert packages - named == set(), "add the new package to LAYERS"
    assert named - packages == set(), "LAYERS names a package that no longer exists"


def test_no_package_imports_its_own_layer_or_above():
    assert layer_violations(GRAPH) == []


def test_no_import_circles():
    assert circles(GRAPH) == []


def test_the_checks_catch_a_circle_and_an_upward_import(tmp_path):
    """The same checks on a made-up package: data -> pipeline is upward, and a <-> b circle."""
    package = tmp_path / "mbert_lib"
    (package / "data").mkdir(parents=True)
    (package / "pipeline").mkdir()
    for path, text in {
        "__init__.py": "",
        "data/__init__.py": "",
        "data/a.py": "from mbert_lib.data import b\n",
        "data/b.py": "def f():\n    from mbert_lib.data.a import x\n",
        "pipeline/__init__.py": "",
        "data/up.py": "from mbert_lib.pipeline import run\n",
    }.items():
        (package / path).write_text(text, encoding="utf-8")
    graph = import_graph(package)
    assert circles(graph) == [["mbert_lib.data.a", "mbert_lib.data.b"]]
    assert layer_violations(graph, ({"data"}, {"pipeline"})) == [
        "mbert_lib.data.up imports mbert_lib.pipeline: layer 0 (data) -> layer 1 (pipeline)"
    ]
    assert layer_violations(graph, ({"pipeline"}, {"data"})) == []  # downward: allowed


REASON = "on use:"


def unexplained_deferred_imports(root: Path = ROOT) -> list[str]:
    """Imports inside a function with no `# on use: <why>` comment: on the statement's
    first line, or on the line just above the run of imports it belongs to."""
    out = []
    for path in sorted(root.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        tree = ast.parse("\n".join(lines))
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for block in ast.walk(function):
                body = getattr(block, "body", None)
                if not isinstance(body, list) or (
                    block is not function
                    and isinstance(block, (ast.FunctionDef, ast.AsyncFunctionDef))
                ):
                    continue
                group_start = None
                for statement in body:
                    if not isinstance(statement, (ast.Import, ast.ImportFrom)):
                        group_start = None
                        continue
                    group_start = group_start or statement.lineno
                    above = lines[group_start - 2] if group_start >= 2 else ""
                    if REASON not in lines[statement.lineno - 1] and REASON not in above:
                        where = path.relative_to(root.parent)
                        out.append(
                            f"{where}:{statement.lineno}: {lines[statement.lineno - 1].strip()}"
                        )
    return out


def test_every_import_inside_a_function_says_why():
    """Imports belong at the top; the few that wait for their function (to keep --help free
    of TensorFlow, an optional front end, a runtime of its own) say so."""
    assert unexplained_deferred_imports() == []


def test_the_reason_check_catches_a_silent_deferred_import(tmp_path):
    package = tmp_path / "mbert_lib"
    package.mkdir()
    (package / "a.py").write_text(
        "def f():\n    # on use: heavy\n    import json\n    import os\n\n"
        "def g():\n    import sys  # on use: heavy\n\n"
        "def h():\n    x = 1\n    import re\n    return x\n"
    )
    assert unexplained_deferred_imports(package) == ["mbert_lib/a.py:11: import re"]
