"""The distillation trainer: `progressive_transfer` inside a run that survives a kill.

The algorithm is `mbert_lib.distill.progressive.progressive_transfer`; this module
is the run around it. `StageRun.minimise` runs each stage resumably inside the
run wrapper every trainer shares (`mbert_lib.train.run.TrainingRun`).
`run_distillation(experiment, teacher_dir, model_dir)` leaves in `model_dir`:

    experiment.yaml                      the final config
    teacher.json                         the teacher's directory and weights fingerprint: a
                                         run asked to go on with another teacher is refused
    stages/init/ckpt-0                   the student before any stage (embedding + MLM
                                         head copied from the teacher) and the data position
    stages/NN_<stage>/checkpoints/ckpt-N student + that stage's optimizer + step + data position
    stages/NN_<stage>/stage_done.json    written when the stage finished: never redone
    tensorboard/NN_<stage>/{train,eval}  every loss term, lr, grad norm, tokens/s; eval metrics
    bert_config.json, model.ckpt.*, vocab.txt, tokenizer_config.json
                                         the student as a model directory (mbert_lib.checkpoints)
    training_done.json                   written last, with the held-out metrics

A killed run resumes in the stage it was in, at the step of its last
checkpoint, with that stage's optimizer state and data position; a stage
that starts restores the student and data position the previous stage
ended with. The teacher runs with training=False and is in no optimizer.
"""

from __future__ import annotations

import filecmp
import glob
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable

import tensorflow as tf
import tf_keras

from mbert_lib import atomic
from mbert_lib.checkpoints import (
    load_pretrainer,
    read_checkpoint,
    resolve_checkpoint,
)
from mbert_lib.data.provenance import sha256_file
from mbert_lib.distill.initialize import copy_from_teacher
from mbert_lib.distill.objective import DistillationObjective
from mbert_lib.distill.plan import Stage, plan_stages, total_steps
from mbert_lib.distill.progressive import TransferPlan, progressive_transfer
from mbert_lib.distill.step import stage_step
from mbert_lib.experiment.distill import DistillExperiment, load_distill_experiment
from mbert_lib.models import build_pretrainer
from mbert_lib.train.loop import LoopSettings
from mbert_lib.train.pretrain_data import PretrainingData, strategy_and_data
from mbert_lib.train.run import TrainingRun
from mbert_lib.train.run_dir import finished_run
from mbert_lib.train.run_record import EXPERIMENT_FILE
from mbert_lib.train.step import make_evaluator, step_counter, step_value
from mbert_lib.train.strategy import precision_policy

STAGE_DONE_FILE = "stage_done.json"
TOKENIZER_FILES = ("vocab.txt", "tokenizer_config.json")


# ------------------------------------------------------------------ directories
def stage_name(stage: Stage) -> str:
    return f"{stage.index:02d}_{stage.name}"


def stage_dir(model_dir: str | os.PathLike, stage: Stage) -> str:
    return os.path.join(os.fspath(model_dir), "stages", stage_name(stage))


def init_dir(model_dir: str | os.PathLike) -> str:
    return os.path.join(os.fspath(model_dir), "stages", "init")


def read_stage_done(directory: str) -> dict | None:
    """The record of a finished stage in `directory`, or None if it has not finished."""
    path = os.path.join(directory, STAGE_DONE_FILE)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(
                f"{path}: not valid JSON ({e}); delete it to run the stage again"
            ) from None


def stage_checkpoint(model_dir: str | os.PathLike, stage: Stage | None) -> str | None:
    """The newest checkpoint of `stage` (None: the initial student), or None."""
    directory = (
        init_dir(model_dir)
        if stage is None
        else os.path.join(stage_dir(model_dir, stage), "checkpoints")
    )
    return tf.train.latest_checkpoint(directory)


def load_stage_student(model_dir: str | os.PathLike, stage: Stage | None, config):
    """The student Pretrainer as it was at the end of `stage` (None: before the first)."""
    path = stage_checkpoint(model_dir, stage)
    if path is None:
        where = "init" if stage is None else stage_name(stage)
        raise FileNotFoundError(f"{model_dir}: stage {where} has no checkpoint")
    student = build_pretrainer(config)
    read_checkpoint(tf.train.Checkpoint(model=student), path, partial=True)
    return student


# ------------------------------------------------------------------- pieces
# Settings a started run keeps: the two models, the strategy and which teacher layers teach.
_FIXED_SETTINGS = (
    "teacher.",
    "student.",
    "distillation.strategy",
    "distillation.transfer_teacher_layers",
)


def _check_tokenizer(teacher_dir: str, data: PretrainingData) -> None:
    """The data's vocabulary must be the teacher's (when both have one)."""
    teacher_vocab = os.path.join(teacher_dir, "vocab.txt")
    if data.save_tokenizer is None or not os.path.exists(teacher_vocab):
        return
    with tempfile.TemporaryDirectory() as tmp:
        data.save_tokenizer(tmp)
        if not filecmp.cmp(teacher_vocab, os.path.join(tmp, "vocab.txt"), shallow=False):
            raise ValueError(
                f"the training data's vocabulary differs from the teacher's "
                f"{teacher_vocab}: distil on data tokenized with the teacher's "
                "vocabulary (data.vocab_file, or the same data.cache_dir)"
            )


def _save_tokenizer(teacher_dir: str, data: PretrainingData, directory: str) -> None:
    if data.save_tokenizer is not None:
        data.save_tokenizer(directory)
        return
    for name in TOKENIZER_FILES:
        source = os.path.join(teacher_dir, name)
        if os.path.exists(source):
            with atomic.atomic_path(os.path.join(directory, name)) as tmp:
                shutil.copyfile(source, tmp)


def _restore_student(path: str, student, iterator) -> None:
    read_checkpoint(tf.train.Checkpoint(model=student, train_iterator=iterator), path, partial=True)


def final_eval_stage(experiment: DistillExperiment, num_layers: int) -> Stage:
    """A measuring 'stage' over every layer + MLM/NSP: the metrics of a finished student."""
    return Stage(
        -1,
        "final",
        1,
        tuple(range(num_layers)),
        True,
        True,
        True,
        experiment.distillation.pretrain.learning_rate,
        {},
    )


# ---------------------------------------------------------------- the teacher
TEACHER_FILE = "teacher.json"  # in a student's model_dir: which teacher it learns from


def teacher_identity(teacher_dir: str) -> dict:
    """{"dir", "weights_sha256"} of a teacher model directory: its weights' fingerprint, so
    that another teacher of the same shape (a retrained one, another checkpoint) is told
    apart from the one a student learned from."""
    prefix = resolve_checkpoint(teacher_dir)
    shards = sorted(glob.glob(f"{prefix}.data-*")) + [f"{prefix}.index"]
    digest = hashlib.sha256()
    for shard in shards:
        digest.update(sha256_file(shard).encode())
    return {"dir": os.path.abspath(teacher_dir), "weights_sha256": digest.hexdigest()}


def check_teacher(model_dir: str, teacher_dir: str) -> dict:
    """The teacher's identity, after refusing a student that began with another teacher:
    a finished one would be reported "done" for a teacher it never saw, an unfinished one
    would resume and learn from two teachers. ValueError naming both."""
    identity = teacher_identity(teacher_dir)
    path = os.path.join(model_dir, TEACHER_FILE)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            recorded = json.load(f)
        if recorded.get("weights_sha256") != identity["weights_sha256"]:
            raise ValueError(
                f"{model_dir} holds a student distilled from another teacher "
                f"({recorded.get('dir')}, weights {str(recorded.get('weights_sha256'))[:12]}) "
                f"than {teacher_dir} "
                f"(weights {identity['weights_sha256'][:12]}): a finished run would be "
                "reported for a teacher it never saw, and a resumed one would learn from two. "
                "Use another --model_dir"
            )
    return identity


# ---------------------------------------------------------------- the trainer
def run_distillation(
    experiment: DistillExperiment,
    teacher_dir: str | os.PathLike,
    model_dir: str | os.PathLike,
    data: PretrainingData | None = None,
    show_progress: bool = True,
    log: Callable[[str], None] = print,
) -> dict:
    """Runs (or resumes, or skips) every stage; returns the done record with eval metrics."""
    model_dir, teacher_dir = os.fspath(model_dir), os.fspath(teacher_dir)
    student_config = experiment.student.build_config()
    teacher_config = experiment.teacher.build_config()
    plan = TransferPlan.of(
        experiment.distillation,
        student_config.num_hidden_layers,
        teacher_config.num_hidden_layers,
    )
    total = total_steps(plan.stages)
    teacher_id = check_teacher(model_dir, teacher_dir)
    done = finished_run(
        experiment,
        model_dir,
        train_steps=total,
        fixed=lambda key: key.startswith(_FIXED_SETTINGS),
        describe=lambda d: f"finished {d['train_steps']} student steps (asked for {total})",
        log=log,
    )
    if done is not None:
        return done
    strategy, data = strategy_and_data(experiment, data)
    _check_tokenizer(teacher_dir, data)
    run = TrainingRun(model_dir, strategy, show_progress, log)
    with run.writing(experiment):
        os.makedirs(model_dir, exist_ok=True)
        run.write_record(TEACHER_FILE, teacher_id)
        log("stages: " + "; ".join(s.describe() for s in plan.stages))
        stages = StageRun(run, experiment, data, len(plan.stages))
        tf_keras.utils.set_random_seed(experiment.trainer.seed)
        with precision_policy(experiment.runtime.mixed_precision):
            with strategy.scope():
                teacher = load_pretrainer(teacher_dir, teacher_config)
                student = build_pretrainer(student_config)
            stages.start(teacher, student, experiment.distillation.copy_embeddings)
            progressive_transfer(teacher, student, plan, stages.minimise)
            last = final_eval_stage(experiment, student_config.num_hidden_layers)
            final = stages.finish(plan.objective(teacher, student, last))
        return run.finish(
            student,
            total,
            save_tokenizer=lambda d: _save_tokenizer(teacher_dir, data, d),
            eval=final,
            stages=stages.records,
            strategy=experiment.distillation.strategy,
            teacher_dir=teacher_dir,
            teacher=teacher_id,
        )


class StageRun:
    """The `minimise` of `progressive_transfer` inside a run: each stage resumes from its
    own checkpoints (or starts from the previous stage's end), is skipped once done, and
    leaves a snapshot (its checkpoints) and a record (stage_done.json)."""

    def __init__(self, run: TrainingRun, experiment, data: PretrainingData, stage_count: int):
        self.run, self.trainer, self.data = run, experiment.trainer, data
        self.per_step = experiment.trainer.batch_size * experiment.data.seq_length
        self.stage_count = stage_count
        self.records: list[dict] = []
        self.previous: str | None = None  # the checkpoint the next stage starts from
        self.student = self.iterator = None

    def start(self, teacher, student, copy_embeddings: bool) -> None:
        """The student before any stage: restored, or copied from the teacher and saved."""
        self.student = student
        self.iterator = iter(self.data.train.repeat())  # this worker's batches, per replica
        initial = self.run.checkpoint(
            os.path.join("stages", "init"), 1, model=student, train_iterator=self.iterator
        )
        if initial.latest is None:
            if copy_embeddings:
                copied = copy_from_teacher(teacher, student)
                self.run.log(f"copied from the teacher by role: {', '.join(copied)}")
            initial.save(0)
        self.previous = initial.latest

    def minimise(self, stage: Stage, objective: DistillationObjective, groups: dict) -> None:
        run, trainer = self.run, self.trainer
        directory = os.path.join("stages", stage_name(stage))  # in the run directory
        header = f"stage {stage.index + 1}/{self.stage_count} {stage.name}"
        done = read_stage_done(stage_dir(run.model_dir, stage))
        if done is not None and done["train_steps"] >= stage.train_steps:
            run.log(f"{header}: done, skipped")
            self.previous = stage_checkpoint(run.model_dir, stage)
            self.records.append(done)
            return
        with run.strategy.scope():
            step = stage_step(objective, groups, trainer.optimizer, trainer.jit_compile)
            counter = step_counter("stage_step")
        checkpoint = run.checkpoint(
            os.path.join(directory, "checkpoints"),
            trainer.max_checkpoints_to_keep,
            model=self.student,
            optimizer=step.optimizer,
            step=counter,
            train_iterator=self.iterator,
        )
        restored = run.resume(checkpoint)
        if restored is None:
            _restore_student(self.previous, self.student, self.iterator)
        run.log(
            f"{header}: {stage.describe()}; "
            + (
                f"resumed from {restored} at step {step_value(counter)}"
                if restored
                else f"starting from {self.previous}"
            )
        )
        evaluate = make_evaluator(
            run.strategy,
            objective,
            self.data.eval if trainer.eval_each_stage else None,
            trainer.eval_steps,
        )
        start = time.perf_counter()
        metrics = run.train(
            step.train_step,
            checkpoint,
            LoopSettings(
                train_steps=stage.train_steps,
                checkpoint_interval=trainer.checkpoint_interval,
                per_step=self.per_step,
                log_interval=trainer.log_interval,
                eval_interval=trainer.eval_interval,
                desc=header,
                postfix_keys=("fmt", "at", "mlm_loss", "kd_loss"),
            ),
            evaluate,
            tensorboard=stage_name(stage),
        )
        if not metrics and evaluate is not None:
            metrics = evaluate()
        self.previous = checkpoint.latest
        record = {
            "stage": stage_name(stage),
            "train_steps": stage.train_steps,
            "seconds": round(time.perf_counter() - start, 1),
            "eval": metrics,
        }
        run.write_record(os.path.join(directory, STAGE_DONE_FILE), record)
        self.records.append(record)

    def finish(self, objective: DistillationObjective) -> dict:
        """The student as the last stage left it (run or skipped); its held-out metrics
        under `objective` (every layer's terms and the MLM / NSP heads)."""
        _restore_student(self.previous, self.student, self.iterator)
        evaluate = make_evaluator(
            self.run.strategy, objective, self.data.eval, self.trainer.eval_steps
        )
        return evaluate() if evaluate is not None else {}


def read_run(model_dir: str | os.PathLike) -> tuple[DistillExperiment, list[Stage]]:
    """The experiment a run in `model_dir` was started with, and its stages."""

    experiment = load_distill_experiment(os.path.join(os.fspath(model_dir), EXPERIMENT_FILE))
    layers = experiment.student.build_config().num_hidden_layers
    return experiment, plan_stages(experiment.distillation, layers)
