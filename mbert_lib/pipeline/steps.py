"""The pre-training steps of `python -m mbert_lib reproduce` (data, teacher): thin glue
from a preset's settings (mbert_lib/pipeline/presets/<preset>.yaml) to the library
function that does the work. Other step modules (distillation, fine-tuning, export,
report) follow the same shape; pipeline/registry.py puts them in order.

Trainer steps name an experiment yaml in experiments/ and dotted overrides
of it; the data step's settings are also applied to every trainer that
reads pre-training data (`data_overrides`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mbert_lib.config_tree import apply_overrides
from mbert_lib.data import prepare_data_section
from mbert_lib.experiment import DataSection, PretrainExperiment, load_experiment
from mbert_lib.pipeline.core import Context, Step
from mbert_lib.runtime import REPO_ROOT
from mbert_lib.train.pretrain import run_pretraining


def _source(ctx: Context) -> str:
    return "local" if ctx.data_dir else "builtin"


# The data step's settings: the fields of an experiment's `data` section it sets.
DATA_FIELDS = ("vocab_size", "seq_length", "max_predictions_per_seq", "dupe_factor", "seed")


def data_section(ctx: Context) -> DataSection:
    """The `data` section the data step prepares: its settings, the run's source, and the
    step's directory as the cache; every trainer that reads pre-training data gets it."""
    settings = ctx.settings["data"]
    return DataSection(
        source=_source(ctx),
        data_dir=ctx.data_dir,
        cache_dir=str(ctx.step_dir("data")),
        **{name: settings[name] for name in DATA_FIELDS},
    )


def data_overrides(ctx: Context) -> list[tuple[str, Any]]:
    """`data_section(ctx)` as overrides of a trainer experiment (and the model's vocabulary
    size, which must match the data's)."""
    section = data_section(ctx)
    fields = ("source", "data_dir", "cache_dir", *DATA_FIELDS)
    return [(f"data.{name}", getattr(section, name)) for name in fields] + [
        ("model.overrides.vocab_size", section.vocab_size)
    ]


def load_step_experiment(ctx: Context, settings: Mapping[str, Any], cls=None):
    """The experiment yaml a trainer step names, with data and step overrides applied."""
    path = REPO_ROOT / settings["config_file"]
    experiment = load_experiment(path, cls=cls or PretrainExperiment)
    return apply_overrides(experiment, data_overrides(ctx) + list(settings["overrides"].items()))


def run_data(ctx: Context, settings: Mapping[str, Any]) -> dict:

    prepared = prepare_data_section(data_section(ctx), log=ctx.log, progress=ctx.show_progress)
    return {
        "source": _source(ctx),
        "data_dir": ctx.data_dir,
        "examples_dir": str(prepared.examples_dir),
        "tokenizer_dir": str(prepared.tokenizer_dir),
        "counts": prepared.manifest.get("counts"),
    }


def run_teacher(ctx: Context, settings: Mapping[str, Any]) -> dict:

    experiment = load_step_experiment(ctx, settings)
    done = run_pretraining(
        experiment, ctx.step_dir("teacher"), show_progress=ctx.show_progress, log=ctx.log
    )
    return {
        "model_dir": str(ctx.step_dir("teacher")),
        "eval": done.get("eval"),
        "train_steps": done.get("train_steps"),
    }


STEPS = [
    Step("data", "pre-training data: corpus, WordPiece vocabulary, MLM/NSP examples", run_data),
    Step("teacher", "IB-BERT teacher pre-training (MLM + NSP)", run_teacher, ("data",)),
]
