"""The baseline and fine-tuning steps of `python -m mbert_lib reproduce`.

    bert_baseline    a plain BERT of the student's size (preset tiny_bert), pre-trained
                     with MLM + NSP for STUDENT_PRETRAINING_STEPS, no teacher
    finetune         every model named in settings["models"] fine-tuned on the task
                     with several seeds: dev metric mean ± std, parameters, time

The models to fine-tune are pipeline steps named in the settings, not in the
code (the student without transfer is the distillation step `no_transfer`: the
same trainer, data and number of updates as every transfer row): a named step
that has not run in this pipeline (e.g. `pkt` before the
distillation steps exist) is skipped with a note in the result, or raises
when settings["missing"] is "raise".

The task is SST-2 when the pipeline has a data directory (GLUE's layout,
e.g. ../shared/data), else the offline stand-in `builtin_shuffled`, which
is named as such in every result.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mbert_lib.config_tree import apply_overrides, check, to_dict
from mbert_lib.experiment import load_experiment
from mbert_lib.experiment.finetune import FinetuneExperiment
from mbert_lib.finetune.search import mean_std
from mbert_lib.finetune.trainer import cached_task_data, run_finetuning
from mbert_lib.pipeline.core import Context, PipelineError, Step, read_record
from mbert_lib.pipeline.recipe_settings import load_recipe_settings, reproduction_recipes
from mbert_lib.pipeline.steps import load_step_experiment
from mbert_lib.runtime import REPO_ROOT
from mbert_lib.train.pretrain import run_pretraining

# Per recipe, the BERT baseline's pre-training steps: the update budget every
# distillation row gives its student (layer-wise stages + pre-training
# distillation), the same number of updates on the same data
# (tests/test_pipeline_recipes.py checks each row against it).
STUDENT_PRETRAINING_STEPS = {
    name: load_recipe_settings(name)["bert_baseline"]["overrides"]["trainer.train_steps"]
    for name in reproduction_recipes()
}
GLUE_TASK, OFFLINE_TASK = "sst2", "builtin_shuffled"


def task_name(ctx: Context, settings: Mapping[str, Any]) -> str:
    """settings["task"], with "auto" = SST-2 given a data directory, else the offline task."""
    name = settings["task"]
    if name == "auto":
        return GLUE_TASK if ctx.data_dir else OFFLINE_TASK
    return name


def _run_baseline(name: str):
    def run(ctx: Context, settings: Mapping[str, Any]) -> dict:

        experiment = load_step_experiment(ctx, settings)
        done = run_pretraining(
            experiment, ctx.step_dir(name), show_progress=ctx.show_progress, log=ctx.log
        )
        return {
            "model_dir": str(ctx.step_dir(name)),
            "eval": done.get("eval"),
            "train_steps": done.get("train_steps"),
            "preset": experiment.model.preset,
        }

    return run


def _models(settings: Mapping[str, Any]) -> list[str]:
    return list(settings["models"])


def finetune_experiment(
    ctx: Context,
    settings: Mapping[str, Any],
    init_checkpoint: str,
    seed: int,
    model: str | None = None,
):
    """The FinetuneExperiment the finetune step runs for one model (its overrides) and seed."""

    experiment = load_experiment(REPO_ROOT / settings["config_file"], cls=FinetuneExperiment)
    task = task_name(ctx, settings)
    pairs = [
        ("task.name", task),
        ("task.source", "auto"),
        ("task.data_dir", ctx.data_dir if task != OFFLINE_TASK else None),
        ("model.init_checkpoint", init_checkpoint),
        ("trainer.seed", seed),
    ]
    own = settings["models"][model].get("overrides", {}) if model else {}
    return apply_overrides(
        experiment, pairs + list(settings["overrides"].items()) + list(own.items())
    )


def seed_run_dir(parent: Path, seed: int, experiment, upstream: str) -> Path:
    """parent/seed<k>-<hash>: a new directory when the experiment or what it starts from
    (`upstream`) changes; the seed's stale directories are removed."""

    key = json.dumps({"experiment": to_dict(experiment), "upstream": upstream}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    for stale in parent.glob(f"seed{seed}-*"):
        if stale.name != f"seed{seed}-{digest}":
            shutil.rmtree(stale)
    return parent / f"seed{seed}-{digest}"


def _summary(runs: list[dict], metric: str) -> dict:

    values = [r["eval"][metric] for r in runs]
    mean, std = mean_std(values)
    return {
        "status": "done",
        "metric": metric,
        "values": values,
        "mean": mean,
        "std": std,
        "seeds": [r["seed"] for r in runs],
        "params": runs[0]["params"]["encoder"],
        "train_seconds": [r["seconds"]["train"] for r in runs],
        "best_epochs": [r["best_epoch"] for r in runs],
        "histories": [[h["metrics"][metric] for h in r["history"]] for r in runs],
        "model_dirs": [r["model_dir"] for r in runs],
    }


def run_finetune(ctx: Context, settings: Mapping[str, Any]) -> dict:

    check(
        settings["missing"] in ("skip", "raise"),
        "finetune.missing",
        "'skip' or 'raise'",
        settings["missing"],
    )
    results, task, source = {}, task_name(ctx, settings), None
    loaded: dict = {}  # the task data, encoded once per tokenizer
    for model, spec in settings["models"].items():
        record = read_record(ctx.step_dir(model))
        if record is None:
            reason = (
                f"no finished step {model!r} in {ctx.out_dir}: it is not part of this "
                "pipeline yet, or it has not run"
            )
            if settings["missing"] == "raise":
                raise PipelineError(f"cannot fine-tune {model!r}: {reason}")
            ctx.log(f"finetune: skipping {model}: {reason}")
            results[model] = {"status": "missing", "reason": reason}
            continue
        init = record["result"]["model_dir"]
        runs = []
        for seed in range(spec["seeds"]):
            experiment = finetune_experiment(ctx, settings, init, seed, model)
            directory = seed_run_dir(
                ctx.step_dir("finetune") / model, seed, experiment, record["fingerprint"]
            )
            ctx.log(f"finetune: {model}, seed {seed} -> {directory}")
            done = run_finetuning(
                experiment,
                directory,
                data=cached_task_data(experiment, loaded),
                show_progress=ctx.show_progress,
                log=ctx.log,
            )
            source = done["source"]
            runs.append({**done, "seed": seed, "model_dir": str(directory)})
        results[model] = _summary(runs, runs[0]["metric"])
    return {"task": task, "source": source, "models": results}


STEPS = [
    Step(
        "bert_baseline",
        "a plain BERT of the student's size, pre-trained (baseline)",
        _run_baseline("bert_baseline"),
        ("data",),
        optional=True,  # Table 4's plain-BERT row: the finetune step's comparison only
    ),
    Step(
        "finetune",
        "fine-tuning every model on the task (SST-2, or the offline task), several seeds",
        run_finetune,
        ("data",),
        uses=_models,
        optional=True,  # Table 4 on 16,000 sentences; a full run fine-tunes in label_budget
    ),
]
