"""The pre-training steps of `python -m mbert_lib reproduce` (data, teacher) and their
settings per preset: thin glue from a preset's settings to the library function
that does the work. Other step modules (distillation, fine-tuning, export,
report) follow the same shape; pipeline/registry.py puts them in order.

Trainer steps name an experiment yaml in experiments/ and dotted overrides
of it; the data step's settings are also applied to every trainer that
reads pre-training data (`data_overrides`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mbert_lib.pipeline.core import Context, Step
from mbert_lib.runtime import REPO_ROOT


def _source(ctx: Context) -> str:
    return "local" if ctx.data_dir else "builtin"


def data_overrides(ctx: Context) -> list[tuple[str, Any]]:
    """The data step's settings as overrides of a trainer experiment's `data` section."""
    data = ctx.settings["data"]
    pairs = [
        ("data.source", _source(ctx)),
        ("data.data_dir", ctx.data_dir),
        ("data.cache_dir", str(ctx.step_dir("data"))),
        ("data.vocab_size", data["vocab_size"]),
        ("model.overrides.vocab_size", data["vocab_size"]),
        ("data.seq_length", data["seq_length"]),
        ("data.max_predictions_per_seq", data["max_predictions_per_seq"]),
        ("data.dupe_factor", data["dupe_factor"]),
        ("data.seed", data["seed"]),
    ]
    return pairs


def load_step_experiment(ctx: Context, settings: Mapping[str, Any], cls=None):
    """The experiment yaml a trainer step names, with data and step overrides applied."""
    from mbert_lib.experiment import PretrainExperiment, load_experiment

    path = REPO_ROOT / settings["config_file"]
    experiment = load_experiment(path, cls=cls or PretrainExperiment)
    from mbert_lib.config_tree import apply_overrides

    return apply_overrides(experiment, data_overrides(ctx) + list(settings["overrides"].items()))


def run_data(ctx: Context, settings: Mapping[str, Any]) -> dict:
    from mbert_lib.data import prepare_pretraining_data

    prepared = prepare_pretraining_data(
        source=_source(ctx),
        data_dir=ctx.data_dir,
        output_dir=ctx.step_dir("data"),
        vocab_size=settings["vocab_size"],
        seq_length=settings["seq_length"],
        max_predictions_per_seq=settings["max_predictions_per_seq"],
        dupe_factor=settings["dupe_factor"],
        seed=settings["seed"],
        log=ctx.log,
        progress=ctx.show_progress,
    )
    return {
        "source": _source(ctx),
        "data_dir": ctx.data_dir,
        "examples_dir": str(prepared.examples_dir),
        "tokenizer_dir": str(prepared.tokenizer_dir),
        "counts": prepared.manifest.get("counts"),
    }


def run_teacher(ctx: Context, settings: Mapping[str, Any]) -> dict:
    from mbert_lib.train.pretrain import run_pretraining

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

SETTINGS = {
    "laptop": {
        "data": {
            "vocab_size": 8192,
            "seq_length": 128,
            "max_predictions_per_seq": 20,
            "dupe_factor": 10,
            "seed": 12345,
        },
        "teacher": {"config_file": "experiments/pretrain_tiny_teacher.yaml", "overrides": {}},
    },
    "smoke": {
        "data": {
            "vocab_size": 1024,
            "seq_length": 64,
            "max_predictions_per_seq": 10,
            "dupe_factor": 1,
            "seed": 12345,
        },
        "teacher": {
            "config_file": "experiments/pretrain_tiny_teacher.yaml",
            "overrides": {
                "model.overrides.num_hidden_layers": 2,
                "trainer.train_steps": 30,
                "trainer.batch_size": 16,
                "trainer.learning_rate.warmup_steps": 3,
                "trainer.checkpoint_interval": 15,
                "trainer.eval_interval": 30,
                "trainer.eval_steps": 2,
            },
        },
    },
}
