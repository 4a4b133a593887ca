"""Every notebooks/NN_topic.py has its NN_topic.ipynb twin, with the same cells.

The .py (jupytext py:percent) is the reviewed source; the .ipynb carries the
outputs of a full run. They drift when someone edits one and forgets
`jupytext --sync`; this compares their cell sources the way jupytext does.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import jupytext
import nbformat

from mbert_lib.runtime import REPO_ROOT

NOTEBOOKS = REPO_ROOT / "notebooks"


def _cells(path: Path) -> list[tuple[str, str]]:
    fmt = "py:percent" if path.suffix == ".py" else None
    notebook = jupytext.read(path, fmt=fmt)
    return [(cell.cell_type, cell.source.strip()) for cell in notebook.cells]


def _first_difference(a: list, b: list) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            diff = difflib.unified_diff(
                x[1].splitlines(), y[1].splitlines(), ".py", ".ipynb", lineterm="", n=0
            )
            return f"cell {i} ({x[0]} vs {y[0]}): " + " | ".join(list(diff)[2:6])
    return f"{len(a)} cells in .py vs {len(b)} in .ipynb"


def pair_problems(directory: Path) -> list[str]:
    """One line per unpaired file or disagreeing pair in `directory`."""
    sources = {p.stem: p for p in directory.glob("*.py")}
    notebooks = {p.stem: p for p in directory.glob("*.ipynb")}
    problems = [
        f"{sources[s].name}: no paired .ipynb" for s in sorted(sources.keys() - notebooks.keys())
    ]
    problems += [
        f"{notebooks[s].name}: no paired .py" for s in sorted(notebooks.keys() - sources.keys())
    ]
    for stem in sorted(sources.keys() & notebooks.keys()):
        a, b = _cells(sources[stem]), _cells(notebooks[stem])
        if a != b:
            problems.append(f"{stem}.py / {stem}.ipynb differ: {_first_difference(a, b)}")
    return problems


def test_repository_notebook_pairs_agree():
    """The student notebooks and the instructor copies in notebooks/solutions/."""
    problems = [
        problem
        for directory in (NOTEBOOKS, NOTEBOOKS / "solutions")
        if directory.is_dir()
        for problem in pair_problems(directory)
    ]
    assert not problems, (
        "notebook pairs out of sync (run `jupytext --sync` on them):\n" + "\n".join(problems)
    )


SOURCE = """# %% [markdown]
# # NoNorm
# $$\\mathrm{NoNorm}(h) = \\gamma \\circ h + \\beta$$

# %%
x = 2 * 3

# %%
assert x == 6
"""


def _make_pair(directory: Path, stem: str) -> tuple[Path, Path]:
    py = directory / f"{stem}.py"
    py.write_text(SOURCE, encoding="utf-8")
    ipynb = directory / f"{stem}.ipynb"
    jupytext.write(jupytext.read(py, fmt="py:percent"), ipynb)
    return py, ipynb


def test_a_fresh_pair_agrees_even_with_outputs(tmp_path):
    _, ipynb = _make_pair(tmp_path, "01_nonorm")
    notebook = nbformat.read(ipynb, as_version=4)
    notebook.cells[1].outputs = [nbformat.v4.new_output("stream", text="6\n")]
    notebook.cells[1].execution_count = 1
    nbformat.write(notebook, ipynb)
    assert pair_problems(tmp_path) == []


def test_an_edited_ipynb_is_reported_with_its_pair(tmp_path):
    _make_pair(tmp_path, "01_nonorm")
    _, ipynb = _make_pair(tmp_path, "02_trigram")
    notebook = nbformat.read(ipynb, as_version=4)
    notebook.cells[1].source = "x = 2 * 4"
    nbformat.write(notebook, ipynb)
    problems = pair_problems(tmp_path)
    assert len(problems) == 1
    assert "02_trigram.py / 02_trigram.ipynb" in problems[0] and "x = 2 * 4" in problems[0]


def test_an_edited_py_and_a_missing_cell_are_reported(tmp_path):
    py, _ = _make_pair(tmp_path, "03_block")
    py.write_text(SOURCE.replace("\n# %%\nassert x == 6\n", "\n"), encoding="utf-8")
    problems = pair_problems(tmp_path)
    assert len(problems) == 1 and "03_block" in problems[0]


def test_unpaired_files_are_reported(tmp_path):
    (tmp_path / "04_alone.py").write_text(SOURCE, encoding="utf-8")
    _, ipynb = _make_pair(tmp_path, "05_pair")
    ipynb.rename(tmp_path / "06_orphan.ipynb")
    assert sorted(pair_problems(tmp_path)) == [
        "04_alone.py: no paired .ipynb",
        "05_pair.py: no paired .ipynb",
        "06_orphan.ipynb: no paired .py",
    ]
