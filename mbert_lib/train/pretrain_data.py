"""The one place where the pre-training trainer gets its data: `build_pretraining_datasets`.

It maps an experiment's `data` section (and the trainer's batch sizes) to
batched tf.data datasets that follow the contract in
`mbert_lib.train.synthetic` (the keys and dtypes of `objectives.BATCH_KEYS`),
plus a hook that writes the tokenizer files beside the exported model.

Served today: `data.source: synthetic` only (SYNTHETIC counting-sequence
"sentences" for smoke tests). The real sources (builtin, local, hub) come from
`mbert_lib.data`; they are wired here and nowhere else.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import tensorflow as tf

from mbert_lib.train.synthetic import synthetic_pretraining_dataset

SYNTHETIC_TRAIN_EXAMPLES = 16384
SYNTHETIC_EVAL_EXAMPLES = 512


@dataclasses.dataclass
class PretrainingData:
    """What the trainer consumes.

    train:          batched (global batch size, drop_remainder) training examples;
                    finite or not, the trainer repeats it. Its iterator must be
                    checkpointable (no Dataset.from_generator / py_function).
    eval:           batched held-out examples (finite), or None for no eval.
    save_tokenizer: save_tokenizer(directory) writes the tokenizer files
                    (e.g. vocab.txt) beside the exported model; None if none.
    """

    train: tf.data.Dataset
    eval: Optional[tf.data.Dataset] = None
    save_tokenizer: Optional[Callable[[str], None]] = None


def build_pretraining_datasets(experiment) -> PretrainingData:
    """Train / held-out datasets for a PretrainExperiment."""
    data, trainer = experiment.data, experiment.trainer
    if data.source == "synthetic":
        common = dict(seq_length=data.seq_length,
                      max_predictions_per_seq=data.max_predictions_per_seq,
                      vocab_size=data.vocab_size)
        return PretrainingData(
            train=synthetic_pretraining_dataset(
                num_examples=SYNTHETIC_TRAIN_EXAMPLES, batch_size=trainer.batch_size,
                seed=data.seed, **common),
            eval=synthetic_pretraining_dataset(
                num_examples=SYNTHETIC_EVAL_EXAMPLES, batch_size=trainer.eval_batch_size,
                seed=data.seed + 1, drop_remainder=False, **common))
    raise ValueError(
        f"data.source {data.source!r} is not wired into the pre-training trainer yet "
        "(mbert_lib/train/pretrain_data.py serves only 'synthetic' so far); use "
        "--params_override data.source=synthetic for a smoke run")
