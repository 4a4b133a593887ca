"""Progressive knowledge transfer (paper section 4.3, Fig. 2), in the paper's own order.

The student learns the teacher one stage at a time. In PKT, stage l (l = 0 … L−1)
minimises FMT_l + AT_l (eqs. 1 and 2) between student layer l and its teacher
layer t_l, training block l while the blocks below it are slowed down, or frozen
with lower_lr_multiplier 0. The last stage, pre-training distillation (PD, eq. 3),
trains every variable on the MLM objective against the teacher's MLM logits. JKT
and AKT run the same loop over other stages (`plan.plan_stages`).

    plan = TransferPlan.of(experiment.distillation, student_layers=4, teacher_layers=4)
    progressive_transfer(teacher, student, plan, minimise_in_steps(iterator, optimizer))

`run_distillation` (mbert_lib.distill.trainer) calls `progressive_transfer` with a
`minimise` that also resumes, checkpoints and records each stage.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from mbert_lib.distill.objective import DistillationObjective
from mbert_lib.distill.plan import Stage, plan_stages, stage_variables
from mbert_lib.distill.step import stage_step
from mbert_lib.experiment.distill import DistillationSection, teacher_layer_map

# minimise(stage, objective, groups): stage.train_steps updates of groups
# ({learning-rate multiplier: variables}) on the objective's loss.
Minimise = Callable[[Stage, DistillationObjective, dict], None]


@dataclasses.dataclass(frozen=True)
class TransferPlan:
    """What a distillation run teaches: its stages, the teacher layer of each student
    layer (layer_map[l] = t_l) and the loss settings of `distillation`."""

    stages: tuple[Stage, ...]
    layer_map: tuple[int, ...]
    distillation: DistillationSection

    @classmethod
    def of(
        cls, distillation: DistillationSection, student_layers: int, teacher_layers: int
    ) -> TransferPlan:
        layer_map = teacher_layer_map(
            distillation.transfer_teacher_layers, student_layers, teacher_layers
        )
        return cls(tuple(plan_stages(distillation, student_layers)), tuple(layer_map), distillation)

    def objective(self, teacher, student, stage: Stage) -> DistillationObjective:
        """The loss of `stage` between the two Pretrainers."""
        d = self.distillation
        return DistillationObjective(
            teacher,
            student,
            stage,
            self.layer_map,
            d.layer_wise,
            d.pretrain,
            student_dropout=d.student_dropout,
            layer_mean=d.auxiliary_layer_mean and d.strategy == "auxiliary",
        )


def progressive_transfer(teacher, student, plan: TransferPlan, minimise: Minimise):
    """Teaches `student` from `teacher`, stage by stage of `plan`; returns the student."""
    teacher.trainable = False  # the teacher only teaches: it is in no optimizer
    for stage in plan.stages:  # PKT: layer_0, …, layer_{L-1}, then pd
        groups = stage_variables(student, stage)  # what the stage trains; the rest is frozen
        objective = plan.objective(teacher, student, stage)  # FMT_l + AT_l, or PD
        minimise(stage, objective, groups)
    return student


def minimise_in_steps(iterator, optimizer_section, jit_compile: bool = False) -> Minimise:
    """A `minimise` with nothing around it: stage.train_steps steps on the next batches of
    `iterator`, with the trainer's own step (`stage_step`)."""

    def minimise(stage: Stage, objective: DistillationObjective, groups: dict) -> None:
        step = stage_step(objective, groups, optimizer_section, jit_compile)
        for _ in range(stage.train_steps):
            step.train_step(iterator)

    return minimise
