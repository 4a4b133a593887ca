"""The pipeline's presets as data: `presets/<name>.yaml` -> {step name: settings}.

Each file maps every step of the pipeline to its settings (plain JSON values:
they enter the step's fingerprint). YAML anchors and merge keys (`<<: *tiny`)
share repeated settings; a top-level key starting with "." holds such a
template and is not a step. The loaded settings share no objects, whatever
the anchors: a step may not change another's settings by editing its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

PRESET_DIR = Path(__file__).with_name("presets")


def preset_names() -> list[str]:
    """The presets there are files for, sorted."""
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


def load_preset_settings(name: str) -> dict[str, dict[str, Any]]:
    """{step: settings} of preset `name`, templates ("."-keys) dropped."""
    path = PRESET_DIR / f"{name}.yaml"
    if not path.is_file():
        raise ValueError(f"unknown preset {name!r}; known presets: {preset_names()}")
    with open(path, encoding="utf-8") as f:
        loaded = yaml.safe_load(f)
    if not isinstance(loaded, dict) or not all(isinstance(v, dict) for v in loaded.values()):
        raise ValueError(f"{path}: expected a mapping of step name -> settings mapping")
    steps = {step: settings for step, settings in loaded.items() if not step.startswith(".")}
    return json.loads(json.dumps(steps))  # plain values, no shared objects
