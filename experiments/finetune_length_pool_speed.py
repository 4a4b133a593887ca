"""Fine-tuning step time with length-grouped batches (trainer.length_pool) against [B, T] batches.

For each model directory, builds the classifier the fine-tuning trainer
builds, on the task's real training set, and times `--steps` training steps
per setting in rounds that alternate the settings (0 = random batches at
[B, T], 1 = the same batches cut to their longest example, k = sorted within
runs of k batches and cut). Before the rounds, `--warmup` steps per setting
are timed apart: cut batches come in several widths, and the first step at
each width traces and compiles (the XLA LayerNorm of each layer), a cost every
fine-tuning run pays once. JSON: per model and setting the warm-up seconds,
the seconds per step of each round, their median, the median ratio against
length_pool 0 measured in the same round, and the mean batch width; the
hardware and load.

    python experiments/finetune_length_pool_speed.py --data-dir ../shared/data \
        --models runs/laptop/teacher,runs/laptop/pkt --json results/finetune_length_pool.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import mbert_lib  # noqa: F401  (selects tf-keras before TF is imported)
from mbert_lib.atomic import write_text
from mbert_lib.checkpoints import load_config, load_encoder
from mbert_lib.experiment import load_experiment
from mbert_lib.experiment.finetune import FinetuneExperiment
from mbert_lib.finetune.data import load_task_data, train_batches
from mbert_lib.finetune.trainer import finetune_step, model_tokenizer
from mbert_lib.hardware import cpu_info, describe
from mbert_lib.models import build_classifier
from mbert_lib.optim import create_optimizer
from mbert_lib.strict_json import dumps
from mbert_lib.train.strategy import create_strategy

CONFIG_FILE = "experiments/finetune_sst2_laptop.yaml"


def timed_steps(train_step, iterator, steps: int) -> float:
    """Seconds per step over `steps` steps (after the warm-up)."""
    start = time.perf_counter()
    for _ in range(steps):
        out = train_step(iterator)
    float(out["loss"])
    return (time.perf_counter() - start) / steps


def bench_model(
    model_dir: str, data_dir: str, pools: list[int], steps: int, rounds: int, warmup: int
):
    experiment = load_experiment(
        CONFIG_FILE,
        f"task.data_dir={data_dir},task.max_train_examples=null,model.init_checkpoint={model_dir}",
        cls=FinetuneExperiment,
    )
    config = load_config(model_dir)
    data = load_task_data(experiment.task, model_tokenizer(experiment, config))
    trainer = experiment.trainer
    strategy = create_strategy("default")
    steppers = {}
    for pool in pools:
        with strategy.scope():
            model = build_classifier(config, 2, 0.1, encoder=load_encoder(model_dir, config))
            optimizer = create_optimizer(trainer.optimizer, trainer.schedule(10**6), 10**6)
            optimizer.build(model.trainable_variables)
            step = finetune_step(model, optimizer)  # the trainer's step
        widths = train_batches(data.train, trainer.batch_size, trainer.seed, pool).take(200)
        iterator = iter(train_batches(data.train, trainer.batch_size, trainer.seed, pool))
        start = time.perf_counter()
        for _ in range(warmup):
            out = step(iterator)
        float(out["loss"])
        steppers[pool] = (
            step,
            iterator,
            statistics.mean(int(b["input_mask"].shape[1]) for b in widths),
            time.perf_counter() - start,
        )
    seconds = {pool: [] for pool in pools}
    for r in range(rounds):
        for pool in pools:
            step, iterator, *_ = steppers[pool]
            seconds[pool].append(timed_steps(step, iterator, steps))
            print(
                f"{model_dir} round {r} length_pool {pool}: {seconds[pool][-1] * 1e3:.1f} ms/step"
            )
    base = seconds[pools[0]]
    return {
        "train_examples": len(data.train),
        "batch_size": trainer.batch_size,
        "seq_length": experiment.task.seq_length,
        "settings": {
            str(pool): {
                "seconds_per_step": seconds[pool],
                "median_seconds_per_step": statistics.median(seconds[pool]),
                "ratio_to_unpooled_per_round": [b / s for b, s in zip(base, seconds[pool])],
                "median_speedup_over_unpooled": statistics.median(
                    [b / s for b, s in zip(base, seconds[pool])]
                ),
                "mean_batch_width": steppers[pool][2],
                "warmup_steps": warmup,
                "warmup_seconds": steppers[pool][3],
            }
            for pool in pools
        },
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", "--data_dir", required=True)
    parser.add_argument("--models", default="runs/laptop/teacher,runs/laptop/pkt")
    parser.add_argument(
        "--pools", default="0,1,16", help="length_pool settings; the first is the baseline"
    )
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=60, help="steps per setting, timed apart")
    parser.add_argument("--json", default="results/finetune_length_pool.json")
    args = parser.parse_args(argv)
    pools = [int(p) for p in args.pools.split(",")]
    load_start = os.getloadavg()[0]
    models = {
        m: bench_model(m, args.data_dir, pools, args.steps, args.rounds, args.warmup)
        for m in args.models.split(",")
    }
    record = {
        "hardware": cpu_info(),
        "hardware_text": describe(),
        "load_1min": {"start": load_start, "end": os.getloadavg()[0]},
        "steps_per_round": args.steps,
        "warmup_steps": args.warmup,
        "rounds": args.rounds,
        "models": models,
    }
    write_text(args.json, dumps(record, indent=1) + "\n")
    print(
        json.dumps(
            {
                m: {p: v["median_speedup_over_unpooled"] for p, v in r["settings"].items()}
                for m, r in models.items()
            }
        )
    )


if __name__ == "__main__":
    main()
