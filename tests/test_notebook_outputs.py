"""Committed notebook outputs are portable and quiet: no paths of the machine that ran
them, no TensorFlow/absl log lines, no tqdm widget warning."""

import json
import re

import pytest

from mbert_lib.runtime import REPO_ROOT

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").rglob("*.ipynb"))
ABSOLUTE_PATH = re.compile(r"(?<![\w.~-])/(?:work|home|root|tmp|Users|private|var/folders|mnt)/")
LOG_LINE = re.compile(
    r"^(?:[IWEF]\d{4} \d\d:\d\d:\d\d|WARNING: All log messages|"
    r"WARNING:tensorflow|WARNING:absl|INFO: Created TensorFlow Lite)|cuInit|"
    r"IProgress not found",
    re.M,
)


def _texts(notebook):
    """(cell index, text) of every text output of a notebook."""
    cells = json.loads(notebook.read_text())["cells"]
    for k, cell in enumerate(cells):
        for out in cell.get("outputs", []):
            text = out.get("text") or "".join(
                "".join(v) if isinstance(v, list) else v
                for kind, v in out.get("data", {}).items()
                if kind.startswith("text/")
            )
            yield k, "".join(text) if isinstance(text, list) else text


def test_the_patterns_catch_what_they_are_for():
    assert ABSOLUTE_PATH.search("wrote /work/main/runs/laptop/pkt")
    assert ABSOLUTE_PATH.search("scratch '/tmp/tmpab12/model'")
    assert not ABSOLUTE_PATH.search("wrote runs/laptop/pkt and ../shared/data; 3/tmp")
    assert LOG_LINE.search("x\nI0000 00:00:1796136166.5 port.cc:153] oneDNN custom operations")
    assert LOG_LINE.search("E0000 00:00:17 cuda_platform.cc:52] failed call to cuInit")
    assert LOG_LINE.search("INFO: Created TensorFlow Lite XNNPACK delegate for CPU.")
    assert not LOG_LINE.search("Iteration 0000 done")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.name for n in NOTEBOOKS])
def test_committed_outputs_have_no_machine_paths_or_log_lines(notebook):
    found = [
        (k, m.group(0))
        for k, text in _texts(notebook)
        for pattern in (ABSOLUTE_PATH, LOG_LINE)
        for m in pattern.finditer(text)
    ]
    assert not found, f"{notebook.name}: cell, match: {found[:5]}"


def test_the_notebook_log_writes_repository_paths_relative(capsys):
    from mbert_lib.pipeline import repo_relative_print

    repo_relative_print(f"finetune: pkt -> {REPO_ROOT / 'runs' / 'laptop' / 'finetune'}")
    assert capsys.readouterr().out == "finetune: pkt -> runs/laptop/finetune\n"


def test_shown_paths_are_repository_relative_inside_it_and_unchanged_outside(tmp_path):
    from mbert_lib.runtime import shown_path

    assert shown_path(REPO_ROOT / "figures" / "00_presets.png") == "figures/00_presets.png"
    assert shown_path(tmp_path / "x.png") == str(tmp_path / "x.png")
