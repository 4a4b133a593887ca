"""A fine-tuning experiment's data: examples -> encoded train / dev sets -> tf.data batches.

`load_task_data(task_section, tokenizer)` reads the task's train and dev
splits, checks the labels against the task's classes, encodes them with
the model's tokenizer (truncation counted) and draws the optional train
subsample, the same for every fine-tuning seed (`task.data_seed`).

`train_batches` yields global batches {input_word_ids, input_mask,
input_type_ids: [B, T], label: [B]}, a new order every epoch, full batches
only (an epoch is ⌊n / B⌋ steps). Its iterator is checkpointable and small:
the shuffle buffer holds example indices; the features are gathered from
constant tensors.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from mbert_lib.data.glue import GlueExample
from mbert_lib.finetune.features import EncodedExamples, encode_examples
from mbert_lib.finetune.tasks import Task, check_labels, get_task
from mbert_lib.models import INPUT_NAMES


@dataclasses.dataclass
class TaskData:
    """The encoded splits of a task and where they came from."""

    task: Task
    source: str
    train: EncodedExamples
    dev: EncodedExamples
    dev_examples: list[GlueExample]  # the texts behind `dev`, in the same order
    train_available: int  # train examples before subsampling
    tokenizer_sha256: str  # the tokenizer that encoded them

    def notes(self) -> list[str]:
        return [
            f"task {self.task.name} ({self.task.description}), source {self.source}: "
            f"{len(self.train)} train examples (of {self.train_available}), "
            f"{len(self.dev)} dev examples",
            self.train.truncation_note("train examples"),
            self.dev.truncation_note("dev examples"),
        ]


def _subsample(n: int, limit, seed: int) -> np.ndarray:
    if limit is None or limit >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=limit, replace=False))


def load_task_data(section, tokenizer) -> TaskData:
    """Train and dev sets of `section` (a TaskSection) encoded with `tokenizer`."""
    task = get_task(section.name)
    source = task.resolve_source(section.source, section.data_dir)

    def encoded(split: str) -> tuple[list[GlueExample], EncodedExamples]:
        examples = task.load(split, source, section.data_dir)
        data = encode_examples(examples, tokenizer, section.seq_length, task.is_regression)
        check_labels(task, data.labels, f"task {task.name} ({source}) split {split}")
        return examples, data

    train_examples, train = encoded("train")
    dev_examples, dev = encoded("dev")
    keep = _subsample(len(dev), section.max_eval_examples, section.data_seed)
    return TaskData(
        task,
        source,
        train.subset(_subsample(len(train), section.max_train_examples, section.data_seed)),
        dev.subset(keep),
        [dev_examples[i] for i in keep],
        len(train_examples),
        tokenizer.sha256,
    )


def train_batches(data: EncodedExamples, batch_size: int, seed: int) -> tf.data.Dataset:
    """Endless shuffled full batches (see the module docstring)."""
    n = len(data)
    if n < batch_size:
        raise ValueError(f"{n} training examples are fewer than one batch of {batch_size}")
    tables = {k: tf.constant(data.features[k]) for k in INPUT_NAMES}
    labels = tf.constant(data.labels)

    def gather(indices):
        return {
            **{k: tf.gather(v, indices) for k, v in tables.items()},
            "label": tf.gather(labels, indices),
        }

    return (
        tf.data.Dataset.range(n)
        .shuffle(n, seed=seed, reshuffle_each_iteration=True)
        .batch(batch_size, drop_remainder=True)
        .repeat()
        .map(gather)
        .prefetch(2)
    )


def steps_per_epoch(data: EncodedExamples, batch_size: int) -> int:
    return len(data) // batch_size
