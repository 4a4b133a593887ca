"""The teacher, the PKT student and the no-transfer student fine-tuned on all of SST-2.

Each model of a finished laptop run (`--run`, default runs/laptop) is fine-tuned
with `experiments/finetune_sst2_laptop.yaml` on the whole training set (67,349
sentences, `task.max_train_examples=null`) for `--epochs` epochs (default 1),
length-grouped batches (`trainer.length_pool=16`), at `--learning_rate`, for each
of `--seeds`. A run already finished in `--out` is read, not redone (the
trainer's own check), so a killed grid resumes. The JSON holds each run's dev
accuracy, steps and seconds, each model's mean ± std, and the differences
teacher − pkt, pkt − no_transfer and teacher − no_transfer paired by fine-tuning
seed, with their 95 % confidence intervals and verdicts (mbert_lib.paired).

    python experiments/finetune_full_sst2.py --data-dir ../shared/data \
        --json results/finetune_full_sst2.json
    python experiments/finetune_full_sst2.py --data-dir ../shared/data --epochs 2 \
        --models teacher,pkt --out runs/ft_full_sst2_e2 \
        --json results/finetune_full_sst2_2epochs.json
"""

from __future__ import annotations

import argparse
import os
import statistics

import mbert_lib  # noqa: F401  (selects tf-keras before TF is imported)
from mbert_lib.atomic import write_text
from mbert_lib.experiment import load_experiment
from mbert_lib.experiment.finetune import FinetuneExperiment
from mbert_lib.finetune.trainer import run_finetuning
from mbert_lib.hardware import cpu_info, describe
from mbert_lib.paired import paired_difference
from mbert_lib.strict_json import dumps

CONFIG_FILE = "experiments/finetune_sst2_laptop.yaml"
RECIPE = "task.max_train_examples=null,trainer.length_pool=16"
PAIRS = (("teacher", "pkt"), ("pkt", "no_transfer"), ("teacher", "no_transfer"))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", "--data_dir", required=True)
    parser.add_argument("--run", default="runs/laptop", help="the finished laptop run")
    parser.add_argument("--models", default="teacher,pkt,no_transfer")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--out", default="runs/ft_full_sst2")
    parser.add_argument("--json", default="results/finetune_full_sst2.json")
    args = parser.parse_args(argv)

    runs, accuracy = [], {}
    for seed in [int(s) for s in args.seeds.split(",")]:
        for model in args.models.split(","):
            overrides = (
                f"task.data_dir={args.data_dir},model.init_checkpoint={args.run}/{model},"
                f"{RECIPE},trainer.epochs={args.epochs},"
                f"trainer.learning_rate={args.learning_rate},trainer.seed={seed}"
            )
            experiment = load_experiment(CONFIG_FILE, overrides, cls=FinetuneExperiment)
            done = run_finetuning(experiment, os.path.join(args.out, f"{model}_s{seed}"))
            value = 100 * done["eval"]["accuracy"]
            accuracy.setdefault(model, []).append(value)
            runs.append(
                {
                    "model": model,
                    "seed": seed,
                    "dev_accuracy": value,
                    "train_steps": done["train_steps"],
                    "seconds": done["seconds"],
                }
            )
    differences = {}
    for a, b in PAIRS:
        if a in accuracy and b in accuracy:
            differences[f"{a} - {b}"] = paired_difference(accuracy[a], accuracy[b]).to_dict()
    record = {
        "hardware": cpu_info(),
        "hardware_text": describe(),
        "recipe": f"{CONFIG_FILE} with {RECIPE}, {args.epochs} epoch(s), "
        f"learning rate {args.learning_rate:g}",
        "runs": runs,
        "models": {
            m: {"values": v, "mean": statistics.mean(v), "std": statistics.stdev(v)}
            for m, v in accuracy.items()
            if len(v) > 1
        },
        "differences": differences,
    }
    write_text(args.json, dumps(record, indent=1) + "\n")
    for m, s in record["models"].items():
        print(f"{m:12s} {s['mean']:.2f} ± {s['std']:.2f}  {[round(v, 2) for v in s['values']]}")
    for name, d in differences.items():
        print(f"{name}: {d['mean']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}] ({d['verdict']})")


if __name__ == "__main__":
    main()
