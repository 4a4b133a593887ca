"""Fine-tuning: a pre-trained encoder + a classification head, trained on a labeled task.

`run_finetuning(experiment, model_dir)` loads the encoder of
`model.init_checkpoint` (any model directory: a pre-trained teacher, a
distilled student, a converted checkpoint), puts the classification head
on its pooled output (a fresh head: Classifier in mbert_lib.models), and
trains all weights with AdamW, linear warmup and linear decay to 0, for
`trainer.epochs` epochs, evaluating on dev after every epoch (or for
`trainer.train_steps` steps, evaluated once at the end). With output
distillation (`distill.teacher_logits`) the training set also holds the
transfer set with the teacher's targets (mbert_lib.finetune.task_distill).
It leaves in `model_dir`:

    experiment.yaml        the run's config (a different run in the same dir is refused)
    history.json           dev metrics after every epoch (mbert_lib.finetune.best)
    tensorboard/           train loss / accuracy / lr / examples/s, dev metrics
    bert_config.json, model.ckpt.*, vocab.txt, tokenizer_config.json
                           the BEST epoch's classifier (load_classifier, export tflite)
    training_done.json     written last: best dev metrics, history, truncation, timing

With `prune.sparsity` > 0 the encoder's blocks are pruned during the run (tfmot's masks,
mbert_lib.compress.pruning) and the classifier exported is the last one, with its zeros;
its `sparsity` is in training_done.json. With `qat.enabled` the run trains through
tfmot's fake-quantizers (mbert_lib.compress.qat): the classifier exported holds the float
weights, and qat.ckpt beside it the wrapped model with its ranges (`load_qat_classifier`).

Killed, it resumes from the last epoch's checkpoint (model, optimizer,
step, data order); a finished run is reported "already done". The training
checkpoints are deleted once the best classifier is exported.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable

import tensorflow as tf
import tf_keras

from mbert_lib.checkpoints import (
    load_config,
    load_encoder,
    read_checkpoint,
    save_model_dir,
    write_model_files,
)
from mbert_lib.compress import pruning, qat
from mbert_lib.data.pipeline import check_model_compatibility
from mbert_lib.data.tokenizer import load_tokenizer, save_tokenizer
from mbert_lib.finetune.best import BEST_DIR, BestKeeper
from mbert_lib.finetune.data import (
    TaskData,
    encode_task,
    load_task_data,
    select_task_data,
    steps_per_epoch,
    train_batches,
)
from mbert_lib.finetune.evaluate import evaluate, make_predictor
from mbert_lib.finetune.experiment import FinetuneExperiment
from mbert_lib.finetune.objective import ClassificationObjective
from mbert_lib.finetune.tasks import get_task
from mbert_lib.models import build_classifier, count_params
from mbert_lib.optim import create_optimizer
from mbert_lib.train.checkpointing import RunCheckpoint, read_done, write_done
from mbert_lib.train.loop import LoopSettings, make_train_step, run_loop, step_counter
from mbert_lib.train.progress import Scalars
from mbert_lib.train.run_dir import finished_run, writing_run
from mbert_lib.train.run_record import (
    trained_setting,
)
from mbert_lib.train.strategy import create_strategy, precision_policy

CHECKPOINT_STEPS = 500  # with trainer.train_steps: a checkpoint every this many steps at least


def model_tokenizer(experiment: FinetuneExperiment, config):
    """The tokenizer of the run: task.vocab_file, else the one beside model.init_checkpoint."""
    init = experiment.model.init_checkpoint
    vocab = experiment.task.vocab_file or (init if os.path.isdir(init) else os.path.dirname(init))
    if os.path.isdir(vocab) and not os.path.exists(os.path.join(vocab, "vocab.txt")):
        raise FileNotFoundError(
            f"{vocab} has no vocab.txt: the model's tokenizer is needed to encode the task "
            "(set task.vocab_file to the vocab.txt the model was pre-trained with)"
        )
    tokenizer = load_tokenizer(vocab)
    check_model_compatibility(config, tokenizer=tokenizer)
    return tokenizer


def cached_task_data(experiment: FinetuneExperiment, cache: dict) -> TaskData:
    """The experiment's task data, encoded from `cache` (a dict kept across runs) when there.

    Runs of one task with the same tokenizer (seeds, learning rates, label budgets,
    models pre-trained on one vocabulary) share one encoded copy of its splits; each
    run draws its own subsample and transfer set from it.
    """
    tokenizer = model_tokenizer(experiment, load_config(experiment.model.init_checkpoint))
    task = experiment.task
    key = (tokenizer.sha256, task.name, task.source, task.data_dir, task.seq_length)
    if key not in cache:
        cache[key] = encode_task(task, tokenizer)
    return select_task_data(cache[key], task, experiment.distill)


def run_finetuning(
    experiment: FinetuneExperiment,
    model_dir: str | os.PathLike,
    data: TaskData | None = None,
    show_progress: bool = True,
    log: Callable[[str], None] = print,
) -> dict:
    """Fine-tunes (or resumes, or skips a finished run); returns the done record.

    `data`: the experiment's task data, already loaded with the model's
    tokenizer (`load_task_data`), to share it between runs; default: loaded here.
    """
    model_dir = os.fspath(model_dir)
    init, trainer = experiment.model.init_checkpoint, experiment.trainer
    if not init:
        raise ValueError(
            "model.init_checkpoint is not set: pass --init_checkpoint, the "
            "model directory of a pre-trained (or distilled) model"
        )
    get_task(experiment.task.name).resolve_source(
        experiment.task.source, experiment.task.data_dir
    )  # fail early
    done = finished_run(
        experiment,
        model_dir,
        train_steps=None,
        fixed=trained_setting,
        describe=lambda d: f"finished fine-tuning ({d['metric']} {d['eval'][d['metric']]:.4f})",
        log=log,
    )
    if done is not None:
        return done
    strategy = create_strategy(
        experiment.runtime.distribution_strategy,
        experiment.runtime.devices,
        experiment.runtime.tpu_address,
    )
    config = load_config(init).replace(classifier_pooling=experiment.model.pooling)
    if experiment.qat.enabled:
        qat.check_quantizable(config, init)
    if experiment.task.seq_length > config.max_position_embeddings:
        raise ValueError(
            f"task.seq_length ({experiment.task.seq_length}) exceeds the model's "
            f"max_position_embeddings ({config.max_position_embeddings})"
        )
    tokenizer = model_tokenizer(experiment, config)
    if data is None:
        data = load_task_data(experiment.task, tokenizer, experiment.distill)
    elif data.tokenizer_sha256 != tokenizer.sha256:
        raise ValueError(
            f"the task data given was encoded with another tokenizer than "
            f"{experiment.model.init_checkpoint}'s"
        )
    for note in data.notes():
        log(note)
    per_epoch = steps_per_epoch(data.train, trainer.batch_size)
    if per_epoch < 1:
        raise ValueError(
            f"{len(data.train)} training examples are fewer than one batch of {trainer.batch_size}"
        )
    if trainer.batch_size % strategy.num_replicas_in_sync:
        raise ValueError(
            f"trainer.batch_size ({trainer.batch_size}) must be a multiple of the "
            f"number of replicas ({strategy.num_replicas_in_sync})"
        )
    train_steps = trainer.train_steps or trainer.epochs * per_epoch
    with writing_run(experiment, model_dir):
        return _train(
            experiment,
            model_dir,
            data,
            tokenizer,
            strategy,
            config,
            train_steps,
            per_epoch,
            show_progress,
            log,
        )


def _train(
    experiment: FinetuneExperiment,
    model_dir: str,
    data: TaskData,
    tokenizer,
    strategy,
    config,
    train_steps: int,
    per_epoch: int,
    show_progress: bool,
    log,
) -> dict:
    """Trains and evaluates every epoch, exports the best one; returns the done record."""
    init, trainer, task = experiment.model.init_checkpoint, experiment.trainer, data.task
    tf_keras.utils.set_random_seed(trainer.seed)

    with precision_policy(experiment.runtime.mixed_precision), strategy.scope():
        encoder = load_encoder(init, config)
        model = build_classifier(
            config, task.num_classes, experiment.model.dropout_rate, encoder=encoder
        )
        encoder.trainable = not experiment.model.freeze_encoder
        if experiment.prune.sparsity:
            pruning.wrap_kernels(model, pruning.Schedule.over(experiment.prune, train_steps))
        if experiment.qat.enabled:
            qat.wrap_for_qat(model)
        optimizer = create_optimizer(trainer.optimizer, trainer.schedule(train_steps), train_steps)
        optimizer.build(model.trainable_variables)
        step = step_counter()
    iterator = iter(
        train_batches(data.train, trainer.batch_size, trainer.seed, trainer.length_pool)
    )
    checkpoint = RunCheckpoint(
        os.path.join(model_dir, "checkpoints"),
        1,
        model=model,
        optimizer=optimizer,
        step=step,
        train_iterator=iterator,
    )
    restored = checkpoint.restore_latest(log)
    log(
        f"resumed from {restored} at step {int(step)}"
        if restored
        else f"fine-tuning {init} -> {model_dir}: {trainer.epochs} epochs x {per_epoch} "
        f"steps of {trainer.batch_size}"
    )

    def save_classifier(directory: str) -> None:
        save_model_dir(
            model, directory, overwrite=True, save_tokenizer=lambda d: save_tokenizer(tokenizer, d)
        )

    # With trainer.train_steps the one evaluation is of the last model: nothing to keep aside.
    last_only = trainer.train_steps is not None
    keeper = BestKeeper(
        model_dir, task.main_metric, (lambda _: None) if last_only else save_classifier
    )
    predict = make_predictor(model, experiment.task.seq_length, trainer.eval_batch_size)
    clock = [time.perf_counter()]

    def evaluate_epoch() -> dict:
        start = time.perf_counter()
        metrics = evaluate(task, predict, data.dev)
        current = int(step)
        keeper.record(
            current,
            metrics,
            epoch=current // per_epoch,
            train_seconds=round(start - clock[0], 3),
            eval_seconds=round(time.perf_counter() - start, 3),
        )
        clock[0] = time.perf_counter()
        return metrics

    if restored and int(step) % per_epoch == 0 and not keeper.evaluated(int(step)):
        evaluate_epoch()  # killed between an epoch's checkpoint and its evaluation
    run_loop(
        train_step=make_train_step(
            strategy,
            ClassificationObjective(model, task.is_regression),
            optimizer,
            model.trainable_variables,
            trainer.jit_compile,
        ),
        iterator=iterator,
        step=step,
        checkpoint=checkpoint,
        scalars=Scalars(os.path.join(model_dir, "tensorboard")),
        settings=LoopSettings(
            train_steps=train_steps,
            # a run of train_steps keeps (few, large) checkpoints: its end is what counts
            checkpoint_interval=max(per_epoch, CHECKPOINT_STEPS) if last_only else per_epoch,
            per_step=trainer.batch_size,  # examples: length_pool cuts batches below T
            unit="examples",
            log_interval=trainer.log_interval,
            # with trainer.train_steps: one evaluation, at the end (the last model is kept)
            eval_interval=train_steps if trainer.train_steps else per_epoch,
            desc=f"finetune {task.name}",
            show_progress=show_progress,
        ),
        evaluate=evaluate_epoch,
        log=log,
    )

    best = keeper.best
    if not last_only:
        best_weights = os.path.join(keeper.best_dir, "model.ckpt")
        read_checkpoint(tf.train.Checkpoint(model=model), best_weights)
    compressed = {}
    if experiment.prune.sparsity:
        pruning.strip(model)
        compressed = {"sparsity": round(pruning.overall_sparsity(model), 6)}
    if experiment.qat.enabled:
        qat.save_ranges(model, model_dir)
        compressed = {"qat_layers": qat.strip_qat(model)}
    write_model_files(model, model_dir, save_tokenizer=lambda d: save_tokenizer(tokenizer, d))
    train_seconds = sum(h["train_seconds"] for h in keeper.history)
    write_done(
        model_dir,
        train_steps,
        eval=best["metrics"],
        task=task.name,
        source=data.source,
        metric=task.main_metric,
        best_step=best["step"],
        best_epoch=best["epoch"],
        history=keeper.history,
        init_checkpoint=os.path.abspath(init),
        params={"encoder": count_params(model.encoder), "classifier": count_params(model)},
        train_examples=len(data.train),
        train_available=data.train_available,
        dev_examples=len(data.dev),
        seq_length=experiment.task.seq_length,
        truncated={"train": data.train.truncated, "dev": data.dev.truncated},
        seconds={
            "train": round(train_seconds, 1),
            "eval": round(sum(h["eval_seconds"] for h in keeper.history), 1),
        },
        train_examples_per_second=round(train_steps * trainer.batch_size / train_seconds, 1),
        **compressed,
    )
    for leftover in ("checkpoints", BEST_DIR):
        shutil.rmtree(os.path.join(model_dir, leftover), ignore_errors=True)
    log(
        f"best dev {task.main_metric} {best['metrics'][task.main_metric]:.4f} after epoch "
        f"{best['epoch']}; exported the classifier to {model_dir}"
    )
    return read_done(model_dir)
