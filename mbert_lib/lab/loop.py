"""A small training loop the lab's teacher and students share.

Adam with gradient clipping (global norm 1) and, per stage, a linear warm-up over the
first 10 % of its steps and a linear decay to 1 % of the peak. Without the warm-up the
teacher does not leave the induction task's plateau (2,000 steps at chance).

One `StageRunner` serves every student of a lab: its optimizer and compiled steps are
made once and reset between runs (`reset`), and a stage's loss weights are inputs of its
step, so each run costs its updates, not a new trace; the updates run in chunks inside
the compiled step. The steps are compiled with XLA
(`jit_compile`), which fuses the small models' many small ops; compiling costs seconds
per step function, more than a run of a few steps saves (the tests' tiny lab turns it
off).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import numpy as np
import tensorflow as tf
import tf_keras

WARMUP_FRACTION, END_FRACTION, CLIP_NORM = 0.1, 0.01, 1.0


class StageSchedule(tf_keras.optimizers.schedules.LearningRateSchedule):
    """peak · min(1, (t + 1) / w) · (1 − (1 − end) · t / n) for step t of an n-step stage,
    w = max(1, 0.1 n); n and the peak are variables, so one schedule serves every stage."""

    def __init__(self):
        self.peak = tf.Variable(1e-3, trainable=False, dtype=tf.float32)
        self.steps = tf.Variable(1.0, trainable=False, dtype=tf.float32)

    def __call__(self, step):
        t = tf.cast(step, tf.float32)
        warm = tf.minimum(1.0, (t + 1.0) / tf.maximum(1.0, WARMUP_FRACTION * self.steps))
        decay = 1.0 - (1.0 - END_FRACTION) * tf.minimum(t / self.steps, 1.0)
        return self.peak * warm * decay

    def get_config(self):
        return {}


@dataclasses.dataclass(frozen=True)
class Stage:
    """What a stage trains: `loss_fn(batch, weights) -> scalar` with the loss's `weights`
    (a dict of floats; default none) on `variables` (default: all the model's trainable
    ones). `key` names the compiled step the stage runs (see `StageRunner`)."""

    key: str
    loss_fn: Callable
    variables: list | None = None
    weights: dict[str, float] | None = None


class StageRunner:
    """Runs stages (`Stage`) of `loss_fn(batch, weights) -> scalar` on a model's variables.

    `model` must be built; `data` holds every training example's arrays (numpy, n rows
    each), kept as tensors. A stage's updates run in chunks inside one compiled call (a
    loop over the chunk's batches of row indices, each batch gathered from `data`), so
    Python is entered once per chunk, not once per update. Steps are compiled once per
    `key`; `weights` (a dict of floats) are passed as tensors, so stages that differ only
    in their weights share a step. The first `loss_fn` and `variables` given for a key
    are the ones its step keeps: a key names one loss and one set of variables.
    """

    def __init__(self, model: tf_keras.Model, data: dict, jit_compile: bool = True):
        self.model, self.jit_compile = model, jit_compile
        self.data = {k: tf.constant(v) for k, v in data.items()}
        self.schedule = StageSchedule()
        self.optimizer = tf_keras.optimizers.Adam(self.schedule, clipnorm=CLIP_NORM)
        self.optimizer.build(model.trainable_variables)
        self._steps: dict[str, Callable] = {}

    def reset(self) -> None:
        """A fresh optimizer state (moments and step count at zero)."""
        for variable in self.optimizer.variables():
            variable.assign(tf.zeros_like(variable))

    def _compiled(self, stage: Stage) -> Callable:
        """The compiled chunk of updates of `stage.key`, made on its first stage."""
        key, loss_fn, variables = stage.key, stage.loss_fn, stage.variables
        if key not in self._steps:
            variables = self.model.trainable_variables if variables is None else variables

            def update(data, rows, weights):
                batch = {k: tf.gather(v, rows) for k, v in data.items()}
                with tf.GradientTape() as tape:
                    loss = loss_fn(batch, weights)
                grads = tape.gradient(loss, variables)
                self.optimizer.apply_gradients(
                    [(g, v) for g, v in zip(grads, variables) if g is not None]
                )
                return loss

            @tf.function(jit_compile=self.jit_compile, autograph=False)
            def chunk(data, rows, weights):  # rows [k, B]: k updates
                _, loss = tf.while_loop(
                    lambda i, _: i < tf.shape(rows)[0],
                    lambda i, _: (i + 1, update(data, rows[i], weights)),
                    (tf.constant(0), tf.constant(0.0)),
                )
                return loss

            self._steps[key] = chunk
        return self._steps[key]

    def run_stage(
        self,
        stage: Stage,
        rows: Iterator[np.ndarray],
        steps: int,
        learning_rate: float,
        after_step: Callable[[int], None] | None = None,
        every: int = 50,
    ) -> float:
        """`steps` updates of `stage` from a fresh schedule, on the batches of row indices
        `rows` yields ([B] each); after_step(i) after every `every`-th update i (1-based)
        and the last. Returns the last update's loss.

        Raises FloatingPointError naming the stage when the loss is not finite.
        """
        self.optimizer.iterations.assign(0)
        self.schedule.peak.assign(learning_rate)
        self.schedule.steps.assign(float(steps))
        step = self._compiled(stage)
        weights = {k: tf.constant(v, tf.float32) for k, v in (stage.weights or {}).items()}
        loss, done = tf.constant(0.0), 0
        while done < steps:
            k = min(every - done % every, steps - done)
            loss = step(self.data, np.stack([next(rows) for _ in range(k)]), weights)
            done += k
            if after_step is not None:
                after_step(done)
        value = float(loss)
        if value != value or value in (float("inf"), float("-inf")):
            raise FloatingPointError(f"stage {stage.key}: the loss is {value} after {steps} steps")
        return value
