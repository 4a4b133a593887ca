"""The training loop shared by every trainer (pre-training, distillation, fine-tuning).

`run_loop` repeats a train step (`mbert_lib.train.step.make_train_step`) until the
step counter reaches the run's length, with progress, TensorBoard scalars,
periodic checkpoints and evaluation. `mbert_lib.train.run.TrainingRun` calls it
with the run directory's checkpoints and scalars.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import tensorflow as tf

from mbert_lib.train.checkpointing import RunCheckpoint
from mbert_lib.train.progress import Progress, Scalars
from mbert_lib.train.step import step_value


@dataclasses.dataclass(frozen=True)
class LoopSettings:
    """How long `run_loop` runs and how often it logs, saves and evaluates."""

    train_steps: int  # run until the step counter reaches this
    checkpoint_interval: int  # save every this many steps, and at the end
    per_step: int  # items a step, for the throughput: B × T tokens, or B examples
    log_interval: int = 10  # train scalars (TensorBoard train/) every this many steps
    eval_interval: int = 1000  # evaluate every this many steps, and at the end
    desc: str = "train"  # the progress bar's label
    show_progress: bool = True
    unit: str = "tokens"  # what per_step counts: "tokens" or "examples"
    postfix_keys: tuple[str, ...] = ()  # metrics the progress bar shows beside the loss


def run_loop(
    *,
    train_step: Callable,
    iterator,
    step: tf.Variable,
    checkpoint: RunCheckpoint,
    scalars: Scalars,
    settings: LoopSettings,
    evaluate: Callable[[], dict] | None = None,
    log: Callable[[str], None] = print,
) -> dict:
    """Runs train_step until `step` reaches `settings.train_steps`; returns the last eval
    metrics.

    Saves a checkpoint every `checkpoint_interval` steps and at the end, evaluates every
    `eval_interval` steps and at the end, writes train scalars every `log_interval` steps
    (train/) and eval scalars (eval/). The progress bar shows the loss, the throughput and the
    metrics named in `postfix_keys`. A non-finite loss stops the run with an error; the
    last checkpoint stays.
    """
    start = step_value(step)
    train_steps = settings.train_steps
    progress = Progress(
        train_steps,
        start,
        settings.per_step,
        settings.desc,
        disable=not settings.show_progress,
        log=log,
        postfix_keys=settings.postfix_keys,
        unit=settings.unit,
    )
    eval_metrics: dict = {}
    try:
        while step_value(step) < train_steps:
            values = {k: float(v) for k, v in train_step(iterator).items()}
            step.assign_add(1)
            current = step_value(step)
            if not math.isfinite(values["loss"]):
                raise FloatingPointError(
                    f"loss is {values['loss']} at step {current}; stopping. The last "
                    f"checkpoint is {checkpoint.latest}"
                )
            progress.update(values)
            last = current == train_steps
            if current % settings.log_interval == 0 or last:
                rate = {f"{settings.unit}_per_second": progress.per_second}
                scalars.write(
                    "train",
                    current,
                    {**values, **(rate if math.isfinite(progress.per_second) else {})},
                )
            if current % settings.checkpoint_interval == 0 or last:
                checkpoint.save(current)
                progress.pause()
            if evaluate is not None and (current % settings.eval_interval == 0 or last):
                eval_metrics = evaluate()
                scalars.write("eval", current, eval_metrics)
                progress.write(
                    f"step {current}: " + ", ".join(f"{k} {v:.4g}" for k, v in eval_metrics.items())
                )
                progress.pause()
    finally:
        progress.close()
        scalars.flush()
    return eval_metrics
