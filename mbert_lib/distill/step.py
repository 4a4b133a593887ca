"""One stage's training step: the stage's loss, minimised over the variables it trains.

A stage trains variable groups at learning-rate multipliers (`Stage.rates`,
`plan.stage_variables`): {multiplier: variables}. Every variable not listed is
frozen for the stage, because no optimizer holds it. Each multiplier gets its own
optimizer with the stage's schedule scaled by it (c × the rate for the current
block, c × lower_lr_multiplier for the blocks below). The gradients of all the
groups are clipped together, by their one global norm, as one optimizer would.

The trainer (`mbert_lib.distill.trainer`), the throughput benchmark
(`mbert_lib.bench.distill`) and the tests all build their step here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import tensorflow as tf

from mbert_lib.distill.plan import Stage
from mbert_lib.optim import GroupedOptimizer, create_optimizer
from mbert_lib.train.step import make_train_step


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


@dataclasses.dataclass(frozen=True)
class StageStep:
    """train_step(iterator) -> {"loss", <loss terms>, "grad_norm", "learning_rate"}:
    one update of `variables` by `optimizer` on the next batch of `iterator`."""

    train_step: Callable
    optimizer: GroupedOptimizer
    variables: list


def stage_step(
    objective, groups: dict[float, list], optimizer_section, jit_compile: bool = False
) -> StageStep:
    """The step that minimises `objective` (a DistillationObjective: its `stage` gives the
    schedule) over `groups` ({multiplier: variables}), under the current strategy.

    Call it inside `strategy.scope()`: the optimizers' slots are created here.
    """
    optimizer = build_stage_optimizer(optimizer_section, objective.stage, groups)
    variables = [v for vs in groups.values() for v in vs]
    train_step = make_train_step(
        tf.distribute.get_strategy(), objective, optimizer, variables, jit_compile
    )
    return StageStep(train_step, optimizer, variables)
