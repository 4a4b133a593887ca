"""Distillation experiments: yaml -> frozen dataclasses (`python -m mbert_lib distill`).

A distillation experiment has the pre-training experiment's `data` and
`runtime` sections, a `teacher` and a `student` model section, a `trainer`
section without steps or learning rate (those are per stage), and a
`distillation` section, like tf-models' BertDistillationProgressiveConfig:

    distillation:
      strategy: progressive | joint | auxiliary | none       (paper Fig. 2, Table 8)
      transfer_teacher_layers: null | [t_0, ..., t_{L_S-1}]  student layer l learns layer t_l
      copy_embeddings: true                                  teacher -> student, by role
      student_dropout: true                                  false: the original code's student
      auxiliary_layer_mean: false                            true: AKT divides its layer sums by L
      layer_wise:   steps, learning_rate (per stage: its own warm-up and decay), use_fmt,
                    use_attention, fmt weights, attention_weight,
                    current_lr_multiplier (the stage's own layer; the original code: 3),
                    lower_lr_multiplier (of the current layer's rate; 0 = lower layers frozen),
                    train_embedding (false: frozen in layer-wise stages, as the original code)
      pretrain:     steps (0 = no PD stage), learning_rate, distill_ground_truth_ratio α,
                    temperature, use_nsp
      joint_steps / auxiliary_steps: null = the same total number of student steps as PKT

The original TF1 code's layer-wise recipe (google-research `mobilebert/`,
`distill_util.layer_wise_learning_rate` and `get_background_lr`, used by its
LAMB optimizer) is, in these fields: current_lr_multiplier 3,
lower_lr_multiplier 0.1, train_embedding false, per stage a linear warm-up
over the first 10 % of its steps and a decay to 0.9 of the peak with power
0.5 (learning_rate {warmup_steps: steps / 10, end: 0.9 · peak, power: 0.5}),
student_dropout false (its `run_pretraining.py` builds the student with
is_training=False whenever a teacher is present) and, for AKT,
auxiliary_layer_mean true. `experiments/distill_ibbert_to_mobilebert.yaml`
uses it.

`load_distill_experiment(path, overrides)` reads, overrides and validates one;
a teacher/student pair that cannot be distilled (different inter-block widths,
head counts, vocabularies, embedding shapes, or a layer mapping that does not
fit) fails here, naming both values.
"""

from __future__ import annotations

import dataclasses
import os

from mbert_lib.config_tree import check, check_positive
from mbert_lib.experiment import (
    DataSection,
    LearningRateSection,
    ModelSection,
    RuntimeSection,
    StepLoopSection,
    load_experiment,
)

STRATEGIES = ("progressive", "joint", "auxiliary", "none")


@dataclasses.dataclass(frozen=True)
class LayerWiseSection:
    """The layer-wise transfer stages: FMT + AT (paper section 3.5, eqs. 1-2).

    tf-models' defaults: 10k steps per layer at a constant 1.5e-3, FMT weights
    100 / 5000 / 5, attention weight 1. Rates in a progressive stage, as
    multiples of `learning_rate`: the stage's own block current_lr_multiplier
    (c), the blocks below c · lower_lr_multiplier, the embedding the same as
    the blocks below when train_embedding (else frozen); heads are not trained.
    """

    steps: int = 10000
    learning_rate: LearningRateSection = dataclasses.field(
        default_factory=lambda: LearningRateSection(peak=1.5e-3, end=1.5e-3)
    )
    use_fmt: bool = True
    use_attention: bool = True
    fmt_mse_weight: float = 100.0
    fmt_mean_weight: float = 5000.0
    fmt_var_weight: float = 5.0
    fmt_paper_mse_weight: float = 0.0  # the paper's plain MSE of eq. 1, added
    attention_weight: float = 1.0
    current_lr_multiplier: float = 1.0
    lower_lr_multiplier: float = 0.1
    train_embedding: bool = True

    def __post_init__(self):
        check_positive(self, "steps", "current_lr_multiplier", prefix="distillation.layer_wise")
        check(
            self.learning_rate.warmup_steps < self.steps,
            "distillation.layer_wise.learning_rate.warmup_steps",
            f"< distillation.layer_wise.steps ({self.steps}): each stage warms up anew",
            self.learning_rate.warmup_steps,
        )
        for name in (
            "fmt_mse_weight",
            "fmt_mean_weight",
            "fmt_var_weight",
            "fmt_paper_mse_weight",
            "attention_weight",
        ):
            check(
                getattr(self, name) >= 0,
                f"distillation.layer_wise.{name}",
                ">= 0",
                getattr(self, name),
            )
        check(
            0.0 <= self.lower_lr_multiplier <= 1.0,
            "distillation.layer_wise.lower_lr_multiplier",
            "in [0, 1], a fraction of the current layer's rate (0: lower layers frozen)",
            self.lower_lr_multiplier,
        )


@dataclasses.dataclass(frozen=True)
class PretrainDistillSection:
    """The pre-training distillation stage: α·MLM + (1−α)·KD + NSP (paper eq. 3)."""

    steps: int = 500000
    learning_rate: LearningRateSection = dataclasses.field(
        default_factory=lambda: LearningRateSection(peak=1.5e-3, end=1.5e-7, warmup_steps=10000)
    )
    distill_ground_truth_ratio: float = 0.5
    temperature: float = 1.0
    use_nsp: bool = True
    # not in the paper: keep every layer's attention transfer (at layer_wise.attention_weight)
    # in the PD loss, so that PD cannot undo what the layer-wise stages transferred
    attention_transfer: bool = False

    def __post_init__(self):
        check(self.steps >= 0, "distillation.pretrain.steps", ">= 0 (0: no PD stage)", self.steps)
        check(
            0.0 <= self.distill_ground_truth_ratio <= 1.0,
            "distillation.pretrain.distill_ground_truth_ratio",
            "in [0, 1]",
            self.distill_ground_truth_ratio,
        )
        check(self.temperature > 0, "distillation.pretrain.temperature", "> 0", self.temperature)
        check(
            self.steps == 0 or self.learning_rate.warmup_steps <= self.steps,
            "distillation.pretrain.learning_rate.warmup_steps",
            f"<= distillation.pretrain.steps ({self.steps})",
            self.learning_rate.warmup_steps,
        )


@dataclasses.dataclass(frozen=True)
class DistillationSection:
    """Which strategy, which objectives, how long."""

    strategy: str = "progressive"
    transfer_teacher_layers: tuple[int, ...] | None = None
    copy_embeddings: bool = True
    student_dropout: bool = True  # False: the student runs without dropout
    auxiliary_layer_mean: bool = False  # True: AKT's layer-wise sum divided by L
    layer_wise: LayerWiseSection = dataclasses.field(default_factory=LayerWiseSection)
    pretrain: PretrainDistillSection = dataclasses.field(default_factory=PretrainDistillSection)
    joint_steps: int | None = None  # None: L_S × layer_wise.steps
    auxiliary_steps: int | None = None  # None: L_S × layer_wise.steps + pretrain.steps

    def __post_init__(self):
        check(
            self.strategy in STRATEGIES,
            "distillation.strategy",
            f"one of {list(STRATEGIES)}",
            self.strategy,
        )
        check_positive(self, "joint_steps", "auxiliary_steps", prefix="distillation")
        if self.strategy != "none" and not self.layer_wise.use_fmt:
            raise ValueError(
                "distillation.layer_wise.use_fmt must be true for a layer-wise strategy: "
                "attention transfer alone leaves a block's FFNs and output bottleneck "
                "without a gradient (use strategy: none for PD alone)"
            )
        if (
            self.strategy in ("none", "auxiliary")
            and self.pretrain.steps == 0
            and self.auxiliary_steps is None
        ):
            raise ValueError(
                f"distillation.pretrain.steps is 0: strategy {self.strategy!r} would train nothing"
            )


@dataclasses.dataclass(frozen=True)
class DistillTrainerSection(StepLoopSection):
    """The loop settings shared by every stage (steps and rates are per stage)."""

    max_checkpoints_to_keep: int = 2
    eval_each_stage: bool = True  # held-out metrics at the end of every stage (else: at the end)


@dataclasses.dataclass(frozen=True)
class DistillExperiment:
    """Knowledge transfer from a pre-trained teacher into a student."""

    description: str = ""
    teacher: ModelSection = dataclasses.field(
        default_factory=lambda: ModelSection(preset="tiny_teacher")
    )
    student: ModelSection = dataclasses.field(
        default_factory=lambda: ModelSection(preset="tiny_student")
    )
    data: DataSection = dataclasses.field(default_factory=DataSection)
    distillation: DistillationSection = dataclasses.field(default_factory=DistillationSection)
    trainer: DistillTrainerSection = dataclasses.field(default_factory=DistillTrainerSection)
    runtime: RuntimeSection = dataclasses.field(default_factory=RuntimeSection)

    def __post_init__(self):
        teacher, student = self.teacher.build_config(), self.student.build_config()
        for field, why in [
            ("hidden_size", "feature-map transfer compares block outputs"),
            ("num_attention_heads", "attention transfer compares heads"),
            ("vocab_size", "PD compares MLM distributions"),
            ("embedding_size", "the embedding is copied from the teacher"),
            ("max_position_embeddings", "the embedding is copied"),
            ("type_vocab_size", "the embedding is copied"),
            ("trigram_input", "the embedding is copied"),
        ]:
            t, s = getattr(teacher, field), getattr(student, field)
            if t != s:
                raise ValueError(
                    f"teacher and student differ in {field}: teacher {t!r}, "
                    f"student {s!r}; they must agree because {why}"
                )
        teacher_layer_map(
            self.distillation.transfer_teacher_layers,
            student.num_hidden_layers,
            teacher.num_hidden_layers,
        )
        check(
            self.data.vocab_size == student.vocab_size,
            "data.vocab_size",
            f"the student's vocab_size ({student.vocab_size})",
            self.data.vocab_size,
        )
        check(
            self.data.seq_length <= student.max_position_embeddings,
            "data.seq_length",
            f"<= max_position_embeddings ({student.max_position_embeddings})",
            self.data.seq_length,
        )

    @property
    def model(self) -> ModelSection:
        """The student: the model the data pipeline is checked against."""
        return self.student


def teacher_layer_map(
    transfer_teacher_layers: tuple[int, ...] | None, student_layers: int, teacher_layers: int
) -> tuple[int, ...]:
    """The teacher layer each student layer learns from: t_l for l = 0..L_S−1.

    None maps layer l to layer l and needs equal depths (tf-models' rule); a
    list must have one in-range, increasing teacher index per student layer,
    e.g. (3, 7, 11, 15, 19, 23) for a 6-layer student of a 24-layer teacher.
    """
    key = "distillation.transfer_teacher_layers"
    if transfer_teacher_layers is None:
        if student_layers != teacher_layers:
            raise ValueError(
                f"{key} is not set and the student has {student_layers} layers "
                f"but the teacher {teacher_layers}; list the teacher layer for "
                f"each of the {student_layers} student layers"
            )
        return tuple(range(student_layers))
    layers = tuple(transfer_teacher_layers)
    if len(layers) != student_layers:
        raise ValueError(
            f"{key} has {len(layers)} entries {list(layers)} but the student has "
            f"{student_layers} layers: give one teacher layer per student layer"
        )
    bad = [t for t in layers if not 0 <= t < teacher_layers]
    if bad:
        raise ValueError(
            f"{key}: teacher layer(s) {bad} out of range; the teacher has "
            f"{teacher_layers} layers (0..{teacher_layers - 1})"
        )
    if any(b <= a for a, b in zip(layers, layers[1:])):
        raise ValueError(
            f"{key} must be increasing (deeper student layers learn deeper "
            f"teacher layers), got {list(layers)}"
        )
    return layers


def load_distill_experiment(
    path: str | os.PathLike, params_override: str | None = None
) -> DistillExperiment:
    """Reads a distillation yaml, applies overrides, validates; errors name the file."""
    return load_experiment(path, params_override, cls=DistillExperiment)
