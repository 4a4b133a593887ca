"""A pre-training run's state, rebuilt from its model directory, for inspection.

`restore_training_state(model_dir)` rebuilds the model and the optimizer
(LAMB with its schedule, moments and iteration count) from the run's
experiment.yaml and its latest checkpoint, as a resumed run would, without
the data iterator; `restore=False` gives the same objects freshly
initialised, i.e. the state before update 1. `pretraining_gradients`
computes the gradient of the MLM + NSP loss on one batch, as a train step
does (dropout on), so that e.g. `mbert_lib.optim.trust.lamb_step_report`
can show what the next LAMB update would do.
"""

from __future__ import annotations

import dataclasses
import os

import tensorflow as tf
import tf_keras

from mbert_lib.checkpoints import read_checkpoint
from mbert_lib.experiment import PretrainExperiment
from mbert_lib.models import build_pretrainer
from mbert_lib.optim import create_optimizer
from mbert_lib.train.objectives import PretrainingObjective
from mbert_lib.train.run_record import EXPERIMENT_FILE, recorded_experiment


@dataclasses.dataclass
class TrainingState:
    experiment: PretrainExperiment
    model: tf_keras.Model
    optimizer: tf_keras.optimizers.Optimizer
    step: int
    checkpoint: str | None  # the checkpoint restored, None for a fresh state


def restore_training_state(
    model_dir: str | os.PathLike, restore: bool = True, seed: int = 0
) -> TrainingState:
    """Model + optimizer of the run in `model_dir` (its latest checkpoint, or fresh)."""
    model_dir = os.fspath(model_dir)
    experiment = recorded_experiment(PretrainExperiment, model_dir)
    if experiment is None:
        raise FileNotFoundError(
            f"{os.path.join(model_dir, EXPERIMENT_FILE)} does not exist: "
            f"{model_dir} is not a pre-training run directory "
            "(run_pretraining writes experiment.yaml first)"
        )
    tf_keras.utils.set_random_seed(seed)
    model = build_pretrainer(experiment.model.build_config())
    trainer = experiment.trainer
    optimizer = create_optimizer(trainer.optimizer, trainer.learning_rate, trainer.train_steps)
    optimizer.build(model.trainable_variables)
    step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
    latest = None
    if restore:
        latest = tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints"))
        if latest is None:
            raise FileNotFoundError(f"no checkpoint in {model_dir}/checkpoints")
        checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step)
        read_checkpoint(checkpoint, latest, partial=True, restore=True)
    return TrainingState(experiment, model, optimizer, int(step), latest)


def pretraining_gradients(model, batch: dict) -> tuple[float, list[tf.Tensor]]:
    """(loss, gradients of L_MLM + L_NSP w.r.t. model.trainable_variables) on one batch.

    Embedding gradients are made dense, as `loop.make_train_step` does: clipping
    by global norm counts an IndexedSlices' repeated rows separately.
    """
    objective = PretrainingObjective(model)
    denominators = objective.denominators(batch)
    with tf.GradientTape() as tape:
        loss, _ = objective.loss(batch, denominators, training=True)
    grads = tape.gradient(loss, model.trainable_variables)
    return float(loss), [tf.convert_to_tensor(g) for g in grads]  # dense, as the train step
