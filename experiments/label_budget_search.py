"""The fine-tuning recipe at a small label budget: a grid of settings x models x seeds.

At 500 SST-2 labels, 200 steps at rate 1e-3 left every model near the majority class
(docs/payoff.md, "Downstream"). This script fine-tunes each model of a finished laptop run
(`--run`) on `--budget` labels with every combination of `--grid` and every seed, in the
pipeline's own way (experiments/finetune_sst2_laptop.yaml, length-grouped batches, seed i
draws the i-th label subset and fixes the head and the batch order, one evaluation of the
last model on the whole dev set), and adds the results to `--json`: per run its dev
accuracy, per (model, setting) the mean ± std over seeds, and the hardware. A finished
run in `--out` is read back, not redone, so a killed search resumes; settings from earlier
invocations stay in the JSON.

    python experiments/label_budget_search.py --data-dir ../shared/data --budget 500 \
        --models pkt,no_transfer --seeds 0,1,2 \
        --grid "trainer.learning_rate=1e-4,3e-4,1e-3;trainer.train_steps=200,600"
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import yaml

import mbert_lib  # noqa: F401  (selects tf-keras before TF is imported)
from mbert_lib.atomic import write_text
from mbert_lib.experiment import load_experiment
from mbert_lib.experiment.finetune import FinetuneExperiment
from mbert_lib.finetune.search import grid_experiments, mean_std, run_name
from mbert_lib.finetune.trainer import cached_task_data, run_finetuning
from mbert_lib.hardware import cpu_info, describe
from mbert_lib.paired import paired_difference
from mbert_lib.strict_json import dumps

CONFIG_FILE = "experiments/finetune_sst2_laptop.yaml"
BASE = "trainer.length_pool=16"
PAIRS = (
    ("teacher", "pkt"),
    ("pkt", "ablation_copy"),
    ("pkt", "no_transfer"),
    ("ablation_copy", "no_transfer"),
    ("teacher", "no_transfer"),
)


def parse_grid(text: str) -> dict[str, list]:
    """'a.b=1,2;c=x' -> {"a.b": [1, 2], "c": ["x"]}."""
    grid = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        key, _, values = part.partition("=")
        if not values:
            raise SystemExit(f"--grid: {part!r} is not key=v1,v2,...")
        grid[key.strip()] = [yaml.safe_load(v.strip()) for v in values.split(",")]
    return grid


def main(argv=None) -> None:
    args = _parse_args(argv)
    grid = parse_grid(args.grid)
    _check_train_steps(grid, args.extra)
    path = Path(args.json)
    record = json.loads(path.read_text()) if path.exists() else {"runs": []}
    runs = {(r["model"], r["budget"], r["setting"], r["seed"]): r for r in record["runs"]}
    loaded: dict = {}
    for model in args.models.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            runs.update(_run_grid(args, grid, model, seed, loaded))
    groups = _group_by_setting(runs.values())
    summary, comparisons = _summary(groups), _comparisons(groups)
    record = {
        "what": __doc__.splitlines()[0],
        "recipe": f"{CONFIG_FILE} with {BASE}, each run's settings in its 'setting'",
        "hardware": cpu_info(),
        "hardware_text": describe(),
        "runs": sorted(runs.values(), key=lambda r: (r["budget"], r["model"], r["setting"])),
        "summary": summary,
        "comparisons": comparisons,
    }
    write_text(path, dumps(record, indent=1) + "\n")
    for key, s in summary.items():
        print(f"{key:70s} {100 * s['mean']:.1f} ± {100 * s['std']:.1f} (n={len(s['values'])})")
    for key, d in comparisons.items():
        print(f"{key:70s} {d['mean']:+.1f} [{d['low']:+.1f}, {d['high']:+.1f}] {d['verdict']}")


def _parse_args(argv) -> argparse.Namespace:
    """The command line's arguments."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", "--data_dir", required=True)
    parser.add_argument("--run", default="runs/laptop", help="a finished laptop run")
    parser.add_argument("--models", default="teacher,pkt,ablation_copy,no_transfer")
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--grid", required=True)
    parser.add_argument("--extra", default="", help="more fixed overrides, key=value,...")
    parser.add_argument("--out", default="runs/label_budget_search")
    parser.add_argument("--json", default="results/label_budget_search.json")
    return parser.parse_args(argv)


def _check_train_steps(grid: dict, extra: str) -> None:
    """Exits unless the grid or the extra overrides set trainer.train_steps."""
    if "trainer.train_steps" not in grid and "trainer.train_steps" not in _extra(extra):
        raise SystemExit(
            "--grid or --extra must set trainer.train_steps: without it a run keeps its best "
            "epoch on the dev set, which is what it is scored on"
        )


def _run_grid(args, grid: dict, model: str, seed: int, loaded: dict) -> dict:
    """Fine-tunes `model` with `seed` at every point of `grid` (a finished run in --out is
    read back); returns {(model, budget, setting, seed): its run record}. `loaded`:
    the task data already read (`cached_task_data`)."""
    overrides = ",".join(
        filter(
            None,
            [
                f"task.data_dir={args.data_dir}",
                f"model.init_checkpoint={args.run}/{model}",
                f"task.max_train_examples={args.budget}",
                f"task.data_seed={seed}",
                BASE,
                args.extra,
            ],
        )
    )
    experiment = load_experiment(CONFIG_FILE, overrides, cls=FinetuneExperiment)
    runs = {}
    for point, _, point_experiment in grid_experiments(experiment, grid, [seed]):
        setting = run_name({**point, **_extra(args.extra)}, seed).rsplit(",seed=", 1)[0]
        directory = os.path.join(args.out, str(args.budget), model, setting, f"s{seed}")
        print(f"{model} {args.budget} labels {setting} seed {seed}", flush=True)
        done = run_finetuning(
            point_experiment,
            directory,
            data=cached_task_data(point_experiment, loaded),
            show_progress=False,
            log=lambda _: None,
        )
        runs[(model, args.budget, setting, seed)] = {
            "model": model,
            "budget": args.budget,
            "setting": setting,
            "seed": seed,
            "dev_accuracy": done["eval"]["accuracy"],
            "train_steps": done["train_steps"],
            "seconds": done["seconds"],
        }
        print(f"  dev accuracy {100 * done['eval']['accuracy']:.2f}", flush=True)
    return runs


def _group_by_setting(runs) -> dict:
    """{(budget, setting): {model: {seed: dev accuracy}}}, seeds in ascending order."""
    groups: dict = {}
    for r in sorted(runs, key=lambda r: r["seed"]):
        groups.setdefault((r["budget"], r["setting"]), {}).setdefault(r["model"], {})[r["seed"]] = (
            r["dev_accuracy"]
        )
    return groups


def _summary(groups: dict) -> dict:
    """{"budget model setting": seeds, values, mean, std} per model of each group."""
    summary = {}
    for (budget, setting), models in sorted(groups.items()):
        for model, by_seed in models.items():
            values = list(by_seed.values())
            mean, std = mean_std(values)
            summary[f"{budget} {model} {setting}"] = {
                "seeds": list(by_seed),
                "values": values,
                "mean": mean,
                "std": std,
            }
    return summary


def _comparisons(groups: dict) -> dict:
    """{"budget a − b setting": paired difference in points} for each of PAIRS that a
    group has on at least two common seeds."""
    comparisons = {}
    for (budget, setting), models in sorted(groups.items()):
        for a, b in PAIRS:
            if a in models and b in models:
                seeds = [s for s in models[a] if s in models[b]]
                if len(seeds) >= 2:
                    comparisons[f"{budget} {a} − {b} {setting}"] = paired_difference(
                        [100 * models[a][s] for s in seeds], [100 * models[b][s] for s in seeds]
                    ).to_dict()
    return comparisons


def _extra(text: str) -> dict:
    return dict(part.split("=", 1) for part in filter(None, text.split(",")))


if __name__ == "__main__":
    main()
