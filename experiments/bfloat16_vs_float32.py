"""bfloat16 against float32 for distillation and pre-training steps, in one process.

    python experiments/bfloat16_vs_float32.py [--rounds 3] [--repeats 10] [--loss_steps 40]
        [--out results/bfloat16_vs_float32.json]

Speed: the steps of `bench distill` (`mbert_lib.bench.distill.distill_rounds`: the first
and last layer-wise PKT stage and PD, tiny_teacher -> tiny_student with E = 64, T = 128,
batch 32, as the bench's default problem) and of `bench pretrain`
(`pretrain_step_throughput`, the tiny teacher) under the float32 policy and the
mixed_bfloat16 one (`runtime.mixed_precision=bfloat16`: float32 variables, bfloat16
matmuls and activations). Both precisions are built in this one process and timed in
alternating rounds, so background load hits both alike; the JSON holds each round's
medians and the per-round ratio float32 / bfloat16 (> 1: bfloat16 is faster).

Outcome: from the same seed-0 weights, `--loss_steps` steps of PD distillation and of
teacher pre-training on the same synthetic batches under each policy; the JSON holds both
loss curves, so a reader sees whether bfloat16 trains the same.

Record of the CPU: its SIMD flags say whether it has native bfloat16 (avx512_bf16, AMX).
"""

import argparse
import json
import statistics
import time
from pathlib import Path

import tensorflow as tf
import tf_keras

import mbert_lib
from mbert_lib.bench.distill import NUM_BATCHES, distill_rounds
from mbert_lib.bench.pretrain import pretrain_step_throughput
from mbert_lib.distill.plan import plan_stages, stage_variables
from mbert_lib.distill.progressive import TransferPlan
from mbert_lib.distill.step import stage_step
from mbert_lib.experiment import OptimizerSection
from mbert_lib.experiment.distill import DistillationSection
from mbert_lib.hardware import cpu_info, describe
from mbert_lib.optim import Lamb, WarmupPolynomialDecay
from mbert_lib.train.objectives import PretrainingObjective
from mbert_lib.train.step import make_train_step
from mbert_lib.train.strategy import precision_policy
from mbert_lib.train.synthetic import synthetic_pretraining_dataset

PRECISIONS = ("float32", "bfloat16")
T, B, P = 128, 32, 20


def configs():
    teacher = mbert_lib.get_preset("tiny_teacher").replace(embedding_size=64)
    student = mbert_lib.get_preset("tiny_student").replace(embedding_size=64)
    return teacher, student


def batches(vocab_size: int, count: int) -> list:
    """The same `count` synthetic batches [B, T] for every run."""
    return list(
        synthetic_pretraining_dataset(
            num_examples=B * count,
            batch_size=B,
            seq_length=T,
            max_predictions_per_seq=P,
            vocab_size=vocab_size,
        )
    )


def distill_losses(precision: str, steps: int) -> list[float]:
    """PD losses over `steps` steps from seed-0 models (the bench's PD stage)."""
    teacher_config, student_config = configs()
    tf_keras.utils.set_random_seed(0)
    distillation = DistillationSection(strategy="progressive")
    layers = student_config.num_hidden_layers
    stage = plan_stages(distillation, layers)[-1]
    with precision_policy(precision):
        teacher = mbert_lib.build_pretrainer(teacher_config)
        teacher.trainable = False
        student = mbert_lib.build_pretrainer(student_config)
        plan = TransferPlan.of(distillation, layers, teacher_config.num_hidden_layers)
        step = stage_step(
            plan.objective(teacher, student, stage),
            stage_variables(student, stage),
            OptimizerSection(),
        )
        iterator = iter(batches(student_config.vocab_size, NUM_BATCHES) * steps)
        return [float(step.train_step(iterator)["loss"]) for _ in range(steps)]


def pretrain_losses(precision: str, steps: int) -> list[float]:
    """MLM + NSP losses of the tiny teacher over `steps` steps from seed-0 weights."""
    config = configs()[0]
    tf_keras.utils.set_random_seed(0)
    with precision_policy(precision):
        model = mbert_lib.build_pretrainer(config)
        optimizer = Lamb(WarmupPolynomialDecay(1e-3, 10_000, 10), global_clipnorm=1.0)
        optimizer.build(model.trainable_variables)
        step = make_train_step(
            tf.distribute.get_strategy(),
            PretrainingObjective(model),
            optimizer,
            model.trainable_variables,
        )
        iterator = iter(batches(config.vocab_size, NUM_BATCHES) * steps)
        return [float(step(iterator)["loss"]) for _ in range(steps)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--loss_steps", type=int, default=40)
    parser.add_argument("--out", default="results/bfloat16_vs_float32.json")
    args = parser.parse_args()
    cpu = cpu_info()
    print("hardware:", describe(cpu))
    teacher_config, student_config = configs()
    start = time.perf_counter()
    generators = {
        p: distill_rounds(
            teacher_config, student_config, T, B, P, args.repeats, 3, mixed_precision=p
        )
        for p in PRECISIONS
    }
    distill, pretrain = [], []
    for round_index in range(args.rounds):
        for p in PRECISIONS:
            for record in next(generators[p]):
                distill.append({**record, "round": round_index})
            for record in pretrain_step_throughput(
                teacher_config, T, B, P, repeats=args.repeats, warmup=3, mixed_precision=p
            ):
                pretrain.append({**record, "round": round_index})
        print(f"round {round_index + 1}/{args.rounds} done, {time.perf_counter() - start:.0f} s")

    def ratios(records, key):
        out = {}
        for variant in sorted({r[key] for r in records}):
            per_round = []
            for round_index in range(args.rounds):
                ms = {
                    r["mixed_precision"]: r["median_step_ms"]
                    for r in records
                    if r[key] == variant and r["round"] == round_index
                }
                per_round.append(ms["float32"] / ms["bfloat16"])
            out[variant] = {"per_round": per_round, "median": statistics.median(per_round)}
        return out

    losses = {
        "distill_pd": {p: distill_losses(p, args.loss_steps) for p in PRECISIONS},
        "pretrain_teacher": {p: pretrain_losses(p, args.loss_steps) for p in PRECISIONS},
    }
    result = {
        "hardware": cpu,
        "hardware_text": describe(cpu),
        "native_bfloat16": any(f in cpu["simd"] for f in ("avx512_bf16", "amx_int8")),
        "problem": {
            "seq_length": T,
            "batch_size": B,
            "max_predictions_per_seq": P,
            "embedding_size": 64,
            "teacher": "tiny_teacher",
            "student": "tiny_student",
        },
        "speed_ratio_float32_over_bfloat16": {
            "distill": ratios(distill, "variant"),
            "pretrain": ratios(pretrain, "variant"),
        },
        "losses": losses,
        "records": {"distill": distill, "pretrain": pretrain},
        "seconds": round(time.perf_counter() - start, 1),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result["speed_ratio_float32_over_bfloat16"], indent=2))
    for name, curves in losses.items():
        print(name, {p: [round(c[i], 3) for i in (0, len(c) // 2, -1)] for p, c in curves.items()})


if __name__ == "__main__":
    main()
