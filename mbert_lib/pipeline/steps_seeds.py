"""Paper Tables 8 and 9 over several pre-training seeds: the optional `distill_seeds` step.

    distill_seeds   every row of Tables 8 and 9 (pkt, jkt, akt and the ablations) trained again
                    with trainer.seed = 1, 2, ... (seed 0 is the row's own step), each
                    seed's student evaluated on held-out MLM and fine-tuned once on the
                    task; per row: the values per seed and their mean ± std

A seed changes the student's initialisation, dropout and the order of the
training batches; the teacher, the pre-training examples (and their masks)
and the number of updates stay those of the row's step, whose settings this
step copies. It doubles the pipeline's transfer time, so a full run leaves it
out (`Step.optional`); it runs when named:

    python -m mbert_lib reproduce --data-dir ../shared/data --steps distill_seeds,report

Every seed trains into distill_seeds/<row>/seed<k>/model (or is the one the main run's
mlm_seeds step trained, when it has the row and seed with the same settings) and
fine-tunes into distill_seeds/<row>/seed<k>/finetune; both trainers resume, so a killed
run continues where it stopped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mbert_lib.config_tree import apply_overrides, check
from mbert_lib.distill.trainer import run_distillation
from mbert_lib.finetune.search import mean_std
from mbert_lib.finetune.trainer import cached_task_data, run_finetuning
from mbert_lib.pipeline.core import Context, Step, read_record
from mbert_lib.pipeline.steps_distill import HEADLINE, ROW_NAMES, load_distill_step_experiment
from mbert_lib.pipeline.steps_finetune import finetune_experiment, task_name

NAME = "distill_seeds"
# The rows of Tables 8 and 9 (ablation_fmt_at, not in the paper, stays at one seed).
TABLE_ROWS = tuple(name for name in ROW_NAMES if name != "ablation_fmt_at")


def _rows(settings: Mapping[str, Any]) -> list[str]:
    return list(settings["rows"])


def _distill(ctx: Context, row: str, row_settings: Mapping[str, Any], seed: int) -> tuple:
    """(model_dir, held-out metrics, student updates) of `row` pre-trained with `seed`."""

    if seed == 0:
        done = ctx.result(row)
        return done["model_dir"], done["eval"], done["train_steps"]
    reused = _from_mlm_seeds(ctx, row, row_settings, seed)
    if reused is not None:
        return reused
    experiment = apply_overrides(
        load_distill_step_experiment(ctx, row_settings), [("trainer.seed", seed)]
    )
    model_dir = ctx.step_dir(NAME) / row / f"seed{seed}" / "model"
    done = run_distillation(
        experiment, ctx.step_dir("teacher"), model_dir, show_progress=ctx.show_progress, log=ctx.log
    )
    return str(model_dir), done.get("eval") or {}, done.get("train_steps")


def _from_mlm_seeds(ctx: Context, row: str, row_settings: Mapping[str, Any], seed: int):
    """The same row and seed from the main run's mlm_seeds step, when it trained it with
    these settings: (model_dir, held-out metrics, student updates), else None."""
    record = read_record(ctx.step_dir("mlm_seeds"))
    entry = (record or {}).get("result", {}).get("rows", {}).get(row)
    if entry is None or seed not in entry["seeds"] or ctx.settings.get(row) != row_settings:
        return None
    k = entry["seeds"].index(seed)
    return entry["model_dirs"][k], entry["eval"][k], ctx.result(row)["train_steps"]


def _finetune(
    ctx: Context, settings: Mapping[str, Any], row: str, init: str, seed: int, loaded: dict
) -> dict:
    """The row's seed-`seed` student fine-tuned once (fine-tuning seed: finetune.seed)."""

    spec = settings["finetune"]
    experiment = finetune_experiment(ctx, spec, init, spec["seed"], model=row)
    directory = ctx.step_dir(NAME) / row / f"seed{seed}" / "finetune"
    done = run_finetuning(
        experiment,
        directory,
        data=cached_task_data(experiment, loaded),
        show_progress=ctx.show_progress,
        log=ctx.log,
    )
    return {
        "metric": done["metric"],
        "value": done["eval"][done["metric"]],
        "source": done["source"],
        "model_dir": str(directory),
    }


def run_seeds(ctx: Context, settings: Mapping[str, Any]) -> dict:

    seeds = [0, *settings["seeds"]]
    check(
        len(set(seeds)) == len(seeds)
        and all(isinstance(s, int) and s > 0 for s in settings["seeds"]),
        f"{NAME}.seeds",
        "distinct integers > 0 (seed 0 is the row's own step)",
        settings["seeds"],
    )
    rows, loaded, source = {}, {}, None
    jobs = [(row, seed) for row in settings["rows"] for seed in seeds]
    for k, (row, seed) in enumerate(jobs, 1):
        ctx.log(f"{NAME} [{k}/{len(jobs)}]: {row}, pre-training seed {seed}")
        model_dir, metrics, updates = _distill(ctx, row, settings["rows"][row], seed)
        tuned = _finetune(ctx, settings, row, model_dir, seed, loaded)
        source = tuned["source"]
        entry = rows.setdefault(
            row, {"seeds": [], "eval": [], "train_steps": [], "downstream": [], "model_dirs": []}
        )
        entry["seeds"].append(seed)
        entry["eval"].append({m: metrics[m] for m in (*HEADLINE, "predictions") if m in metrics})
        entry["train_steps"].append(updates)
        entry["downstream"].append(tuned["value"])
        entry["model_dirs"].append(model_dir)
        entry["metric"] = tuned["metric"]
    for entry in rows.values():
        for key, values in [
            ("mlm_accuracy", [e["mlm_accuracy"] for e in entry["eval"]]),
            ("downstream_summary", entry["downstream"]),
        ]:
            mean, std = mean_std(values)
            entry[key] = {"values": values, "mean": mean, "std": std}
    return {
        "task": task_name(ctx, settings["finetune"]),
        "source": source,
        "finetune_seed": settings["finetune"]["seed"],
        "rows": rows,
    }


STEPS = [
    Step(
        NAME,
        "Tables 8 and 9 with more pre-training seeds (optional: --steps distill_seeds)",
        run_seeds,
        ("teacher",),
        uses=_rows,
        optional=True,
    )
]
