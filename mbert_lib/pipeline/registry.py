"""All steps of the reproduction in order, and the named presets' settings for each.

Presets: `laptop` (the paper's pipeline in tens of minutes on 2 CPU cores) and
`smoke` (the same steps, tiny, in a few minutes: CI's end-to-end test), read
from `presets/<name>.yaml` (mbert_lib.pipeline.preset_settings). A preset maps
each step name to its settings (plain JSON values, so that a step's
fingerprint changes when they do); the report step's settings also get the
step order. A preset with its own steps (`attention_lab`: `LAB_STEPS`) names them
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
from mbert_lib.pipeline.preset_settings import (
    load_preset_settings,
    preset_names,
    preset_steps,
    reproduction_presets,
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
# Steps that are not part of the reproduction: a preset names them (`.steps`).
LAB_STEPS = list(lab_steps.STEPS)
# The report lists the steps of a full run and the optional ones, in this order.
STEP_ORDER = {
    "order": [s.name for s in STEPS if not s.optional],
    "optional": [s.name for s in STEPS if s.optional],
}


def own_steps(preset: str) -> list | None:
    """The steps `preset`'s file names instead of the reproduction's, or None."""
    names = preset_steps(preset)
    if names is None:
        return None
    by_name = {s.name: s for s in LAB_STEPS}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise PipelineError(
            f"preset {preset!r} names unknown steps {unknown}; known: {sorted(by_name)}"
        )
    return [by_name[n] for n in names]


def _with_step_order(name: str) -> dict[str, dict[str, Any]]:
    settings = load_preset_settings(name)
    if preset_steps(name) is not None:
        names = [s.name for s in own_steps(name)]
        if sorted(settings) != sorted(names):
            raise PipelineError(
                f"preset {name!r}: expected settings for exactly its steps {names}, got "
                f"{sorted(settings)}"
            )
        return settings
    names = [s.name for s in STEPS]
    if sorted(settings) != sorted(names):
        raise PipelineError(
            f"preset {name!r}: expected settings for exactly the steps {names}; missing "
            f"{sorted(set(names) - set(settings))}, unknown {sorted(set(settings) - set(names))}"
        )
    settings[report_steps.NAME] = {**settings[report_steps.NAME], **STEP_ORDER}
    return settings


# The reproduction's presets; LAB_PRESETS run steps of their own.
PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    name: _with_step_order(name) for name in reproduction_presets()
}
LAB_PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    name: _with_step_order(name) for name in preset_names() if name not in PRESETS
}


def get_pipeline_preset(name: str) -> dict[str, dict[str, Any]]:
    known = {**PRESETS, **LAB_PRESETS}
    try:
        return known[name]
    except KeyError:
        raise PipelineError(f"unknown preset {name!r}; known presets: {sorted(known)}") from None
