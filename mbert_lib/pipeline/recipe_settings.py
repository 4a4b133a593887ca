"""The pipeline's recipes as data: `experiments/recipes/<name>.yaml` -> {step name: settings}.

Each file maps every step of the pipeline to its settings (plain JSON values:
they enter the step's fingerprint). YAML anchors and merge keys (`<<: *tiny`)
share repeated settings; a top-level key starting with "." holds such a
template and is not a step. The loaded settings share no objects, whatever
the anchors: a step may not change another's settings by editing its own.

A recipe that runs steps of its own instead of the reproduction's (the attention lab)
lists them under the top-level key `.steps`; `recipe_steps` reads that list.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from mbert_lib.runtime import REPO_ROOT

RECIPE_DIR = REPO_ROOT / "experiments" / "recipes"


def recipe_names() -> list[str]:
    """The recipes there are files for, sorted."""
    return sorted(p.stem for p in RECIPE_DIR.glob("*.yaml"))


def reproduction_recipes() -> list[str]:
    """The recipes that run the reproduction's steps (not steps of their own), sorted."""
    return [name for name in recipe_names() if recipe_steps(name) is None]


STEPS_KEY = ".steps"


def _load(name: str) -> dict[str, Any]:
    path = RECIPE_DIR / f"{name}.yaml"
    if not path.is_file():
        raise ValueError(f"unknown recipe {name!r}; known recipes: {recipe_names()}")
    with open(path, encoding="utf-8") as f:
        loaded = yaml.safe_load(f)
    if not isinstance(loaded, dict) or not all(
        isinstance(v, dict) for k, v in loaded.items() if k != STEPS_KEY
    ):
        raise ValueError(f"{path}: expected a mapping of step name -> settings mapping")
    return loaded


def load_recipe_settings(name: str) -> dict[str, dict[str, Any]]:
    """{step: settings} of recipe `name`, templates ("."-keys) dropped."""
    steps = {step: settings for step, settings in _load(name).items() if not step.startswith(".")}
    return json.loads(json.dumps(steps))  # plain values, no shared objects


def recipe_steps(name: str) -> list[str] | None:
    """The step names recipe `name` runs instead of the reproduction's, or None."""
    steps = _load(name).get(STEPS_KEY)
    if steps is not None and not (
        isinstance(steps, list) and steps and all(isinstance(s, str) for s in steps)
    ):
        raise ValueError(
            f"recipe {name!r}: {STEPS_KEY} must be a list of step names, got {steps!r}"
        )
    return steps
