"""The distillation trainer: a frozen teacher, a student, and the stages of a strategy.

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

import dataclasses
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
    write_model_files,
)
from mbert_lib.data.provenance import sha256_file
from mbert_lib.distill.experiment import (
    DistillExperiment,
    load_distill_experiment,
    teacher_layer_map,
)
from mbert_lib.distill.initialize import copy_from_teacher
from mbert_lib.distill.objective import DistillationObjective
from mbert_lib.distill.plan import Stage, plan_stages, stage_variables, total_steps
from mbert_lib.models import build_pretrainer
from mbert_lib.optim import GroupedOptimizer, create_optimizer
from mbert_lib.train.checkpointing import (
    RunCheckpoint,
    is_chief,
    peer_directories,
    read_done,
    remove_worker_scratch,
    worker_directory,
    write_done,
)
from mbert_lib.train.loop import (
    LoopSettings,
    make_evaluator,
    make_train_step,
    run_loop,
    step_counter,
    step_value,
)
from mbert_lib.train.pretrain_data import (
    PretrainingData,
    strategy_and_data,
)
from mbert_lib.train.progress import Scalars
from mbert_lib.train.run_dir import finished_run, writing_run
from mbert_lib.train.run_record import EXPERIMENT_FILE
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


def _scaled(learning_rate, multiplier: float):
    return dataclasses.replace(
        learning_rate, peak=learning_rate.peak * multiplier, end=learning_rate.end * multiplier
    )


def build_stage_optimizer(optimizer_section, stage: Stage, groups: dict) -> GroupedOptimizer:
    """One optimizer per learning-rate multiplier of the stage, clipping together; built."""
    unclipped = dataclasses.replace(optimizer_section, global_clipnorm=None)
    optimizer = GroupedOptimizer(
        [
            create_optimizer(unclipped, _scaled(stage.learning_rate, rate), stage.train_steps)
            for rate in groups
        ],
        global_clipnorm=optimizer_section.global_clipnorm,
    )
    optimizer.build(list(groups.values()))
    return optimizer


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
    stages = plan_stages(experiment.distillation, student_config.num_hidden_layers)
    total = total_steps(stages)
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
    layer_map = teacher_layer_map(
        experiment.distillation.transfer_teacher_layers,
        student_config.num_hidden_layers,
        teacher_config.num_hidden_layers,
    )
    strategy, data = strategy_and_data(experiment, data)
    _check_tokenizer(teacher_dir, data)
    chief = is_chief(strategy)
    with writing_run(experiment, model_dir, chief):
        os.makedirs(model_dir, exist_ok=True)
        if chief:
            atomic.write_text(
                os.path.join(model_dir, TEACHER_FILE), json.dumps(teacher_id, indent=2) + "\n"
            )
        log("stages: " + "; ".join(s.describe() for s in stages))
        student, records, final = _run_stages(
            experiment,
            teacher_dir,
            model_dir,
            strategy,
            data,
            stages,
            layer_map,
            chief,
            show_progress,
            log,
        )
        if chief:
            write_model_files(
                student, model_dir, save_tokenizer=lambda d: _save_tokenizer(teacher_dir, data, d)
            )
            write_done(
                model_dir,
                total,
                eval=final,
                stages=records,
                strategy=experiment.distillation.strategy,
                teacher_dir=teacher_dir,
                teacher=teacher_id,
            )
            log(f"exported the student to {model_dir}")
        else:
            remove_worker_scratch(model_dir, strategy)
    return read_done(model_dir) if chief else {"train_steps": total, "eval": final}


def _run_stages(
    experiment: DistillExperiment,
    teacher_dir: str,
    model_dir: str,
    strategy,
    data: PretrainingData,
    stages: list[Stage],
    layer_map,
    chief: bool,
    show_progress: bool,
    log,
) -> tuple[tf_keras.Model, list[dict], dict]:
    """Runs the stages not yet done, in order; (student, stage records, final eval metrics)."""
    trainer, runtime = experiment.trainer, experiment.runtime
    student_config = experiment.student.build_config()
    teacher_config = experiment.teacher.build_config()
    tf_keras.utils.set_random_seed(trainer.seed)
    lw, pd = experiment.distillation.layer_wise, experiment.distillation.pretrain
    records = []
    with precision_policy(runtime.mixed_precision):
        with strategy.scope():
            teacher = load_pretrainer(teacher_dir, teacher_config)
            teacher.trainable = False
            student = build_pretrainer(student_config)
        iterator = iter(data.train.repeat())  # this worker's batches, split per replica
        initial = RunCheckpoint(
            worker_directory(init_dir(model_dir), strategy),
            1,
            model=student,
            train_iterator=iterator,
        )
        if initial.latest is None:
            if experiment.distillation.copy_embeddings:
                copied = copy_from_teacher(teacher, student)
                log(f"copied from the teacher by role: {', '.join(copied)}")
            initial.save(0)
        previous = initial.latest
        for stage in stages:
            directory = stage_dir(model_dir, stage)
            header = f"stage {stage.index + 1}/{len(stages)} {stage.name}"
            done = read_stage_done(directory)
            if done is not None and done["train_steps"] >= stage.train_steps:
                log(f"{header}: done, skipped")
                previous = stage_checkpoint(model_dir, stage)
                records.append(done)
                continue
            with strategy.scope():
                groups = stage_variables(student, stage)
                optimizer = build_stage_optimizer(trainer.optimizer, stage, groups)
                step = step_counter("stage_step")
            checkpoint = RunCheckpoint(
                worker_directory(os.path.join(directory, "checkpoints"), strategy),
                trainer.max_checkpoints_to_keep,
                peers=peer_directories(os.path.join(directory, "checkpoints"), strategy),
                model=student,
                optimizer=optimizer,
                step=step,
                train_iterator=iterator,
            )
            restored = checkpoint.restore_latest(log)
            if restored is None:
                _restore_student(previous, student, iterator)
            log(
                f"{header}: {stage.describe()}; "
                + (
                    f"resumed from {restored} at step {step_value(step)}"
                    if restored
                    else f"starting from {previous}"
                )
            )
            objective = DistillationObjective(
                teacher,
                student,
                stage,
                layer_map,
                lw,
                pd,
                student_dropout=experiment.distillation.student_dropout,
                layer_mean=experiment.distillation.auxiliary_layer_mean
                and experiment.distillation.strategy == "auxiliary",
            )
            evaluate = make_evaluator(
                strategy,
                objective,
                data.eval if trainer.eval_each_stage else None,
                trainer.eval_steps,
            )
            start = time.perf_counter()
            metrics = run_loop(
                train_step=make_train_step(
                    strategy,
                    objective,
                    optimizer,
                    [v for vs in groups.values() for v in vs],
                    trainer.jit_compile,
                ),
                iterator=iterator,
                step=step,
                checkpoint=checkpoint,
                scalars=Scalars(
                    os.path.join(model_dir, "tensorboard", stage_name(stage)) if chief else None
                ),
                settings=LoopSettings(
                    train_steps=stage.train_steps,
                    checkpoint_interval=trainer.checkpoint_interval,
                    per_step=trainer.batch_size * experiment.data.seq_length,
                    log_interval=trainer.log_interval,
                    eval_interval=trainer.eval_interval,
                    desc=header,
                    show_progress=show_progress and chief,
                    postfix_keys=("fmt", "at", "mlm_loss", "kd_loss"),
                ),
                evaluate=evaluate,
                log=log,
            )
            if not metrics and evaluate is not None:
                metrics = evaluate()
            previous = checkpoint.latest
            record = {
                "stage": stage_name(stage),
                "train_steps": stage.train_steps,
                "seconds": round(time.perf_counter() - start, 1),
                "eval": metrics,
            }
            if chief:
                atomic.write_text(
                    os.path.join(directory, STAGE_DONE_FILE), json.dumps(record, indent=2) + "\n"
                )
            records.append(record)
        _restore_student(previous, student, iterator)  # the last stage's end, run or skipped
        objective = DistillationObjective(
            teacher,
            student,
            final_eval_stage(experiment, student_config.num_hidden_layers),
            layer_map,
            lw,
            pd,
        )
        evaluate = make_evaluator(strategy, objective, data.eval, trainer.eval_steps)
        final = evaluate() if evaluate is not None else {}
    return student, records, final


def read_run(model_dir: str | os.PathLike) -> tuple[DistillExperiment, list[Stage]]:
    """The experiment a run in `model_dir` was started with, and its stages."""

    experiment = load_distill_experiment(os.path.join(os.fspath(model_dir), EXPERIMENT_FILE))
    layers = experiment.student.build_config().num_hidden_layers
    return experiment, plan_stages(experiment.distillation, layers)
