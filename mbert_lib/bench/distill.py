"""Training throughput of distillation steps: layer-wise transfer (FMT + AT) and PD.

The variants train one student on the same SYNTHETIC batches (seq T, batch
B, P predictions) with the trainer's own objective, optimizer and step, and
are timed round-robin so background load hits all alike:

    layer_wise_first   PKT stage of layer 0 (teacher and student run one block)
    layer_wise_last    PKT stage of the deepest layer (both run every block)
    pd                 pre-training distillation (both full models + MLM/NSP heads)

Reported per variant: median step time, steps/s, tokens/s (B·T per step), and
the step's matmul GFLOP (`mbert_lib.anatomy.flops`: teacher forward + 3 × student
forward for forward + backward; in PD the MLM heads, and both last blocks at
[CLS] + the masked positions only, `heads_only_flops`) with the GFLOP/s
achieved. For scale: numpy's SGEMM measured about 158 GFLOP/s on a 2-core
AVX-512 x86 CPU; TensorFlow's oneDNN kernels go higher (the steps reach ~170–200).

The variants feed on NUM_BATCHES synthetic batches built once and cycled, so a
timed step does not include making its batch (the tf-models anchor,
`mbert_lib.bench.anchor`, does the same). `distill_rounds` builds and traces
the steps once and then yields one round of records per `next()`: the bench
CLI runs the anchor between rounds, so background load hits both alike.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator

import tensorflow as tf
import tf_keras

from mbert_lib.anatomy.flops import flops, heads_only_flops
from mbert_lib.bench.timing import interleaved_timings
from mbert_lib.config import MobileBertConfig
from mbert_lib.distill.plan import plan_stages, stage_variables
from mbert_lib.distill.progressive import TransferPlan
from mbert_lib.distill.step import stage_step
from mbert_lib.experiment import OptimizerSection
from mbert_lib.experiment.distill import DistillationSection
from mbert_lib.models import build_pretrainer, count_params
from mbert_lib.train.strategy import precision_policy
from mbert_lib.train.synthetic import synthetic_pretraining_dataset

NUM_BATCHES = 8


def step_gflop(
    teacher_config: MobileBertConfig,
    student_config: MobileBertConfig,
    stage,
    seq_length: int,
    batch_size: int,
    max_predictions_per_seq: int,
) -> float:
    """Matmul GFLOP of one training step of `stage` (forward + backward ≈ 3 × forward)."""
    if stage.use_pd:
        # both last blocks at [CLS] + the P masked positions only, then the MLM
        # heads of both models: transform H×H and output H×V per prediction
        queries = max_predictions_per_seq + 1
        H, V = student_config.hidden_size, student_config.vocab_size
        per_sequence = (
            heads_only_flops(teacher_config, seq_length, queries)
            + 3 * heads_only_flops(student_config, seq_length, queries)
            + 4 * 2 * max_predictions_per_seq * (H * H + H * V)
        )
    else:
        layers = max(stage.transfer_layers) + 1
        per_sequence = flops(
            teacher_config.replace(num_hidden_layers=layers), seq_length
        ) + 3 * flops(student_config.replace(num_hidden_layers=layers), seq_length)
    return per_sequence * batch_size / 1e9


def distill_rounds(
    teacher_config: MobileBertConfig,
    student_config: MobileBertConfig,
    seq_length: int = 128,
    batch_size: int = 32,
    max_predictions_per_seq: int = 20,
    repeats: int = 20,
    warmup: int = 3,
    mixed_precision: str = "float32",
    jit_compile: bool = False,
) -> Iterator[list[dict]]:
    """Endless rounds: each `next()` times every variant (see the module docstring).

    The models and steps are built, and each step traced by one untimed call,
    before the first round; every round then runs `warmup` untimed steps per
    variant and `repeats` interleaved timed ones, and yields one record per
    variant (median, min and max over that round's `repeats`).
    """
    tf_keras.utils.set_random_seed(0)
    distillation = DistillationSection(strategy="progressive")
    layers = student_config.num_hidden_layers
    stages = plan_stages(distillation, layers)
    chosen = {
        "layer_wise_first": stages[0],
        "layer_wise_last": stages[layers - 1],
        "pd": stages[-1],
    }
    batches = list(
        synthetic_pretraining_dataset(
            num_examples=batch_size * NUM_BATCHES,
            batch_size=batch_size,
            seq_length=seq_length,
            max_predictions_per_seq=max_predictions_per_seq,
            vocab_size=student_config.vocab_size,
        )
    )
    stacked = tf.nest.map_structure(lambda *b: tf.stack(b), *batches)  # [NUM_BATCHES, B, ...]
    data = tf.data.Dataset.from_tensor_slices(stacked).repeat()
    plan = TransferPlan.of(distillation, layers, teacher_config.num_hidden_layers)
    with precision_policy(mixed_precision):
        teacher = build_pretrainer(teacher_config)
        teacher.trainable = False
        student = build_pretrainer(student_config)
        fns = {}
        for name, stage in chosen.items():  # the trainer's step (distill.step.stage_step)
            step = stage_step(
                plan.objective(teacher, student, stage),
                stage_variables(student, stage),
                OptimizerSection(),
                jit_compile,
            )
            fns[name] = functools.partial(_loss_of_one_step, step.train_step, iter(data))
            fns[name]()  # trace while the precision policy is set
    tokens = batch_size * seq_length
    sizes = {
        "teacher_encoder_params": count_params(teacher.encoder),
        "student_encoder_params": count_params(student.encoder),
    }
    for round_index in itertools.count():
        timings = interleaved_timings(fns, repeats=repeats, warmup=warmup)
        records = []
        for name, t in timings.items():
            gflop = step_gflop(
                teacher_config,
                student_config,
                chosen[name],
                seq_length,
                batch_size,
                max_predictions_per_seq,
            )
            records.append(
                {
                    "variant": name,
                    "stage": chosen[name].name,
                    "round": round_index,
                    "seq_length": seq_length,
                    "batch_size": batch_size,
                    "max_predictions_per_seq": max_predictions_per_seq,
                    "mixed_precision": mixed_precision,
                    "jit_compile": jit_compile,
                    "median_step_ms": t.median_ms,
                    "min_step_ms": t.min_ms,
                    "max_step_ms": t.max_ms,
                    "repeats": t.repeats,
                    "steps_per_second": 1e3 / t.median_ms,
                    "tokens_per_second": tokens * 1e3 / t.median_ms,
                    "gflop_per_step": gflop,
                    "gflop_per_second": gflop * 1e3 / t.median_ms,
                    **sizes,
                }
            )
        yield records


def _loss_of_one_step(step, iterator) -> float:
    return float(step(iterator)["loss"])  # float(): blocks until the step is done
