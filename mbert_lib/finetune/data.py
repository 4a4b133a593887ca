"""A fine-tuning experiment's data: examples -> encoded train / dev sets -> tf.data batches.

`load_task_data(task_section, tokenizer, distill_section)` reads the task's train and
dev splits, checks the labels against the task's classes, encodes them with the
model's tokenizer (truncation counted; `encode_task`, which runs share) and draws the
optional train subsample, the label budget, the same for every fine-tuning seed
(`task.data_seed`; `select_task_data`). With output distillation on, the training
examples outside the budget follow the labeled ones, with the teacher's targets
(`mbert_lib.finetune.task_distill`).

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
from mbert_lib.finetune.features import EncodedExamples, concatenate, encode_examples
from mbert_lib.finetune.task_distill import read_teacher_logits, teacher_targets
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
    labeled: int | None = None  # output distillation: the first `labeled` keep their labels

    def notes(self) -> list[str]:
        budget = (
            f"{len(self.train)} train examples (of {self.train_available})"
            if self.labeled is None
            else f"{self.labeled} labeled train examples and {len(self.train) - self.labeled} "
            "with the teacher's targets"
        )
        return [
            f"task {self.task.name} ({self.task.description}), source {self.source}: "
            f"{budget}, {len(self.dev)} dev examples",
            self.train.truncation_note("train examples"),
            self.dev.truncation_note("dev examples"),
        ]


def _subsample(n: int, limit, seed: int) -> np.ndarray:
    if limit is None or limit >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=limit, replace=False))


@dataclasses.dataclass
class EncodedTask:
    """Every example of a task's train and dev splits, encoded with one tokenizer."""

    task: Task
    source: str
    train: EncodedExamples
    dev: EncodedExamples
    dev_examples: list[GlueExample]
    tokenizer_sha256: str


def encode_task(section, tokenizer) -> EncodedTask:
    """The train and dev splits of `section` (a TaskSection), whole, encoded with `tokenizer`."""
    task = get_task(section.name)
    source = task.resolve_source(section.source, section.data_dir)

    def encoded(split: str) -> tuple[list[GlueExample], EncodedExamples]:
        examples = task.load(split, source, section.data_dir)
        data = encode_examples(examples, tokenizer, section.seq_length, task.is_regression)
        check_labels(task, data.labels, f"task {task.name} ({source}) split {split}")
        return examples, data

    _, train = encoded("train")
    dev_examples, dev = encoded("dev")
    return EncodedTask(task, source, train, dev, dev_examples, tokenizer.sha256)


def select_task_data(encoded: EncodedTask, section, distill=None) -> TaskData:
    """The run's train and dev sets from a whole encoded task: the label budget
    (section.max_train_examples, drawn with section.data_seed), and with `distill` (a
    TaskDistillSection) whose teacher_logits are set, the rest of the training split as
    the transfer set, after the labeled examples."""
    n = len(encoded.train)
    labeled = _subsample(n, section.max_train_examples, section.data_seed)
    keep = _subsample(len(encoded.dev), section.max_eval_examples, section.data_seed)
    train, count = encoded.train.subset(labeled), None
    if not encoded.task.is_regression and len(np.unique(train.labels)) < 2 <= len(
        np.unique(encoded.train.labels)
    ):
        raise ValueError(
            f"task.max_train_examples: the {len(train)} training examples drawn with "
            f"task.data_seed {section.data_seed} all have one label; a classifier needs "
            "examples of more than one class (draw more, or another seed)"
        )
    if distill is not None and distill.teacher_logits:
        if encoded.task.is_regression:
            raise ValueError(f"distill: task {encoded.task.name} is a regression; no classes")
        logits = read_teacher_logits(
            distill.teacher_logits,
            encoded.task.name,
            n,
            encoded.task.num_classes,
            encoded.tokenizer_sha256,
        )
        rest = np.setdiff1d(np.arange(n), labeled)
        if len(rest) == 0:
            raise ValueError(
                "distill.teacher_logits is set but every training example keeps its label: "
                "set task.max_train_examples below the training set's size "
                f"({n}) to leave a transfer set"
            )
        q, tau = teacher_targets(logits[rest], distill.temperature, distill.targets)
        classes = encoded.task.num_classes
        own = np.eye(classes, dtype=np.float32)[train.labels]
        transfer = encoded.train.subset(rest)
        transfer = dataclasses.replace(transfer, labels=np.argmax(q, -1).astype(np.int32))
        train = concatenate(
            [
                train.with_targets(own, np.ones(len(train), np.float32)),
                transfer.with_targets(q, tau),
            ]
        )
        count = len(labeled)
    return TaskData(
        encoded.task,
        encoded.source,
        train,
        encoded.dev.subset(keep),
        [encoded.dev_examples[i] for i in keep],
        n,
        encoded.tokenizer_sha256,
        count,
    )


def load_task_data(section, tokenizer, distill=None) -> TaskData:
    """Train and dev sets of `section` (a TaskSection) encoded with `tokenizer`; see
    `select_task_data` for `distill`."""
    return select_task_data(encode_task(section, tokenizer), section, distill)


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
    per_example = {"label": tf.constant(data.labels)}
    if data.targets is not None:  # output distillation: q [n, C] and τ [n]
        per_example.update(
            target=tf.constant(data.targets), temperature=tf.constant(data.temperatures)
        )
    lengths = tf.reduce_sum(tables["input_mask"], axis=1)  # [n] real tokens, truncated

    def gather(indices):
        batch = {
            **{k: tf.gather(v, indices) for k, v in tables.items()},
            **{k: tf.gather(v, indices) for k, v in per_example.items()},
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
