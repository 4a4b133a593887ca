"""All steps of the reproduction in order, and the named presets' settings for each.

Presets: `laptop` (the paper's pipeline in tens of minutes on 2 CPU cores) and
`smoke` (the same steps, tiny, in a few minutes: CI's end-to-end test), read
from `presets/<name>.yaml` (mbert_lib.pipeline.preset_settings). A preset maps
each step name to its settings (plain JSON values, so that a step's
fingerprint changes when they do); the report step's settings also get the
step order.
"""

from __future__ import annotations

from typing import Any

from mbert_lib.pipeline import steps as pretraining_steps
from mbert_lib.pipeline import steps_distill as distillation_steps
from mbert_lib.pipeline import steps_export as export_steps
from mbert_lib.pipeline import steps_finetune as finetuning_steps
from mbert_lib.pipeline import steps_payoff as payoff_steps
from mbert_lib.pipeline import steps_report as report_steps
from mbert_lib.pipeline import steps_seeds as seed_steps
from mbert_lib.pipeline.core import PipelineError
from mbert_lib.pipeline.preset_settings import load_preset_settings, preset_names

# In pipeline order: a step's dependencies (and the models a fine-tuning step
# names in its settings) come from modules before it.
STEP_MODULES = (
    pretraining_steps,
    distillation_steps,
    finetuning_steps,
    seed_steps,
    payoff_steps,
    export_steps,
    report_steps,
)

STEPS = [step for module in STEP_MODULES for step in module.STEPS]
# The report lists the steps of a full run and the optional ones, in this order.
STEP_ORDER = {
    "order": [s.name for s in STEPS if not s.optional],
    "optional": [s.name for s in STEPS if s.optional],
}


def _with_step_order(name: str) -> dict[str, dict[str, Any]]:
    settings = load_preset_settings(name)
    names = [s.name for s in STEPS]
    if sorted(settings) != sorted(names):
        raise PipelineError(
            f"preset {name!r}: expected settings for exactly the steps {names}; missing "
            f"{sorted(set(names) - set(settings))}, unknown {sorted(set(settings) - set(names))}"
        )
    settings[report_steps.NAME] = {**settings[report_steps.NAME], **STEP_ORDER}
    return settings


PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    name: _with_step_order(name) for name in preset_names()
}


def get_pipeline_preset(name: str) -> dict[str, dict[str, Any]]:
    try:
        return PRESETS[name]
    except KeyError:
        raise PipelineError(f"unknown preset {name!r}; known presets: {sorted(PRESETS)}") from None
