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

import tensorflow as tf

from mbert_lib import atomic
from mbert_lib.checkpoints import DamagedCheckpointError, read_checkpoint
from mbert_lib.hardware import describe

DONE_FILE = "training_done.json"
STATE_FILE = "checkpoint"  # tf.train's list of a directory's checkpoints


class RunCheckpoint:
    """tf.train.Checkpoint of `objects` (name=trackable) + a CheckpointManager in `directory`."""

    def __init__(self, directory: str | os.PathLike, max_to_keep: int = 3, **objects):
        self.directory = os.fspath(directory)
        self.max_to_keep = max_to_keep
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

    def on_disk(self) -> list[str]:
        """Every ckpt-N prefix in the directory with its .index file, oldest first."""
        found = glob.glob(os.path.join(glob.escape(self.directory), "ckpt-*.index"))
        prefixes = [f[: -len(".index")] for f in found]
        numbered = [(p, p.rsplit("-", 1)[-1]) for p in prefixes]
        return [
            p for p, n in sorted((x for x in numbered if x[1].isdigit()), key=lambda x: int(x[1]))
        ]

    @property
    def latest(self) -> str | None:
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
        if not newest_first and self.on_disk():  # the list is missing or was damaged
            newest_first = list(reversed(self.on_disk()))
            log(
                f"warning: {os.path.join(self.directory, STATE_FILE)} (the list of checkpoints) "
                f"is missing or damaged; read the {len(newest_first)} checkpoint(s) on disk "
                f"instead ({', '.join(os.path.basename(p) for p in reversed(newest_first))})"
            )
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
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    return resolver.task_type == "chief" or (
        resolver.task_type == "worker"
        and resolver.task_id == 0
        and "chief" not in resolver.cluster_spec().as_dict()
    )


def worker_directory(directory: str, strategy: tf.distribute.Strategy) -> str:
    """`directory` on the chief; a per-worker scratch directory elsewhere.

    Under MultiWorkerMirroredStrategy every worker must take part in saving,
    but only the chief's files are kept (TensorFlow's documented pattern).
    """
    if is_chief(strategy):
        return directory
    resolver = strategy.cluster_resolver
    return os.path.join(directory, f".worker_{resolver.task_type}_{resolver.task_id}")
