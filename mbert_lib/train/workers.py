"""Which rows of each global batch a worker reads under a multi-worker strategy.

With W workers and a global batch of B rows, worker w trains on rows
[w·B/W, (w+1)·B/W) of every global batch: the same B rows a one-worker run
trains on, cut into W contiguous slices. Every worker walks the same global
record stream (same shuffle seed, same position) and parses and feeds to
its replicas only its own slice. The prepared examples are one file per
split, so file-level sharding cannot apply; reading the serialized records
and keeping a slice is what tf.data's own DATA auto-shard policy does too.
A saved iterator state carries the pipeline that made it (the slice
included), so each worker checkpoints and restores its own
(mbert_lib.train.checkpointing.RunCheckpoint's `peers`).

    shard = worker_shard(strategy)               # WorkerShard(index=w, count=W)
    local = shard_rows(global_batches, shard)    # [B, ...] -> [B / W, ...]
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class WorkerShard:
    """This worker's place among the cluster's: index in [0, count)."""

    index: int = 0
    count: int = 1

    def rows(self, batch_size: int) -> tuple[int, int]:
        """(start, stop) of this worker's rows in a global batch of `batch_size`."""
        if batch_size % self.count:
            raise ValueError(
                f"trainer.batch_size ({batch_size}) must be a multiple of the number of "
                f"workers ({self.count})"
            )
        local = batch_size // self.count
        return self.index * local, (self.index + 1) * local


def cluster_members(strategy: tf.distribute.Strategy) -> tuple[list[tuple[str, int]], int]:
    """The cluster's workers as (task type, task id), and this process's index among them;
    ([], 0) without a cluster.

    They are numbered as MultiWorkerMirroredStrategy numbers its replicas: the chief
    (if the cluster names one) first, then worker 0, 1, ...; the first is the chief.
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return [], 0
    cluster = resolver.cluster_spec().as_dict()
    members = [(kind, i) for kind in ("chief", "worker") for i in range(len(cluster.get(kind, [])))]
    return members, members.index((resolver.task_type, resolver.task_id))


def worker_shard(strategy: tf.distribute.Strategy) -> WorkerShard:
    """This process's WorkerShard: (0, 1) unless the strategy spans several workers."""
    members, index = cluster_members(strategy)
    return WorkerShard(index, len(members)) if len(members) > 1 else WorkerShard()


def shard_rows(dataset: tf.data.Dataset, shard: WorkerShard) -> tf.data.Dataset:
    """`dataset`'s global batches cut to this worker's rows ([B, ...] -> [B / W, ...])."""
    if shard.count == 1:
        return dataset
    batch_size = tf.nest.flatten(dataset.element_spec)[0].shape[0]
    start, stop = shard.rows(batch_size)
    return dataset.map(lambda batch: tf.nest.map_structure(lambda t: t[start:stop], batch))
