"""The run wrapper every trainer trains inside: resume, chief-only writing, snapshots, records.

Pre-training, distillation and fine-tuning each state their algorithm (a model, an
objective, the variables it trains) and leave the rest of a run's life to
`TrainingRun`:

    resume       `checkpoint` + `resume`: this worker's checkpoints in the run directory,
                 restored at a step every worker saved (checkpointing.RunCheckpoint)
    train        `train`: `run_loop` with TensorBoard scalars and progress on the chief only
    snapshots    `write_record`: a finished part of a run (a distillation stage's
                 stage_done.json), written by the chief only
    records      `finish`: the exported model and training_done.json, written last, by
                 the chief; the other workers remove their scratch directories

A run starts with `finished_run` (the same run? already done?) and writes inside
`writing` (the lock and experiment.yaml, mbert_lib.train.run_dir).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable

import tensorflow as tf

from mbert_lib import atomic
from mbert_lib.checkpoints import write_model_files
from mbert_lib.train.checkpointing import (
    RunCheckpoint,
    is_chief,
    peer_directories,
    read_done,
    remove_worker_scratch,
    worker_directory,
    write_done,
)
from mbert_lib.train.loop import LoopSettings, run_loop
from mbert_lib.train.progress import Scalars
from mbert_lib.train.run_dir import writing_run


@dataclasses.dataclass
class TrainingRun:
    """One run directory, trained by this worker of `strategy`."""

    model_dir: str
    strategy: tf.distribute.Strategy
    show_progress: bool = True
    log: Callable[[str], None] = print

    @property
    def chief(self) -> bool:
        """This worker writes the run's records, scalars and model."""
        return is_chief(self.strategy)

    def writing(self, experiment):
        """The context a run writes in: its lock held and experiment.yaml recorded (chief)."""
        return writing_run(experiment, self.model_dir, self.chief)

    def checkpoint(self, directory: str, max_to_keep: int, **objects) -> RunCheckpoint:
        """Checkpoints of `objects` in model_dir/`directory` (a worker's scratch copy there
        under a multi-worker strategy). `objects` holds `step` and `train_iterator`, which
        `train` advances."""
        path = os.path.join(self.model_dir, directory)
        return RunCheckpoint(
            worker_directory(path, self.strategy),
            max_to_keep,
            peers=peer_directories(path, self.strategy),
            **objects,
        )

    def resume(self, checkpoint: RunCheckpoint) -> str | None:
        """Restores the newest readable checkpoint; its path, or None for a fresh start."""
        return checkpoint.restore_latest(self.log)

    def train(
        self,
        train_step: Callable,
        checkpoint: RunCheckpoint,
        settings: LoopSettings,
        evaluate: Callable[[], dict] | None = None,
        tensorboard: str = "",
    ) -> dict:
        """Runs `train_step` until the checkpoint's step reaches settings.train_steps (see
        `run_loop`); scalars go to model_dir/tensorboard/`tensorboard`. The last eval
        metrics, or {} when nothing was evaluated."""
        scalars = os.path.join(self.model_dir, "tensorboard")
        if tensorboard:
            scalars = os.path.join(scalars, tensorboard)
        return run_loop(
            train_step=train_step,
            iterator=checkpoint.objects["train_iterator"],
            step=checkpoint.objects["step"],
            checkpoint=checkpoint,
            scalars=Scalars(scalars if self.chief else None),
            settings=dataclasses.replace(
                settings, show_progress=settings.show_progress and self.show_progress and self.chief
            ),
            evaluate=evaluate,
            log=self.log,
        )

    def write_record(self, path: str, record: dict) -> None:
        """Writes `record` as JSON to model_dir/`path` (chief only, atomically)."""
        if self.chief:
            atomic.write_text(
                os.path.join(self.model_dir, path), json.dumps(record, indent=2) + "\n"
            )

    def finish(self, model, train_steps: int, save_tokenizer, **record) -> dict:
        """Exports `model` and writes training_done.json with `record` (the chief), or
        removes this worker's scratch directories (the others); the run's done record."""
        if not self.chief:
            remove_worker_scratch(self.model_dir, self.strategy)
            return {"train_steps": train_steps, "eval": record.get("eval", {})}
        write_model_files(model, self.model_dir, save_tokenizer=save_tokenizer)
        write_done(self.model_dir, train_steps, **record)
        self.log(f"exported the model to {self.model_dir}")
        return read_done(self.model_dir)
