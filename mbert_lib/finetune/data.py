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

With `length_pool` = k > 0 (the trainer's `length_pool`), each run of k
batches of that order is sorted by length, cut into k batches again and
handed out in a random order, and every batch is cut to
`padded_length(longest)` positions, T' ≤ T: most SST-2 sentences are
phrases of a few tokens, so a batch of similar lengths costs a fraction of
[B, T]. Cutting changes no output: attention never reads a padded key, and
the one position kept past the longest example gives its last token the
same right neighbour ([PAD]) in the trigram embedding as at length T.
k = 1 keeps the batches' contents and only cuts them.
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


PAD_MULTIPLE = 8  # cut lengths are multiples of this: few distinct shapes


def padded_length(longest, seq_length: int, multiple: int = PAD_MULTIPLE):
    """min(T, longest + 1 rounded up to `multiple`): the positions a cut batch keeps.

    `longest` is the batch's longest example in tokens (a scalar tensor or int).
    """
    kept = -(-(longest + 1) // multiple) * multiple
    return tf.minimum(kept, seq_length) if tf.is_tensor(kept) else min(kept, seq_length)


def train_batches(
    data: EncodedExamples, batch_size: int, seed: int, length_pool: int = 0
) -> tf.data.Dataset:
    """Endless shuffled full batches (see the module docstring).

    length_pool: 0 = batches of random examples at [B, T]; k > 0 = batches
    sorted by length within runs of k batches, each cut to its longest example.
    """
    n = len(data)
    if n < batch_size:
        raise ValueError(f"{n} training examples are fewer than one batch of {batch_size}")
    if length_pool < 0:
        raise ValueError(f"length_pool must be >= 0 (0: off), got {length_pool}")
    tables = {k: tf.constant(data.features[k]) for k in INPUT_NAMES}
    labels = tf.constant(data.labels)
    lengths = tf.reduce_sum(tables["input_mask"], axis=1)  # [n] real tokens, truncated

    def gather(indices):
        batch = {
            **{k: tf.gather(v, indices) for k, v in tables.items()},
            "label": tf.gather(labels, indices),
        }
        if length_pool:
            keep = padded_length(tf.reduce_max(tf.gather(lengths, indices)), data.seq_length)
            batch.update({k: batch[k][:, :keep] for k in INPUT_NAMES})
        return batch

    batches = (
        tf.data.Dataset.range(n)
        .shuffle(n, seed=seed, reshuffle_each_iteration=True)
        .batch(batch_size, drop_remainder=True)
    )
    if not length_pool:
        return batches.repeat().map(gather).prefetch(2)

    def sort_pool(pool_index, pool):  # pool: [k', B] example indices, k' <= k
        flat = tf.reshape(pool, [-1])
        order = tf.argsort(tf.gather(lengths, flat), stable=True)
        rows = tf.reshape(tf.gather(flat, order), [-1, batch_size])
        shuffled = tf.random.experimental.stateless_shuffle(
            tf.range(tf.shape(rows)[0]), seed=tf.stack([tf.cast(seed, tf.int64), pool_index])
        )
        return tf.data.Dataset.from_tensor_slices(tf.gather(rows, shuffled))

    return (
        batches.batch(length_pool).repeat().enumerate().flat_map(sort_pool).map(gather).prefetch(2)
    )


def steps_per_epoch(data: EncodedExamples, batch_size: int) -> int:
    return len(data) // batch_size
