"""Does distillation pay off? The steps that measure it, paired seed by seed.

    mlm_seeds          the students whose held-out MLM the payoff compares (pkt, ablation_copy
                       = copy-only, no_transfer) pre-trained again with trainer.seed = 1, 2, ...
                       (seed 0 is the row's own step); held-out MLM accuracy per seed
    label_budget       SST-2 with N labels, for N in the budgets: every model fine-tuned for
                       the budget's steps on the same N sentences per seed (the subset and
                       the fine-tuning seed are both the seed), evaluated once at the end;
                       each pair of models compared over the same seeds; label_budget_all
                       (optional) the same with every label, which takes longer
    task_distillation  output distillation (mbert_lib.finetune.task_distill): the teacher
                       fine-tuned on every label, its logits on every training sentence; the
                       student with N labels alone, with N labels and the teacher's soft
                       targets on the other sentences, and with its hard targets (pseudo-
                       labels); the same steps and seeds for each; optionally a sweep of τ
    payoff             <out>/payoff.json: the teacher gate, the MLM rows, the label-budget
                       curve, the task distillation and the attention through the recipe,
                       every list per seed in the same seed order (mbert_lib.paired pairs
                       them by index)

Every fine-tuning run trains into its own directory and resumes, and a finished run is
read back: a killed step continues where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mbert_lib import atomic, strict_json
from mbert_lib.checkpoints import load_classifier
from mbert_lib.config_tree import apply_overrides, check, to_dict
from mbert_lib.distill.trainer import run_distillation
from mbert_lib.experiment import load_experiment
from mbert_lib.finetune.evaluate import make_predictor
from mbert_lib.finetune.experiment import FinetuneExperiment
from mbert_lib.finetune.search import mean_std
from mbert_lib.finetune.task_distill import write_teacher_logits
from mbert_lib.finetune.trainer import cached_task_data, run_finetuning
from mbert_lib.paired import paired_difference
from mbert_lib.pipeline.core import Context, PipelineError, Step, read_record
from mbert_lib.pipeline.steps_distill import HEADLINE, load_distill_step_experiment
from mbert_lib.pipeline.steps_finetune import OFFLINE_TASK, task_name
from mbert_lib.runtime import REPO_ROOT
from mbert_lib.tables import payoff as payoff_tables

PAYOFF_FILE = "payoff.json"
# payoff.json's names for the pipeline's steps
MLM_NAMES = {"pkt": "pkt", "ablation_copy": "copy_only", "no_transfer": "no_transfer"}


# ----------------------------------------------------------------- mlm_seeds
def run_mlm_seeds(ctx: Context, settings: Mapping[str, Any]) -> dict:

    seeds = [0, *settings["seeds"]]
    check(
        len(set(seeds)) == len(seeds) and all(isinstance(s, int) and s > 0 for s in seeds[1:]),
        "mlm_seeds.seeds",
        "distinct integers > 0 (seed 0 is the row's own step)",
        settings["seeds"],
    )
    rows = {}
    for row in settings["rows"]:
        entry = {"seeds": [], "eval": [], "model_dirs": []}
        for seed in seeds:
            if seed == 0:
                done = ctx.result(row)
                model_dir, metrics = done["model_dir"], done["eval"]
            else:
                ctx.log(f"mlm_seeds: {row}, pre-training seed {seed}")
                experiment = apply_overrides(
                    load_distill_step_experiment(ctx, ctx.settings[row]), [("trainer.seed", seed)]
                )
                model_dir = ctx.step_dir("mlm_seeds") / row / f"seed{seed}"
                metrics = run_distillation(
                    experiment,
                    ctx.step_dir("teacher"),
                    model_dir,
                    show_progress=ctx.show_progress,
                    log=ctx.log,
                ).get("eval", {})
            entry["seeds"].append(seed)
            entry["eval"].append(
                {m: metrics[m] for m in (*HEADLINE, "predictions") if m in metrics}
            )
            entry["model_dirs"].append(str(model_dir))
        values = [e["mlm_accuracy"] for e in entry["eval"]]
        mean, std = mean_std(values)
        entry["mlm_accuracy"] = {"values": values, "mean": mean, "std": std}
        rows[row] = entry
    return {"seeds": seeds, "rows": rows, "comparisons": _comparisons(rows, MLM_PAIRS)}


MLM_PAIRS = (("pkt", "ablation_copy"), ("ablation_copy", "no_transfer"), ("pkt", "no_transfer"))


def _comparisons(rows: Mapping[str, dict], pairs) -> dict:
    """{"a − b": PairedDifference as a dict} over the seeds both rows have, in points."""
    out = {}
    for a, b in pairs:
        if a in rows and b in rows:
            x, y = (rows[m]["mlm_accuracy"]["values"] for m in (a, b))
            n = min(len(x), len(y))
            if n >= 2:
                out[f"{a} − {b}"] = paired_difference(
                    [100 * v for v in x[:n]], [100 * v for v in y[:n]]
                ).to_dict()
    return out


# ----------------------------------------------------------- fine-tuning runs
def _experiment(ctx: Context, spec: Mapping, init: str, seed: int, pairs) -> FinetuneExperiment:
    """The step's fine-tuning yaml for one run: task, model, seed (subset and order) and the
    overrides in `pairs` (after the step's own)."""
    experiment = load_experiment(REPO_ROOT / spec["config_file"], cls=FinetuneExperiment)
    task = task_name(ctx, spec)
    base = [
        ("task.name", task),
        ("task.source", "auto"),
        ("task.data_dir", ctx.data_dir if task != OFFLINE_TASK else None),
        ("model.init_checkpoint", init),
        ("trainer.seed", seed),
        ("task.data_seed", seed),
    ]
    return apply_overrides(experiment, base + list(spec["overrides"].items()) + list(pairs))


def _run(ctx: Context, step: str, name: str, experiment, loaded: dict, upstream: str) -> dict:
    """Fine-tunes (or reads back) one run under <step>/<name>-<hash of its settings>."""
    key = json.dumps({"experiment": to_dict(experiment), "upstream": upstream}, sort_keys=True)
    directory = ctx.step_dir(step) / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:10]}"
    for stale in directory.parent.glob(f"{Path(name).name}-*"):
        if stale != directory:
            shutil.rmtree(stale)
    done = run_finetuning(
        experiment,
        directory,
        data=cached_task_data(experiment, loaded),
        show_progress=ctx.show_progress,
        log=lambda _: None,
    )
    return {**done, "model_dir": str(directory)}


def _budget_size(budget: str, available: int) -> int | None:
    """A label budget's number of sentences (None: "all"), checked against the task."""
    if budget == "all":
        return None
    try:
        size = int(budget)
    except ValueError:
        size = 0
    if not 1 <= size <= available or str(size) != str(budget):
        raise PipelineError(
            f"label_budget.budgets: {budget!r} is not a label budget for this task: expected "
            f"a whole number of sentences from 1 to the training set's {available:,}, or 'all'"
        )
    return size


# -------------------------------------------------------------- label_budget
def _label_budget_runner(step: str):
    def run(ctx: Context, settings: Mapping[str, Any]) -> dict:
        return run_label_budget(ctx, settings, step)

    return run


def run_label_budget(ctx: Context, settings: Mapping[str, Any], step: str = "label_budget") -> dict:

    models = {m: ctx.result(m)["model_dir"] for m in settings["models"]}
    prints = {m: ctx.record_fingerprint(m) for m in settings["models"]}
    loaded: dict = {}
    probe = _experiment(ctx, settings, models[next(iter(models))], 0, [])
    available = cached_task_data(probe, loaded).train_available
    sizes = {b: _budget_size(str(b), available) for b in settings["budgets"]}
    for budget, spec in settings["budgets"].items():
        if spec.get("seeds", 0) < 2:
            raise PipelineError(
                f"label_budget.budgets.{budget}.seeds: {spec.get('seeds')!r}; pairing needs "
                "at least 2 seeds"
            )
    budgets = {}
    for budget, spec in settings["budgets"].items():
        length = (
            [("trainer.train_steps", spec["train_steps"])]
            if "train_steps" in spec
            else [("trainer.epochs", spec["epochs"])]
        )
        entry = {"size": sizes[budget] or available, "seeds": list(range(spec["seeds"]))}
        entry["models"] = {}
        for model, init in models.items():
            values, dirs = [], []
            for seed in entry["seeds"]:
                pairs = [
                    ("task.max_train_examples", sizes[budget]),
                    *length,
                    *settings["models"][model].items(),
                ]
                experiment = _experiment(ctx, settings, init, seed, pairs)
                ctx.log(f"{step}: {budget} labels, {model}, seed {seed}")
                done = _run(
                    ctx,
                    "label_budget",
                    f"{budget}/{model}/seed{seed}",
                    experiment,
                    loaded,
                    prints[model],
                )
                values.append(done["eval"][done["metric"]])
                dirs.append(done["model_dir"])
            mean, std = mean_std(values)
            entry["models"][model] = {
                "status": "done",
                "values": values,
                "mean": mean,
                "std": std,
                "seeds": entry["seeds"],
                "model_dirs": dirs,
            }
        entry["comparisons"] = _model_comparisons(entry["models"], settings["compare"])
        budgets[str(budget)] = entry
        ctx.log(
            f"{step}: {budget} labels: "
            + ", ".join(f"{m} {100 * e['mean']:.1f}" for m, e in entry["models"].items())
        )
    return {
        "task": task_name(ctx, settings),
        "available": available,
        "budgets": budgets,
        "opens_at": _opening(budgets),
    }


def _model_comparisons(models: Mapping[str, dict], pairs) -> dict:
    return {
        f"{a} − {b}": paired_difference(
            [100 * v for v in models[a]["values"]], [100 * v for v in models[b]["values"]]
        ).to_dict()
        for a, b in pairs
        if a in models and b in models and len(models[a]["values"]) >= 2
    }


def _opening(budgets: Mapping[str, dict]) -> str | None:
    """The smallest budget at which teacher beats PKT and PKT beats no transfer."""
    for budget, entry in budgets.items():
        c = entry["comparisons"]
        if all(c.get(k, {}).get("verdict") == "beats" for k in ORDER):
            return budget
    return None


ORDER = ("teacher − pkt", "pkt − no_transfer")


# ---------------------------------------------------------- task_distillation
def check_task_distillation(settings: Mapping[str, Any], available: int) -> None:
    """Refuses settings that cannot run, before anything is trained (PipelineError)."""
    labels, seeds = settings["labels"], settings["seeds"]
    temperatures = [settings["temperature"], *settings.get("sweep", {}).get("temperatures", [])]
    for tau in temperatures:
        if not isinstance(tau, int | float) or isinstance(tau, bool) or not 0 < tau < float("inf"):
            raise PipelineError(
                f"task_distillation: temperature {tau!r} must be a number > 0 (τ softens the "
                "teacher's distribution; 1 leaves it as it is)"
            )
    if not isinstance(labels, int) or isinstance(labels, bool) or not 1 <= labels < available:
        raise PipelineError(
            f"task_distillation.labels: {labels!r} must be a whole number of labeled sentences "
            f"from 1 to {available - 1:,} (the training set's {available:,} less at least one "
            "sentence for the transfer set)"
        )
    if not isinstance(seeds, int) or seeds < 2:
        raise PipelineError(f"task_distillation.seeds: {seeds!r}; pairing needs at least 2")


def run_task_distillation(ctx: Context, settings: Mapping[str, Any]) -> dict:

    loaded: dict = {}
    teacher_spec = settings["teacher"]
    teacher_init = ctx.result("teacher")["model_dir"]
    teacher_exp = _experiment(ctx, settings, teacher_init, 0, list(teacher_spec.items()))
    check_task_distillation(settings, cached_task_data(teacher_exp, loaded).train_available)
    ctx.log("task_distillation: the teacher, fine-tuned on every label")
    teacher = _run(
        ctx, "task_distillation", "teacher", teacher_exp, loaded, ctx.record_fingerprint("teacher")
    )
    data = cached_task_data(teacher_exp, loaded)
    logits_path = ctx.step_dir("task_distillation") / "teacher_logits.npy"
    _write_logits(teacher["model_dir"], teacher_exp, data, loaded, logits_path)

    student = settings["student"]
    init = ctx.result(student)["model_dir"]
    upstream = ctx.record_fingerprint(student) + ctx.record_fingerprint("teacher")
    common = [
        ("task.max_train_examples", settings["labels"]),
        ("trainer.train_steps", settings["train_steps"]),
        *settings["student_overrides"].items(),
    ]
    rows = {
        "labels_only": [],
        "soft_labels": [
            ("distill.teacher_logits", str(logits_path)),
            ("distill.temperature", settings["temperature"]),
        ],
        "pseudo_labels": [
            ("distill.teacher_logits", str(logits_path)),
            ("distill.targets", "hard"),
        ],
    }
    seeds = list(range(settings["seeds"]))
    values = {}
    for row, pairs in rows.items():
        values[row] = []
        for seed in seeds:
            ctx.log(f"task_distillation: {row}, seed {seed}")
            experiment = _experiment(ctx, settings, init, seed, common + pairs)
            done = _run(ctx, "task_distillation", f"{row}/seed{seed}", experiment, loaded, upstream)
            values[row].append(done["eval"][done["metric"]])
    sweep = {}
    for tau in settings.get("sweep", {}).get("temperatures", []):
        sweep[str(tau)] = []
        for seed in range(settings["sweep"]["seeds"]):
            pairs = [("distill.teacher_logits", str(logits_path)), ("distill.temperature", tau)]
            experiment = _experiment(ctx, settings, init, seed, common + pairs)
            done = _run(
                ctx, "task_distillation", f"sweep/tau{tau}/seed{seed}", experiment, loaded, upstream
            )
            sweep[str(tau)].append(done["eval"][done["metric"]])
    teacher_value = teacher["eval"][teacher["metric"]]
    result = {
        "task": task_name(ctx, settings),
        "student": student,
        "labels": settings["labels"],
        "transfer_sentences": data.train_available - settings["labels"],
        "temperature": settings["temperature"],
        "train_steps": settings["train_steps"],
        "seeds": seeds,
        "teacher": [teacher_value] * len(seeds),
        **values,
        "sweep": sweep,
        "comparisons": {
            f"{a} − {b}": paired_difference(
                [100 * v for v in values[a]], [100 * v for v in values[b]]
            ).to_dict()
            for a, b in (
                ("soft_labels", "labels_only"),
                ("pseudo_labels", "labels_only"),
                ("soft_labels", "pseudo_labels"),
            )
            if len(seeds) >= 2
        },
        "gap_to_teacher": 100 * (teacher_value - float(np.mean(values["soft_labels"]))),
    }
    ctx.log(
        "task_distillation: "
        + ", ".join(f"{r} {100 * np.mean(v):.1f}" for r, v in values.items())
        + f", teacher {100 * teacher_value:.1f}"
    )
    return result


def _write_logits(teacher_dir: str, experiment, data, loaded: dict, path: Path) -> None:
    """The fine-tuned teacher's logits on every training sentence of the task, in file order."""
    everything = apply_overrides(experiment, [("task.max_train_examples", None)])
    train = cached_task_data(everything, loaded).train
    predict = make_predictor(load_classifier(teacher_dir), experiment.task.seq_length)
    write_teacher_logits(
        path,
        predict(train.features),
        experiment.task.name,
        data.tokenizer_sha256,
        {"teacher": "the task_distillation step's fine-tuned teacher"},
    )


# -------------------------------------------------------------------- payoff
def run_payoff(ctx: Context, settings: Mapping[str, Any]) -> dict:

    gate = ctx.result("teacher_gate")
    teacher = ctx.result("teacher")
    mlm = ctx.result("mlm_seeds")
    budget = ctx.result("label_budget")
    full = read_record(ctx.step_dir("label_budget_all"))  # optional: every label
    budgets = {**budget["budgets"], **(full["result"]["budgets"] if full else {})}
    distill = ctx.result("task_distillation")
    transfer = ctx.result("transfer")
    payoff = {
        "task": budget["task"],
        "train_sentences": budget["available"],
        "teacher": {
            "source": teacher.get("source", "trained"),
            "mlm_accuracy": teacher["eval"]["mlm_accuracy"],
            "gate": gate["verdict"],
        },
        "mlm": {
            MLM_NAMES[row]: entry["mlm_accuracy"]["values"] for row, entry in mlm["rows"].items()
        },
        "label_budget": {
            b: {MLM_NAMES.get(m, m): e["values"] for m, e in entry["models"].items()}
            for b, entry in budgets.items()
        },
        "task_distillation": {
            k: distill[k]
            for k in (
                "labels",
                "temperature",
                "teacher",
                "labels_only",
                "soft_labels",
                "pseudo_labels",
            )
        },
        "attention": [
            {"layer": row["layer"], "distance": "js", **row["js"]} for row in transfer["attention"]
        ],
    }
    payoff["paired"] = payoff_tables.paired_records(payoff)
    path = ctx.out_dir / PAYOFF_FILE
    atomic.write_text(path, strict_json.dumps(payoff, indent=2) + "\n")
    ctx.log(f"payoff: {path}")
    return {"path": str(path), **payoff}


STEPS = [
    Step(
        "mlm_seeds",
        "the payoff's students with more pre-training seeds (held-out MLM)",
        run_mlm_seeds,
        ("teacher",),
        uses=lambda s: list(s["rows"]),
    ),
    Step(
        "label_budget",
        "SST-2 with 500 to all labels: teacher, PKT, copy-only, no transfer, paired seeds",
        _label_budget_runner("label_budget"),
        ("data",),
        uses=lambda s: list(s["models"]),
    ),
    Step(
        "label_budget_all",
        "SST-2 with every label (optional: --steps label_budget_all)",
        _label_budget_runner("label_budget_all"),
        ("data",),
        uses=lambda s: list(s["models"]),
        optional=True,
    ),
    Step(
        "task_distillation",
        "output distillation: N labels alone, with the teacher's soft or hard targets",
        run_task_distillation,
        ("data", "teacher"),
        uses=lambda s: [s["student"]],
    ),
    Step(
        "payoff",
        "payoff.json: what the student gains from its teacher, paired over seeds",
        run_payoff,
        ("teacher_gate", "mlm_seeds", "label_budget", "task_distillation", "transfer"),
        rerun=True,  # seconds over records: it always shows them as they are (and
        # label_budget_all's, once that optional step has run)
    ),
]
