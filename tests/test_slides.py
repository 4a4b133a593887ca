"""Every notebook exports to slides: its title and each section header start a slide."""

import json
import re

import pytest

from mbert_lib.runtime import REPO_ROOT

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("0*.ipynb"))


def _headers(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    return [
        (c["metadata"].get("slideshow", {}).get("slide_type"), "".join(c["source"]))
        for c in cells
        if c["cell_type"] == "markdown" and re.match(r"#{1,2} ", "".join(c["source"]))
    ]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.name for n in NOTEBOOKS])
def test_title_and_sections_start_slides(notebook):
    headers = _headers(notebook)
    assert len(headers) >= 3, f"{notebook.name}: a title and sections expected"
    missing = [text.splitlines()[0] for kind, text in headers if kind != "slide"]
    assert not missing, f"{notebook.name}: headers that start no slide: {missing}"


def test_nbconvert_makes_one_slide_per_header():
    from nbconvert import SlidesExporter

    notebook = REPO_ROOT / "notebooks" / "02_trigram_embedding.ipynb"
    html, _ = SlidesExporter().from_filename(str(notebook))
    # reveal.js: each slide is a top-level <section> holding one or more nested ones
    top_level = re.findall(r'<div class="slides">|<section>\s*<section>', html)
    assert len(top_level) - 1 == len(_headers(notebook))
