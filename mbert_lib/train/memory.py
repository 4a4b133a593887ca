"""Will a training run fit in this machine's memory? Checked before TensorFlow allocates.

A model or a batch too large for memory meets TensorFlow deep in its first step, as an
allocation or argument error with a traceback (a vocab_size of 400,000,000, a batch of
50,000,000 sequences). `check_memory` refuses such a run first, by arithmetic on the
experiment, naming the setting to lower. Its estimate is a lower bound:

    model   4 · params · copies   copies = 4 for a model being trained (its weights, their
                                  gradients and the optimizer's two moments: LAMB, AdamW),
                                  1 for a frozen one (distillation's teacher); params from
                                  anatomy.param_total, heads included
    batch   a · b · L · T · (H + N · T)  +  a · b · P · V
                                  what the backward pass keeps of one replica's b sequences
                                  at the least: each block's output [b, T, H] and attention
                                  probabilities [b, N, T, T]; in pre-training also the MLM
                                  logits [b, P, V]
    eval    the same with trainer.eval_batch_size, one block (no backward pass)

a bytes per activation (2 under bfloat16, else 4), b = trainer.batch_size / replicas, T
data.seq_length, P data.max_predictions_per_seq; L, H, N, V the trained model's layers,
width, heads and vocabulary. Training needs model + the larger of batch and eval. TensorFlow
needs more (every other activation, its workspace, the input pipeline), so a run refused
here cannot fit, while one let through may still not.

The limit is physical memory (os.sysconf: SC_PHYS_PAGES · SC_PAGE_SIZE), so the check runs
only where the model trains in it: on CPUs. With a GPU or TPU the limit is the device's,
and TensorFlow's own out-of-memory error stands.
"""

from __future__ import annotations

import dataclasses
import os

import tensorflow as tf

from mbert_lib.anatomy.params import param_total
from mbert_lib.config import MobileBertConfig

FLOAT_BYTES = 4  # weights, gradients and optimizer moments stay float32 under bfloat16
TRAINED_COPIES = 4  # weights, gradients, two optimizer moments
# The models an experiment holds, by section (dataclass field) name: (trained, logits counted)
# for pre-training's `model`, distillation's `teacher` (frozen) and `student`. Only
# pre-training's logits are counted: a distillation stage may train without the MLM head.
ROLES = {"model": (True, True), "teacher": (False, False), "student": (True, False)}


def physical_memory() -> int | None:
    """Bytes of physical memory, or None where os.sysconf cannot say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


def model_bytes(config: MobileBertConfig, trained: bool) -> int:
    """4 · params · copies: a trained model's weights, gradients and two moments, or a
    frozen model's weights."""
    return FLOAT_BYTES * param_total(config, heads=True) * (TRAINED_COPIES if trained else 1)


def batch_bytes(
    config: MobileBertConfig,
    batch_size: int,
    seq_length: int,
    predictions: int,
    *,
    layers: int,
    activation_bytes: int = FLOAT_BYTES,
) -> int:
    """a · b · (L · T · (H + N · T) + P · V): `layers` blocks' outputs [b, T, H] and
    attention probabilities [b, N, T, T], and MLM logits [b, P, V] (predictions = 0: none)."""
    T, H, N = seq_length, config.hidden_size, config.num_attention_heads
    per_sequence = layers * T * (H + N * T) + predictions * config.vocab_size
    return activation_bytes * batch_size * per_sequence


def _gb(n: int) -> str:
    return f"{n / 1e9:,.1f} GB"


def _model_part(name: str, config: MobileBertConfig, trained: bool) -> tuple[int, str, str]:
    """(bytes, what, the setting to lower) for the model in section `name`."""
    params = param_total(config, heads=True)
    vocab_params = config.vocab_size * (max(config.hidden_size, config.embedding_size) + 1)
    what = f"the {name}'s {params:,} parameters" + (
        " with their gradients and two optimizer moments" if trained else ""
    )
    if 2 * vocab_params > params:
        what += f" (mostly its vocab_size {config.vocab_size:,} tables)"
        key = f"{name}.overrides.vocab_size" + (" (and data.vocab_size)" if name == "model" else "")
    else:
        key = f"the size of the {name} ({name}.*)"
    return model_bytes(config, trained), what, key


def _batch_parts(
    config: MobileBertConfig, experiment, logits: bool, replicas: int
) -> list[tuple[int, str, str]]:
    """(bytes, what, the setting to lower) of one training and one evaluation batch of the
    model `config` trains (per replica)."""
    data, trainer = experiment.data, experiment.trainer
    a = 2 if experiment.runtime.mixed_precision == "bfloat16" else FLOAT_BYTES
    predictions = data.max_predictions_per_seq if logits else 0
    parts = []
    for key, what, layers in (
        ("batch_size", "training", config.num_hidden_layers),
        ("eval_batch_size", "evaluation", 1),
    ):
        size = getattr(trainer, key)
        n = batch_bytes(
            config,
            max(1, size // replicas),
            data.seq_length,
            predictions,
            layers=layers,
            activation_bytes=a,
        )
        shape = f"trainer.{key} {size:,} x data.seq_length {data.seq_length}"
        parts.append((n, f"one {what} batch's activations ({shape})", f"trainer.{key}"))
    return parts


def memory_parts(experiment, replicas: int = 1) -> list[tuple[int, str, str]]:
    """[(bytes, what, the setting to lower)]: each model, then the larger of one training
    and one evaluation batch (the module docstring has the formulas)."""
    models, batches = [], []
    sections = {f.name for f in dataclasses.fields(experiment)}  # not properties: one model once
    for name, (trained, logits) in ROLES.items():
        if name in sections:
            config = getattr(experiment, name).build_config()
            models.append(_model_part(name, config, trained))
            if trained:
                batches += _batch_parts(config, experiment, logits, replicas)
    return models + [max(batches)] if batches else models


def check_memory(experiment, replicas: int = 1, memory: int | None = None) -> None:
    """ValueError naming the setting to lower when the lower bound of the module docstring
    exceeds `memory` (default: physical memory); nothing is checked on a GPU or TPU."""
    on_accelerator = experiment.runtime.distribution_strategy == "tpu" or bool(
        tf.config.list_physical_devices("GPU")
    )
    memory = memory if memory is not None else physical_memory()
    if on_accelerator or memory is None:
        return
    parts = memory_parts(experiment, replicas)
    total = sum(n for n, _, _ in parts)
    if total <= memory:
        return
    largest = max(parts)
    raise ValueError(
        f"{largest[2]}: this run needs at least {_gb(total)} of memory, more than this "
        f"machine's {_gb(memory)} ("
        + "; ".join(f"{what}: {_gb(n)}" for n, what, _ in parts)
        + f"; mbert_lib.train.memory has the estimate). Lower {largest[2]}"
    )
