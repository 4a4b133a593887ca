"""Resumable runs: a CheckpointManager over everything a run needs, and a "done" marker.

A run's checkpoint holds the model, the optimizer (its slots and iteration
count), the step counter and the training-data iterator (tf.data iterators
are checkpointable): restoring it continues at the same step, with the same
optimizer state, on the next batch the killed run would have seen. (Dropout
masks are the one thing not replayed: tf_keras draws them from a global
random state that checkpoints do not hold.)

A finished run writes `training_done.json` last, after its final export;
a run that finds it (for at least as many steps) does nothing, unless it was
asked with other training settings than the finished run's: then the
directory holds another run, and it says so (mbert_lib.train.run_record).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import time
from collections.abc import Sequence

import tensorflow as tf

from mbert_lib import atomic
from mbert_lib.checkpoints import DamagedCheckpointError, read_checkpoint
from mbert_lib.hardware import describe
from mbert_lib.train.workers import cluster_members, worker_shard

DONE_FILE = "training_done.json"
STATE_FILE = "checkpoint"  # tf.train's list of a directory's checkpoints


class RunCheckpoint:
    """tf.train.Checkpoint of `objects` (name=trackable) + a CheckpointManager in `directory`.

    peers: the other workers' checkpoint directories under a multi-worker strategy
    (`peer_directories`). Each worker restores its own checkpoint (its data
    iterator's state is its own: the saved state carries the worker's input
    pipeline), and only at a step every peer has saved too, so a cluster
    restarted after one worker died mid-save resumes at one step on all.
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        max_to_keep: int = 3,
        peers: Sequence[str] = (),
        **objects,
    ):
        self.directory = os.fspath(directory)
        self.peers = list(peers)
        self.max_to_keep = max_to_keep
        self.objects = objects
        self.checkpoint = tf.train.Checkpoint(**objects)
        self.manager = self._manager()

    def _manager(self) -> tf.train.CheckpointManager:
        """The CheckpointManager; a state file (`checkpoint`) it cannot parse is moved aside
        (`checkpoint.damaged`), and `restore_latest` reads the ckpt-N files on disk."""
        try:
            return tf.train.CheckpointManager(
                self.checkpoint, self.directory, max_to_keep=self.max_to_keep
            )
        except (tf.errors.OpError, ValueError):  # a text_format parse error
            state = os.path.join(self.directory, STATE_FILE)
            os.replace(state, state + ".damaged")
            return tf.train.CheckpointManager(
                self.checkpoint, self.directory, max_to_keep=self.max_to_keep
            )

    def on_disk(self, directory: str | None = None) -> list[str]:
        """Every ckpt-N prefix in `directory` (default: this one) with its .index file,
        oldest first."""
        directory = self.directory if directory is None else directory
        found = glob.glob(os.path.join(glob.escape(directory), "ckpt-*.index"))
        prefixes = [f[: -len(".index")] for f in found]
        numbered = [(p, p.rsplit("-", 1)[-1]) for p in prefixes]
        return [
            p for p, n in sorted((x for x in numbered if x[1].isdigit()), key=lambda x: int(x[1]))
        ]

    @property
    def latest(self) -> str | None:
        """The newest checkpoint this worker saved in `directory`."""
        return self.manager.latest_checkpoint

    def restore_latest(self, log=print) -> str | None:
        """Restores the newest readable checkpoint, if any; its path, or None for a fresh run.

        Every object given to the constructor must be fully built (optimizer
        slots created) so that a checkpoint of a different model fails here,
        naming what did not match, instead of silently restoring part of it.
        A damaged checkpoint (a run killed while writing it, a bad copy) is named
        and passed over for the one before it; if every one is damaged, the
        DamagedCheckpointError of the newest is raised. Without a readable list of
        checkpoints (the `checkpoint` state file) the ckpt-N files on disk are read
        instead, never taken for a fresh run (the manager then keeps them all: only
        checkpoints it saves itself are rotated out).
        """
        newest_first = list(reversed(self.manager.checkpoints))
        if self.peers:  # every worker chooses from the same evidence: the files on disk
            newest_first = list(reversed(self.on_disk()))
        elif not newest_first and self.on_disk():  # the list is missing or was damaged
            newest_first = list(reversed(self.on_disk()))
            log(
                f"warning: {os.path.join(self.directory, STATE_FILE)} (the list of checkpoints) "
                f"is missing or damaged; read the {len(newest_first)} checkpoint(s) on disk "
                f"instead ({', '.join(os.path.basename(p) for p in reversed(newest_first))})"
            )
        if self.peers and newest_first:
            newest_first = self._common_with_peers(newest_first, log)
        for path in newest_first:
            try:
                read_checkpoint(self.checkpoint, path, restore=True)
            except DamagedCheckpointError as e:
                log(f"warning: {e}: trying the one before")
                continue
            return path
        if newest_first:
            raise DamagedCheckpointError(
                newest_first[0],
                RuntimeError(
                    f"none of the {len(newest_first)} checkpoint(s) in {self.directory} can be "
                    "read; delete the directory to start again"
                ),
            )
        return None

    def _common_with_peers(self, newest_first: list[str], log=print) -> list[str]:
        """The checkpoints in `newest_first` whose step every peer directory holds too.

        A worker saves step N + interval only after every worker finished saving step N
        (the steps between need all of them), so workers that have saved more than once
        share a step, unless a directory was lost: then a ValueError, since a fresh start
        would overwrite the others' checkpoints. With no worker past its first save (the
        cluster died saving it), there is nothing to resume: [] and a fresh start.
        """
        steps = [set(int(p.rsplit("-", 1)[-1]) for p in self.on_disk(peer)) for peer in self.peers]
        common = [p for p in newest_first if all(int(p.rsplit("-", 1)[-1]) in s for s in steps)]
        if not common and len(newest_first) <= 1 and all(len(s) <= 1 for s in steps):
            log(
                f"note: {newest_first[0]} is this worker's first checkpoint and no other worker "
                "saved the same step (the cluster stopped while saving it): starting afresh"
            )
            return []
        if not common:
            names = ", ".join(os.path.basename(p) for p in reversed(newest_first))
            raise ValueError(
                f"{self.directory} holds checkpoints ({names}) but no step that every "
                "other worker's directory "
                f"holds too ({', '.join(self.peers)}): a restarted cluster resumes from a "
                "step every worker saved. Restore the missing directories, or delete the "
                "run's checkpoints to start again"
            )
        return common

    def save(self, step: int) -> str:
        """Saves ckpt-`step`; a failed save (a full disk) leaves none of its files behind."""
        try:
            return self.manager.save(checkpoint_number=step)
        except BaseException:
            kept = set(self.manager.checkpoints)
            prefix = os.path.join(self.directory, f"ckpt-{step}")
            for leftover in glob.glob(glob.escape(prefix) + "_temp*"):
                shutil.rmtree(leftover, ignore_errors=True)
            if prefix not in kept:
                for leftover in glob.glob(glob.escape(prefix) + ".*"):
                    os.remove(leftover)
            raise


def read_done(model_dir: str | os.PathLike) -> dict | None:
    """The contents of model_dir's done marker, or None if the run has not finished."""
    path = os.path.join(os.fspath(model_dir), DONE_FILE)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e}); delete it to re-export") from e


def is_done(model_dir: str | os.PathLike, train_steps: int) -> bool:
    """True if a run in model_dir finished at least `train_steps` steps."""
    done = read_done(model_dir)
    return done is not None and int(done.get("train_steps", -1)) >= train_steps


def write_done(model_dir: str | os.PathLike, train_steps: int, **info) -> None:
    """Marks the run finished (atomically): the last file a run writes. It names the
    CPU that ran the last stretch of training (a resumed run may have had others)."""
    record = {
        "train_steps": int(train_steps),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "hardware": describe(),
        **info,
    }
    atomic.write_text(
        os.path.join(os.fspath(model_dir), DONE_FILE),
        json.dumps(record, indent=2, sort_keys=True) + "\n",
    )


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """True on the worker that writes summaries, exports and the done marker."""
    return worker_shard(strategy).index == 0


def _scratch(directory: str, member: tuple[str, int]) -> str:
    return os.path.join(directory, f".worker_{member[0]}_{member[1]}")


def worker_directory(directory: str, strategy: tf.distribute.Strategy) -> str:
    """`directory` on the chief; a per-worker scratch directory inside it elsewhere.

    Under MultiWorkerMirroredStrategy every worker must take part in saving
    (TensorFlow's documented pattern), and only the chief's files are the run's
    result. A worker's checkpoints hold its own data position, and a restarted
    worker restores them at a step every worker saved (RunCheckpoint's `peers`):
    the scratch directories live inside the chief's, on storage every worker
    reads, until the run finishes.
    """
    members, index = cluster_members(strategy)
    return directory if index == 0 else _scratch(directory, members[index])


def peer_directories(directory: str, strategy: tf.distribute.Strategy) -> list[str]:
    """The checkpoint directories of the cluster's other workers (see `worker_directory`)."""
    members, index = cluster_members(strategy)
    return [
        directory if i == 0 else _scratch(directory, member)
        for i, member in enumerate(members)
        if i != index
    ]


def remove_worker_scratch(model_dir: str | os.PathLike, strategy: tf.distribute.Strategy) -> None:
    """Removes this worker's scratch directories under model_dir (a finished run's
    non-chief worker: nothing reads them any more)."""
    members, index = cluster_members(strategy)
    if index == 0:
        return
    name = os.path.basename(_scratch("", members[index]))
    for root, dirs, _ in os.walk(os.fspath(model_dir)):
        if name in dirs:
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
            dirs.remove(name)
