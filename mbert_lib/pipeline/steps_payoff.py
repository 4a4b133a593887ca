"""Does distillation pay off? The steps that measure it, paired seed by seed.

    mlm_seeds          (optional) the students whose held-out MLM the payoff compares (pkt,
                       ablation_copy = copy-only, no_transfer) pre-trained again with
                       trainer.seed = 1, 2, ... (seed 0 is the row's own step); held-out MLM
                       accuracy per seed
    label_budget       (optional) SST-2 with N labels, for N in the budgets: every model
                       fine-tuned for the budget's steps on the same N sentences per seed
                       (the subset and the fine-tuning seed are both the seed), evaluated
                       once at the end; each pair of models compared over the same seeds;
                       label_budget_all (optional) the same for the larger budgets, which
                       take longer
    task_distillation  output distillation (mbert_lib.finetune.task_distill): the teacher
                       fine-tuned on every label, its logits on every training sentence; the
                       student with N labels alone, with N labels and the teacher's soft
                       targets on the other sentences, and with its hard targets (pseudo-
                       labels); the same steps and seeds for each
    task_distillation_sweep (optional) the soft-target student at other temperatures τ and
                       lengths, on the same seeds, each paired with the rows above
    payoff             <out>/payoff.json: the teacher gate, the MLM rows, the label-budget
                       curve, the task distillation and the attention through the recipe,
                       every list per seed in the same seed order (mbert_lib.paired pairs
                       them by index). A full run leaves the optional steps out: its MLM
                       lists hold seed 0 (the rows' own steps) and its label-budget curve
                       is empty; payoff.json's "sources" says which steps filled them

mlm_seeds and label_budget are optional to keep a full run within its 45-minute budget
(docs/results.md, "Wall time"); `--steps mlm_seeds,label_budget,payoff,report` adds them
to a finished run.

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
from mbert_lib.experiment.finetune import FinetuneExperiment
from mbert_lib.finetune.evaluate import make_predictor
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
def budget_overrides(size: int | None, spec: Mapping, model: Mapping) -> list[tuple]:
    """The dotted overrides of one label-budget run, in order: the subset's size (None: every
    label), its length (train_steps or epochs), then the model's settings."""
    length = (
        ("trainer.train_steps", spec["train_steps"])
        if "train_steps" in spec
        else ("trainer.epochs", spec["epochs"])
    )
    return [
        ("task.max_train_examples", size),
        length,
        *model.items(),
    ]


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
        entry = {"size": sizes[budget] or available, "seeds": list(range(spec["seeds"]))}
        entry["models"] = {}
        for model, init in models.items():
            values, dirs = [], []
            for seed in entry["seeds"]:
                pairs = budget_overrides(sizes[budget], spec, settings["models"][model])
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
    _check_temperature("task_distillation", settings["temperature"])
    if not isinstance(labels, int) or isinstance(labels, bool) or not 1 <= labels < available:
        raise PipelineError(
            f"task_distillation.labels: {labels!r} must be a whole number of labeled sentences "
            f"from 1 to {available - 1:,} (the training set's {available:,} less at least one "
            "sentence for the transfer set)"
        )
    if not isinstance(seeds, int) or seeds < 2:
        raise PipelineError(f"task_distillation.seeds: {seeds!r}; pairing needs at least 2")


def _check_temperature(where: str, tau) -> None:
    if not isinstance(tau, int | float) or isinstance(tau, bool) or not 0 < tau < float("inf"):
        raise PipelineError(
            f"{where}: temperature {tau!r} must be a number > 0 (τ softens the teacher's "
            "distribution; 1 leaves it as it is)"
        )


def check_task_distillation_sweep(settings: Mapping[str, Any]) -> None:
    """Refuses sweep settings that cannot run, before anything is trained (PipelineError)."""
    runs = settings.get("runs")
    if not isinstance(runs, Mapping) or not runs:
        raise PipelineError(
            "task_distillation_sweep.runs: expected a mapping of run names to "
            f"{{temperature: τ, train_steps: n (optional)}}, got {runs!r}"
        )
    for name, spec in runs.items():
        where = f"task_distillation_sweep.runs.{name}"
        if not isinstance(spec, Mapping) or set(spec) - {"temperature", "train_steps"}:
            raise PipelineError(
                f"{where}: expected {{temperature: τ, train_steps: n (optional)}}, got {spec!r}"
            )
        _check_temperature(where, spec.get("temperature"))
        steps = spec.get("train_steps", 1)
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
            raise PipelineError(f"{where}.train_steps: {steps!r} must be a whole number >= 1")


def _student_pairs(base: Mapping[str, Any], logits: Path | None, **distill) -> list[tuple]:
    """The overrides of one task-distillation student: the step's label budget, steps and
    rates, then (with the teacher's logits) the distill settings, e.g. temperature=2.0."""
    pairs = [
        ("task.max_train_examples", base["labels"]),
        ("trainer.train_steps", distill.pop("train_steps", base["train_steps"])),
        *base["student_overrides"].items(),
    ]
    if logits is not None:
        pairs.append(("distill.teacher_logits", str(logits)))
        pairs += [(f"distill.{k}", v) for k, v in distill.items()]
    return pairs


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
    rows = {
        "labels_only": _student_pairs(settings, None),
        "soft_labels": _student_pairs(settings, logits_path, temperature=settings["temperature"]),
        "pseudo_labels": _student_pairs(settings, logits_path, targets="hard"),
    }
    seeds = list(range(settings["seeds"]))
    values, model_dirs = {}, {"teacher": [teacher["model_dir"]]}
    for row, pairs in rows.items():
        values[row], model_dirs[row] = [], []
        for seed in seeds:
            ctx.log(f"task_distillation: {row}, seed {seed}")
            experiment = _experiment(ctx, settings, init, seed, pairs)
            done = _run(ctx, "task_distillation", f"{row}/seed{seed}", experiment, loaded, upstream)
            values[row].append(done["eval"][done["metric"]])
            model_dirs[row].append(done["model_dir"])
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
        "model_dirs": model_dirs,
    }
    ctx.log(
        "task_distillation: "
        + ", ".join(f"{r} {100 * np.mean(v):.1f}" for r, v in values.items())
        + f", teacher {100 * teacher_value:.1f}"
    )
    return result


def run_task_distillation_sweep(ctx: Context, settings: Mapping[str, Any]) -> dict:
    """The task_distillation student with soft targets at other temperatures or lengths, on
    the same seeds (so each run pairs with the step's labels-only and soft-target rows)."""
    check_task_distillation_sweep(settings)
    base = ctx.settings["task_distillation"]
    done_before = ctx.result("task_distillation")
    logits_path = ctx.step_dir("task_distillation") / "teacher_logits.npy"
    init = ctx.result(base["student"])["model_dir"]
    upstream = ctx.record_fingerprint(base["student"]) + ctx.record_fingerprint("teacher")
    loaded: dict = {}
    seeds, teacher = done_before["seeds"], done_before["teacher"][0]
    runs = {}
    for name, spec in settings["runs"].items():
        values, pairs = [], _student_pairs(base, logits_path, **spec)
        for seed in seeds:
            ctx.log(f"task_distillation_sweep: {name}, seed {seed}")
            experiment = _experiment(ctx, base, init, seed, pairs)
            done = _run(
                ctx, "task_distillation_sweep", f"{name}/seed{seed}", experiment, loaded, upstream
            )
            values.append(done["eval"][done["metric"]])
        runs[name] = {
            "temperature": spec["temperature"],
            "train_steps": spec.get("train_steps", base["train_steps"]),
            "values": values,
            "gap_to_teacher": 100 * (teacher - float(np.mean(values))),
            "comparisons": {
                f"{name} − {row}": paired_difference(
                    [100 * v for v in values], [100 * v for v in done_before[row]]
                ).to_dict()
                for row in ("labels_only", "soft_labels")
            },
        }
        ctx.log(f"task_distillation_sweep: {name} {100 * np.mean(values):.1f}")
    return {
        "seeds": seeds,
        "teacher": teacher,
        "base": {k: done_before[k] for k in ("temperature", "train_steps", "labels")},
        "runs": runs,
    }


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
BUDGET_STEPS = ("label_budget", "label_budget_all")


def _mlm_values(ctx: Context) -> tuple[dict[str, list[float]], str]:
    """Held-out MLM accuracy per payoff student and seed: the optional mlm_seeds step's
    seeds when it ran on the rows as they are now, else seed 0 from the rows' own steps."""
    own = {row: ctx.result(row)["eval"]["mlm_accuracy"] for row in MLM_NAMES}
    record = read_record(ctx.step_dir("mlm_seeds"))
    rows = record["result"]["rows"] if record else {}
    if set(rows) >= set(MLM_NAMES) and all(
        rows[row]["mlm_accuracy"]["values"][0] == own[row] for row in MLM_NAMES
    ):
        return {
            MLM_NAMES[row]: rows[row]["mlm_accuracy"]["values"] for row in MLM_NAMES
        }, "mlm_seeds"
    if record:
        ctx.log("payoff: the mlm_seeds record is of other rows than this run's; seed 0 only")
    return {MLM_NAMES[row]: [value] for row, value in own.items()}, "rows (seed 0)"


def run_payoff(ctx: Context, settings: Mapping[str, Any]) -> dict:

    gate = ctx.result("teacher_gate")
    teacher = ctx.result("teacher")
    mlm, mlm_source = _mlm_values(ctx)
    curves = [read_record(ctx.step_dir(s)) for s in BUDGET_STEPS]  # optional steps
    budgets = {b: e for r in curves if r for b, e in r["result"]["budgets"].items()}
    distill = ctx.result("task_distillation")
    transfer = ctx.result("transfer")
    payoff = {
        "task": distill["task"],
        "train_sentences": distill["labels"] + distill["transfer_sentences"],
        "sources": {
            "mlm": mlm_source,
            "label_budget": [s for s, r in zip(BUDGET_STEPS, curves, strict=True) if r],
        },
        "teacher": {
            "source": teacher.get("source", "trained"),
            "mlm_accuracy": teacher["eval"]["mlm_accuracy"],
            "gate": gate["verdict"],
        },
        "mlm": mlm,
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
        "the payoff's students with more pre-training seeds (held-out MLM; optional)",
        run_mlm_seeds,
        ("teacher",),
        uses=lambda s: list(s["rows"]),
        optional=True,
    ),
    Step(
        "label_budget",
        "SST-2 with few labels: teacher, PKT, copy-only, no transfer, paired seeds (optional)",
        _label_budget_runner("label_budget"),
        ("data",),
        uses=lambda s: list(s["models"]),
        optional=True,
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
        "task_distillation_sweep",
        "output distillation at other temperatures and lengths (optional)",
        run_task_distillation_sweep,
        ("task_distillation",),
        optional=True,
    ),
    Step(
        "payoff",
        "payoff.json: what the student gains from its teacher, paired over seeds",
        run_payoff,
        ("teacher_gate", *MLM_NAMES, "task_distillation", "transfer"),
        rerun=True,  # seconds over records: it always shows them as they are, with the
        # optional mlm_seeds, label_budget and label_budget_all once they have run
    ),
]
