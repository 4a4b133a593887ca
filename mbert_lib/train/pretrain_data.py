"""The one place where the pre-training trainer gets its data: `build_pretraining_datasets`.

It maps an experiment's `data` section (and the trainer's batch sizes) to
batched tf.data datasets that follow the contract in
`mbert_lib.train.synthetic` (the keys and dtypes of `objectives.BATCH_KEYS`),
plus a hook that writes the tokenizer files beside the exported model.

Sources: `builtin`, `local` and `hub` are real text, prepared (or reused from
the cache) by `mbert_lib.data.prepare_pretraining_data`; `synthetic` is
SYNTHETIC counting-sequence "sentences" for smoke tests only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import tensorflow as tf

from mbert_lib.data import (
    check_model_compatibility,
    make_pretraining_dataset,
    prepare_data_section,
    save_tokenizer,
)
from mbert_lib.train.memory import check_memory
from mbert_lib.train.objectives import BATCH_KEYS
from mbert_lib.train.strategy import cluster_workers, create_strategy
from mbert_lib.train.synthetic import synthetic_pretraining_dataset
from mbert_lib.train.workers import WorkerShard, shard_rows, worker_shard

SYNTHETIC_TRAIN_EXAMPLES = 16384
SYNTHETIC_EVAL_EXAMPLES = 512
ONE_WORKER = WorkerShard()


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
    eval: tf.data.Dataset | None = None
    save_tokenizer: Callable[[str], None] | None = None


def build_pretraining_datasets(experiment, shard: WorkerShard = ONE_WORKER) -> PretrainingData:
    """Train / held-out datasets for a PretrainExperiment.

    shard: this worker's place in a multi-worker cluster; its training batches are
    its rows of each global batch (mbert_lib.train.workers), [B / W, ...]. The
    held-out batches stay global: the strategy's distributed dataset shards them.
    """
    data, trainer = experiment.data, experiment.trainer
    if data.source == "synthetic":
        common = dict(
            seq_length=data.seq_length,
            max_predictions_per_seq=data.max_predictions_per_seq,
            vocab_size=data.vocab_size,
        )
        return PretrainingData(
            train=shard_rows(
                synthetic_pretraining_dataset(
                    num_examples=SYNTHETIC_TRAIN_EXAMPLES,
                    batch_size=trainer.batch_size,
                    seed=data.seed,
                    **common,
                ),
                shard,
            ),
            eval=synthetic_pretraining_dataset(
                num_examples=SYNTHETIC_EVAL_EXAMPLES,
                batch_size=trainer.eval_batch_size,
                seed=data.seed + 1,
                drop_remainder=False,
                **common,
            ),
        )
    return _real_text(experiment, shard)


def _real_text(experiment, shard: WorkerShard) -> PretrainingData:

    trainer = experiment.trainer
    prepared = prepare_data_section(experiment.data)
    tokenizer = prepared.tokenizer()
    check_model_compatibility(
        experiment.model.build_config(), tokenizer=tokenizer, examples_dir=prepared.examples_dir
    )
    return PretrainingData(
        train=make_pretraining_dataset(
            prepared.examples_dir,
            trainer.batch_size,
            split="train",
            seed=trainer.seed,
            rows=shard.rows(trainer.batch_size) if shard.count > 1 else None,
        ),
        eval=make_pretraining_dataset(prepared.examples_dir, trainer.eval_batch_size, split="eval"),
        save_tokenizer=lambda directory: save_tokenizer(tokenizer, directory),
    )


def check_batches(
    dataset: tf.data.Dataset,
    batch_size: int,
    seq_length: int,
    max_predictions: int,
    what: str = "training dataset",
) -> None:
    """Fails with a clear message unless `dataset` follows the pre-training batch contract."""
    spec = dataset.element_spec
    if not isinstance(spec, dict):
        raise ValueError(f"the {what} must yield dicts of tensors, got {spec}")
    missing = [k for k in BATCH_KEYS if k not in spec]
    if missing:
        raise ValueError(f"the {what} lacks key(s) {missing}; it has {sorted(spec)}")
    want = {
        "input_word_ids": [batch_size, seq_length],
        "input_mask": [batch_size, seq_length],
        "input_type_ids": [batch_size, seq_length],
        "masked_lm_positions": [batch_size, max_predictions],
        "masked_lm_ids": [batch_size, max_predictions],
        "masked_lm_weights": [batch_size, max_predictions],
        "next_sentence_labels": [batch_size],
    }
    for key, shape in want.items():
        dtype = tf.float32 if key == "masked_lm_weights" else tf.int32
        if spec[key].dtype != dtype or spec[key].shape.as_list() != shape:
            raise ValueError(
                f"the {what}'s {key!r} must be {dtype.name} {shape} (batch_size, "
                f"seq_length / max_predictions_per_seq from the experiment, batched with "
                f"drop_remainder=True), got {spec[key].dtype.name} {spec[key].shape.as_list()}"
            )


def strategy_and_data(
    experiment, data: PretrainingData | None = None
) -> tuple[tf.distribute.Strategy, PretrainingData]:
    """The run's tf.distribute strategy and its data (built unless given), checked against
    the trainer's batch size and the number of replicas: what pre-training and distillation
    both start with. The strategy comes first: MultiWorkerMirroredStrategy must exist
    before other TensorFlow ops run. Then a run too large for this machine's memory is
    refused (mbert_lib.train.memory) before its data is prepared or its model built."""
    trainer, runtime = experiment.trainer, experiment.runtime
    if runtime.distribution_strategy == "multi_worker_mirrored":
        workers = cluster_workers()
        if trainer.batch_size % workers:
            raise ValueError(
                f"trainer.batch_size ({trainer.batch_size}) must be a multiple of the "
                f"number of workers in TF_CONFIG's cluster ({workers})"
            )
    strategy = create_strategy(runtime.distribution_strategy, runtime.devices, runtime.tpu_address)
    check_memory(experiment, strategy.num_replicas_in_sync)
    if trainer.batch_size % strategy.num_replicas_in_sync:
        raise ValueError(
            f"trainer.batch_size ({trainer.batch_size}) must be a multiple of the "
            f"number of replicas ({strategy.num_replicas_in_sync})"
        )
    shard = worker_shard(strategy)
    if data is None:
        data = build_pretraining_datasets(experiment, shard)
    else:
        check_batches(
            data.train,
            trainer.batch_size,
            experiment.data.seq_length,
            experiment.data.max_predictions_per_seq,
        )
        data = dataclasses.replace(data, train=shard_rows(data.train, shard))
    check_batches(
        data.train,
        trainer.batch_size // shard.count,
        experiment.data.seq_length,
        experiment.data.max_predictions_per_seq,
        what="training dataset" if shard.count == 1 else f"worker {shard.index}'s training rows",
    )
    return strategy, data
