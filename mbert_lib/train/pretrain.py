"""Pre-training (MLM + NSP) of any Pretrainer config: the teacher IB-BERT, or a plain BERT.

`run_pretraining(experiment, model_dir)` trains the model an experiment
describes and leaves in `model_dir`:

    experiment.yaml          the final config of the run
    checkpoints/ckpt-N       model + optimizer + step + data-iterator state (resume)
    tensorboard/{train,eval} loss, mlm/nsp loss, lr, grad norm, tokens/s; eval metrics
    bert_config.json, model.ckpt.*, tokenizer files   the exported model (mbert_lib.checkpoints)
    training_done.json       written last: a finished run is never redone

Killed, it resumes from the last checkpoint at the same step and data
position; re-run after it finished, it reports "already done" and returns.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import tf_keras

from mbert_lib.experiment import PretrainExperiment
from mbert_lib.models import build_pretrainer
from mbert_lib.optim import create_optimizer
from mbert_lib.train.loop import LoopSettings
from mbert_lib.train.objectives import PretrainingObjective
from mbert_lib.train.pretrain_data import PretrainingData, strategy_and_data
from mbert_lib.train.run import TrainingRun
from mbert_lib.train.run_dir import finished_run
from mbert_lib.train.step import make_evaluator, make_train_step, step_counter, step_value
from mbert_lib.train.strategy import precision_policy


def _train(experiment: PretrainExperiment, run: TrainingRun, data: PretrainingData):
    """Builds, restores and trains the model to trainer.train_steps; (model, eval metrics)."""
    trainer, runtime = experiment.trainer, experiment.runtime
    os.makedirs(run.model_dir, exist_ok=True)
    tf_keras.utils.set_random_seed(trainer.seed)
    with precision_policy(runtime.mixed_precision):
        with run.strategy.scope():
            model = build_pretrainer(experiment.model.build_config())
            optimizer = create_optimizer(
                trainer.optimizer, trainer.learning_rate, trainer.train_steps
            )
            optimizer.build(model.trainable_variables)
            step = step_counter()
        checkpoint = run.checkpoint(
            "checkpoints",
            trainer.max_checkpoints_to_keep,
            model=model,
            optimizer=optimizer,
            step=step,
            train_iterator=iter(data.train.repeat()),  # this worker's batches, per replica
        )
        restored = run.resume(checkpoint)
        run.log(
            f"resumed from {restored} at step {step_value(step)}"
            if restored
            else f"starting a fresh run in {run.model_dir}"
        )
        objective = PretrainingObjective(model)
        evaluate = make_evaluator(run.strategy, objective, data.eval, trainer.eval_steps)
        metrics = run.train(
            make_train_step(
                run.strategy, objective, optimizer, model.trainable_variables, trainer.jit_compile
            ),
            checkpoint,
            LoopSettings(
                train_steps=trainer.train_steps,
                checkpoint_interval=trainer.checkpoint_interval,
                per_step=trainer.batch_size * experiment.data.seq_length,
                log_interval=trainer.log_interval,
                eval_interval=trainer.eval_interval,
            ),
            evaluate,
        )
        if not metrics and evaluate is not None:  # resumed at the last step: evaluate anyway
            metrics = evaluate()
    return model, metrics


def run_pretraining(
    experiment: PretrainExperiment,
    model_dir: str | os.PathLike,
    data: PretrainingData | None = None,
    show_progress: bool = True,
    log: Callable[[str], None] = print,
) -> dict:
    """Trains (or resumes, or skips a finished run); returns the done record with eval metrics."""
    model_dir = os.fspath(model_dir)
    trainer = experiment.trainer
    done = finished_run(
        experiment,
        model_dir,
        train_steps=trainer.train_steps,
        fixed=lambda key: key.startswith("model."),
        describe=lambda d: f"finished {d['train_steps']} steps (asked for {trainer.train_steps})",
        log=log,
    )
    if done is not None:
        return done
    strategy, data = strategy_and_data(experiment, data)
    run = TrainingRun(model_dir, strategy, show_progress, log)
    with run.writing(experiment):
        model, metrics = _train(experiment, run, data)
        return run.finish(model, trainer.train_steps, data.save_tokenizer, eval=metrics)
