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
)
from mbert_lib.compress import pruning, qat
from mbert_lib.data.pipeline import check_model_compatibility
from mbert_lib.data.tokenizer import load_tokenizer, save_tokenizer
from mbert_lib.experiment.finetune import FinetuneExperiment
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
from mbert_lib.finetune.objective import ClassificationObjective
from mbert_lib.finetune.tasks import get_task
from mbert_lib.models import build_classifier, count_params
from mbert_lib.optim import create_optimizer
from mbert_lib.train.loop import LoopSettings
from mbert_lib.train.run import TrainingRun
from mbert_lib.train.run_dir import finished_run
from mbert_lib.train.run_record import trained_setting
from mbert_lib.train.step import make_train_step, step_counter
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
    run = TrainingRun(model_dir, strategy, show_progress, log)
    with run.writing(experiment):
        return _train(experiment, run, data, tokenizer, config)


def build_finetuning(experiment: FinetuneExperiment, config, num_classes: int, train_steps: int):
    """(classifier, optimizer): the head on the pre-trained encoder of model.init_checkpoint
    (pruning's or QAT's wrappers around it when asked), and AdamW over every trainable
    weight. Call it inside `strategy.scope()`."""
    encoder = load_encoder(experiment.model.init_checkpoint, config)
    model = build_classifier(config, num_classes, experiment.model.dropout_rate, encoder=encoder)
    encoder.trainable = not experiment.model.freeze_encoder
    if experiment.prune.sparsity:
        pruning.wrap_kernels(model, pruning.Schedule.over(experiment.prune, train_steps))
    if experiment.qat.enabled:
        qat.wrap_for_qat(model)
    trainer = experiment.trainer
    optimizer = create_optimizer(trainer.optimizer, trainer.schedule(train_steps), train_steps)
    optimizer.build(model.trainable_variables)
    return model, optimizer


def finetune_step(model, optimizer, regression: bool = False, jit_compile: bool = False):
    """train_step(iterator) -> metrics: one update of every trainable weight of `model` on
    the cross-entropy (squared error) of the next batch. The trainer's step; benchmarks
    and experiments build theirs here. Call it inside `strategy.scope()`: the step
    distributes over the strategy of the current scope."""
    objective = ClassificationObjective(model, regression)
    return make_train_step(
        tf.distribute.get_strategy(), objective, optimizer, model.trainable_variables, jit_compile
    )


class EpochEvaluator:
    """evaluate() -> dev metrics of the model now, recorded in the run's history with the
    seconds trained since the last evaluation; the best model is kept aside
    (finetune.best.BestKeeper)."""

    def __init__(self, keeper: BestKeeper, predict, data: TaskData, step, per_epoch: int):
        self.keeper, self.predict, self.data = keeper, predict, data
        self.step, self.per_epoch = step, per_epoch
        self.clock = time.perf_counter()

    def __call__(self) -> dict:
        start = time.perf_counter()
        metrics = evaluate(self.data.task, self.predict, self.data.dev)
        current = int(self.step)
        self.keeper.record(
            current,
            metrics,
            epoch=current // self.per_epoch,
            train_seconds=round(start - self.clock, 3),
            eval_seconds=round(time.perf_counter() - start, 3),
        )
        self.clock = time.perf_counter()
        return metrics


def _train(experiment: FinetuneExperiment, run: TrainingRun, data: TaskData, tokenizer, config):
    """Trains and evaluates every epoch, exports the best one; returns the done record."""
    init, trainer, task = experiment.model.init_checkpoint, experiment.trainer, data.task
    per_epoch = steps_per_epoch(data.train, trainer.batch_size)
    train_steps = trainer.train_steps or trainer.epochs * per_epoch
    last_only = trainer.train_steps is not None  # one evaluation, of the last model
    tf_keras.utils.set_random_seed(trainer.seed)
    with precision_policy(experiment.runtime.mixed_precision), run.strategy.scope():
        model, optimizer = build_finetuning(experiment, config, task.num_classes, train_steps)
        step = step_counter()
    checkpoint = run.checkpoint(
        "checkpoints",
        1,
        model=model,
        optimizer=optimizer,
        step=step,
        train_iterator=iter(
            train_batches(data.train, trainer.batch_size, trainer.seed, trainer.length_pool)
        ),
    )
    restored = run.resume(checkpoint)
    run.log(
        f"resumed from {restored} at step {int(step)}"
        if restored
        else f"fine-tuning {init} -> {run.model_dir}: {trainer.epochs} epochs x {per_epoch} "
        f"steps of {trainer.batch_size}"
    )

    def save_classifier(directory: str) -> None:
        save_model_dir(
            model, directory, overwrite=True, save_tokenizer=lambda d: save_tokenizer(tokenizer, d)
        )

    keeper = BestKeeper(
        run.model_dir, task.main_metric, (lambda _: None) if last_only else save_classifier
    )
    predict = make_predictor(model, experiment.task.seq_length, trainer.eval_batch_size)
    evaluate_epoch = EpochEvaluator(keeper, predict, data, step, per_epoch)
    if restored and int(step) % per_epoch == 0 and not keeper.evaluated(int(step)):
        evaluate_epoch()  # killed between an epoch's checkpoint and its evaluation
    with run.strategy.scope():
        train_step = finetune_step(model, optimizer, task.is_regression, trainer.jit_compile)
    run.train(
        train_step,
        checkpoint,
        LoopSettings(
            train_steps=train_steps,
            # a run of train_steps keeps (few, large) checkpoints: its end is what counts
            checkpoint_interval=max(per_epoch, CHECKPOINT_STEPS) if last_only else per_epoch,
            per_step=trainer.batch_size,  # examples: length_pool cuts batches below T
            unit="examples",
            log_interval=trainer.log_interval,
            # with trainer.train_steps: one evaluation, at the end (the last model is kept)
            eval_interval=train_steps if last_only else per_epoch,
            desc=f"finetune {task.name}",
        ),
        evaluate_epoch,
    )
    if not last_only:
        best_weights = os.path.join(keeper.best_dir, "model.ckpt")
        read_checkpoint(tf.train.Checkpoint(model=model), best_weights)
    return _export(run, model, evaluate_epoch, experiment, tokenizer, train_steps)


def _export(run: TrainingRun, model, epochs: EpochEvaluator, experiment, tokenizer, train_steps):
    """Strips pruning's or QAT's wrappers, exports the classifier and writes the done record
    (best dev metrics, history, truncation, timing); returns it."""
    task, data, keeper = epochs.data.task, epochs.data, epochs.keeper
    compressed = {}
    if experiment.prune.sparsity:
        pruning.strip(model)
        compressed = {"sparsity": round(pruning.overall_sparsity(model), 6)}
    if experiment.qat.enabled:
        if run.chief:
            qat.save_ranges(model, run.model_dir)
        compressed = {"qat_layers": qat.strip_qat(model)}
    best = keeper.best
    train_seconds = sum(h["train_seconds"] for h in keeper.history)
    done = run.finish(
        model,
        train_steps,
        lambda d: save_tokenizer(tokenizer, d),
        eval=best["metrics"],
        task=task.name,
        source=data.source,
        metric=task.main_metric,
        best_step=best["step"],
        best_epoch=best["epoch"],
        history=keeper.history,
        init_checkpoint=os.path.abspath(experiment.model.init_checkpoint),
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
        train_examples_per_second=round(
            train_steps * experiment.trainer.batch_size / train_seconds, 1
        ),
        **compressed,
    )
    for leftover in ("checkpoints", BEST_DIR) if run.chief else ():
        shutil.rmtree(os.path.join(run.model_dir, leftover), ignore_errors=True)
    run.log(
        f"best dev {task.main_metric} {best['metrics'][task.main_metric]:.4f} after epoch "
        f"{best['epoch']}; exported the classifier to {run.model_dir}"
    )
    return done
