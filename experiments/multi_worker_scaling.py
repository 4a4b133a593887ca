"""Pre-training throughput on one worker and on a two-worker cluster on the same machine.

    python experiments/multi_worker_scaling.py [--rounds 3] [--steps 80]
        [--out results/multi_worker_scaling.json]

Each variant runs `python -m mbert_lib pretrain` on SYNTHETIC batches (the
tiny teacher, seq 128, global batch 32: the same B·T tokens a step in every
variant) into a fresh directory, the variants interleaved round by round so
background load hits them alike:

    one_worker                   one process, TensorFlow's default threads
    two_workers                  MultiWorkerMirroredStrategy, two processes on
                                 loopback, TensorFlow's default threads each
    two_workers_one_thread_each  the same with TF_NUM_INTRAOP_THREADS=1 per worker

Throughput is the chief's tokens/s as the trainer logs it (TensorBoard
train/tokens_per_second, a moving window that leaves out checkpoints and
evaluation), the median of the values logged after the first `--skip`
steps (tracing and warm-up). The JSON holds each run's value, each variant's
median, its ratio to one_worker's, and the hardware.

On a machine of C cores, two workers share those cores: what the ratio can
show is the cost of the collective all-reduce and of the second process,
not a speed-up; on separate hosts each worker brings its own cores.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mbert_lib.hardware import cpu_info, describe
from mbert_lib.train.local_cluster import start_workers, wait_workers
from mbert_lib.train.progress import read_scalars

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = (
    "data.source=synthetic,data.vocab_size=512,data.seq_length=128,"
    "data.max_predictions_per_seq=20,model.overrides.vocab_size=512,"
    "trainer.batch_size=32,trainer.eval_steps=1,trainer.eval_interval=100000,"
    "trainer.checkpoint_interval=100000,trainer.log_interval=10,"
    "trainer.learning_rate.warmup_steps=10"
)
VARIANTS = {
    "one_worker": (1, {}),
    "two_workers": (2, {}),
    "two_workers_one_thread_each": (2, {"TF_NUM_INTRAOP_THREADS": "1"}),
}


def run(variant: str, steps: int, skip: int, work: Path) -> float:
    """The chief's median tokens/s after `skip` steps of one run of `variant`."""
    workers, env = VARIANTS[variant]
    model_dir = work / f"{variant}_{time.monotonic_ns()}"
    overrides = f"{SETTINGS},trainer.train_steps={steps}"
    if workers > 1:
        overrides += ",runtime.distribution_strategy=multi_worker_mirrored"
    argv = [
        "pretrain",
        "--config_file",
        str(ROOT / "experiments/pretrain_tiny_teacher.yaml"),
        "--params_override",
        overrides,
        "--model_dir",
        str(model_dir),
        "--no_progress",
    ]
    log_dir = work / f"{model_dir.name}_logs"
    log_dir.mkdir()
    procs = start_workers(argv, workers, env={**os.environ, **env}, log_dir=log_dir)
    codes = wait_workers(procs, timeout=1800)
    if codes != [0] * workers:
        tail = (log_dir / "worker_0.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"{variant} failed with exit codes {codes}:\n{tail}")
    steps_logged, values = read_scalars(model_dir / "tensorboard" / "train")["tokens_per_second"]
    kept = [v for s, v in zip(steps_logged, values, strict=True) if s > skip]
    return statistics.median(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--skip", type=int, default=20, help="steps left out as warm-up")
    parser.add_argument("--out", default=str(ROOT / "results/multi_worker_scaling.json"))
    args = parser.parse_args()
    if args.steps <= args.skip + 10:
        parser.error(f"--steps ({args.steps}) must exceed --skip ({args.skip}) by over 10")
    samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            order = list(VARIANTS) if round_ % 2 == 0 else list(reversed(VARIANTS))
            for variant in order:
                samples[variant].append(run(variant, args.steps, args.skip, Path(tmp)))
                print(f"round {round_ + 1}: {variant} {samples[variant][-1]:,.0f} tokens/s")
    medians = {name: statistics.median(values) for name, values in samples.items()}
    record = {
        "command": "python experiments/multi_worker_scaling.py "
        f"--rounds {args.rounds} --steps {args.steps} --skip {args.skip}",
        "hardware": describe(),
        "cpu": cpu_info(),
        "settings": SETTINGS,
        "global_batch_tokens": 32 * 128,
        "variants": {
            name: {
                "workers": VARIANTS[name][0],
                "env": VARIANTS[name][1],
                "tokens_per_second": [round(v, 1) for v in samples[name]],
                "median_tokens_per_second": round(medians[name], 1),
                "ratio_to_one_worker": round(medians[name] / medians["one_worker"], 3),
            }
            for name in VARIANTS
        },
    }
    Path(args.out).write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record["variants"], indent=2))


if __name__ == "__main__":
    sys.exit(main())
