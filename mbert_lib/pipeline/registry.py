"""All steps of the reproduction in order, and the named recipes' settings for each.

Recipes: `laptop` (the paper's pipeline in tens of minutes on 2 CPU cores) and
`smoke` (the same steps, tiny, in a few minutes: CI's end-to-end test), read
from `recipes/<name>.yaml` (mbert_lib.pipeline.recipe_settings). A recipe maps
each step name to its settings (plain JSON values, so that a step's
fingerprint changes when they do); the report step's settings also get the
step order. A recipe with its own steps (`attention_lab`: `LAB_STEPS`) names them
in its file and holds settings for those alone.
"""

from __future__ import annotations

from typing import Any

from mbert_lib.pipeline import steps as pretraining_steps
from mbert_lib.pipeline import steps_compress as compression_steps
from mbert_lib.pipeline import steps_distill as distillation_steps
from mbert_lib.pipeline import steps_export as export_steps
from mbert_lib.pipeline import steps_finetune as finetuning_steps
from mbert_lib.pipeline import steps_lab as lab_steps
from mbert_lib.pipeline import steps_payoff as payoff_steps
from mbert_lib.pipeline import steps_report as report_steps
from mbert_lib.pipeline import steps_seeds as seed_steps
from mbert_lib.pipeline.core import PipelineError
from mbert_lib.pipeline.recipe_settings import (
    load_recipe_settings,
    recipe_names,
    recipe_steps,
    reproduction_recipes,
)

# In pipeline order: a step's dependencies (and the models a fine-tuning step
# names in its settings) come from modules before it.
STEP_MODULES = (
    pretraining_steps,
    distillation_steps,
    finetuning_steps,
    seed_steps,
    payoff_steps,
    export_steps,
    compression_steps,
    report_steps,
)

STEPS = [step for module in STEP_MODULES for step in module.STEPS]
# Steps that are not part of the reproduction: a recipe names them (`.steps`).
LAB_STEPS = list(lab_steps.STEPS)
# The report lists the steps of a full run and the optional ones, in this order.
STEP_ORDER = {
    "order": [s.name for s in STEPS if not s.optional],
    "optional": [s.name for s in STEPS if s.optional],
}


def own_steps(recipe: str) -> list | None:
    """The steps `recipe`'s file names instead of the reproduction's, or None."""
    names = recipe_steps(recipe)
    if names is None:
        return None
    by_name = {s.name: s for s in LAB_STEPS}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise PipelineError(
            f"recipe {recipe!r} names unknown steps {unknown}; known: {sorted(by_name)}"
        )
    return [by_name[n] for n in names]


def _with_step_order(name: str) -> dict[str, dict[str, Any]]:
    settings = load_recipe_settings(name)
    if recipe_steps(name) is not None:
        names = [s.name for s in own_steps(name)]
        if sorted(settings) != sorted(names):
            raise PipelineError(
                f"recipe {name!r}: expected settings for exactly its steps {names}, got "
                f"{sorted(settings)}"
            )
        return settings
    names = [s.name for s in STEPS]
    if sorted(settings) != sorted(names):
        raise PipelineError(
            f"recipe {name!r}: expected settings for exactly the steps {names}; missing "
            f"{sorted(set(names) - set(settings))}, unknown {sorted(set(settings) - set(names))}"
        )
    settings[report_steps.NAME] = {**settings[report_steps.NAME], **STEP_ORDER}
    return settings


# The reproduction's recipes; LAB_RECIPES run steps of their own.
RECIPES: dict[str, dict[str, dict[str, Any]]] = {
    name: _with_step_order(name) for name in reproduction_recipes()
}
LAB_RECIPES: dict[str, dict[str, dict[str, Any]]] = {
    name: _with_step_order(name) for name in recipe_names() if name not in RECIPES
}


def get_recipe(name: str) -> dict[str, dict[str, Any]]:
    known = {**RECIPES, **LAB_RECIPES}
    try:
        return known[name]
    except KeyError:
        raise PipelineError(f"unknown recipe {name!r}; known recipes: {sorted(known)}") from None
