"""Experiment configs: yaml files -> nested frozen dataclasses, with dotted overrides.

An experiment file (see `experiments/*.yaml`) has four sections, like
tensorflow/models' experiment configs:

    model:    preset name or bert_config.json file, plus field overrides
    data:     corpus source, vocabulary, sequence length, masking
    trainer:  steps, batch size, optimizer, learning-rate schedule,
              checkpoint / eval / log intervals, seed, jit_compile
    runtime:  tf.distribute strategy and mixed precision

`load_experiment(path, "trainer.train_steps=100,runtime.mixed_precision=bfloat16")`
reads the file, applies the overrides (values parsed as yaml, then checked
against the field's type) and validates the result. Unknown keys and wrong
types are errors that name the dotted key. The loader is generic over the
top-level class (`cls=`), so the other trainers' schemas build their own top-level
dataclass from these sections:

    __init__.py   the sections above and PretrainExperiment (pre-training)
    distill.py    DistillExperiment: teacher, student, the distillation section
    finetune.py   FinetuneExperiment: task, model, trainer, task distillation, pruning, QAT

docs/configuration.md says where every kind of setting lives.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Mapping
from typing import Any

import yaml

from mbert_lib.config import MobileBertConfig, get_preset
from mbert_lib.config_tree import (  # noqa: F401
    apply_overrides,
    changed_keys,
    check,
    check_positive,
    from_dict,
    parse_overrides,
    save_yaml,
    to_dict,
    to_yaml,
)

DATA_SOURCES = ("synthetic", "builtin", "local", "hub")
OPTIMIZERS = ("lamb", "adamw")
# The names the schema accepts; the trainers (mbert_lib.train.strategy, mbert_lib.optim)
# read them from here, so validating a yaml file needs no trainer.
STRATEGIES = ("default", "one_device", "mirrored", "multi_worker_mirrored", "tpu")
POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16"}  # name -> Keras policy
PRECISIONS = tuple(POLICIES)
# BERT's: no weight decay on LayerNorm / NoNorm scales and shifts, nor on biases.
DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = (r"/gamma$", r"/beta$", r"bias$")
MAX_SEED = 2**32 - 1  # the largest seed NumPy (and so tf_keras.utils.set_random_seed) takes


def _choice(value: str, choices: tuple[str, ...], key: str) -> None:
    check(value in choices, key, f"one of {list(choices)}", value)


def check_sparsity(value, name: str = "sparsity") -> float:
    """`value` as a float in [0, 1); raises ValueError naming `name` otherwise (also the
    compress step's and pruning's check, which read no experiment)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
        raise ValueError(f"{name} must be a number in [0, 1), got {value!r}")
    return float(value)


# -------------------------------------------------------------------- sections
@dataclasses.dataclass(frozen=True)
class ModelSection:
    """A preset or a bert_config.json file, then `overrides` of its fields."""

    preset: str | None = "tiny_teacher"
    bert_config_file: str | None = None
    overrides: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if (self.preset is None) == (self.bert_config_file is None):
            raise ValueError(
                "model: set exactly one of model.preset and model.bert_config_file "
                "(model.preset: null to use a file), got preset="
                f"{self.preset!r}, bert_config_file={self.bert_config_file!r}"
            )
        known = {f.name for f in dataclasses.fields(MobileBertConfig)}
        for key in self.overrides:
            if key not in known:
                raise ValueError(
                    f"unknown key 'model.overrides.{key}'; a model override must "
                    f"be a MobileBertConfig field: {sorted(known)}"
                )

    def build_config(self) -> MobileBertConfig:
        """The MobileBertConfig this section describes (validated)."""
        base = (
            get_preset(self.preset)
            if self.preset is not None
            else MobileBertConfig.from_json_file(self.bert_config_file)
        )
        try:
            return base.replace(**self.overrides)
        except (ValueError, TypeError) as e:
            raise ValueError(f"model.overrides: {e}") from e


@dataclasses.dataclass(frozen=True)
class DataSection:
    """Where pre-training text comes from and how examples are made."""

    source: str = "builtin"
    data_dir: str | None = None
    vocab_file: str | None = None
    vocab_size: int = 8192
    lower_case: bool = True
    seq_length: int = 128
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    dupe_factor: int = 10
    cache_dir: str | None = None
    seed: int = 12345

    def __post_init__(self):
        _choice(self.source, DATA_SOURCES, "data.source")
        check_positive(
            self,
            "vocab_size",
            "seq_length",
            "max_predictions_per_seq",
            "dupe_factor",
            prefix="data",
        )
        check(0 < self.masked_lm_prob < 1, "data.masked_lm_prob", "in (0, 1)", self.masked_lm_prob)
        check(
            self.max_predictions_per_seq <= self.seq_length,
            "data.max_predictions_per_seq",
            f"<= data.seq_length ({self.seq_length})",
            self.max_predictions_per_seq,
        )


@dataclasses.dataclass(frozen=True)
class OptimizerSection:
    """LAMB (or AdamW = LAMB without the trust ratio); see mbert_lib.optim.Lamb."""

    type: str = "lamb"
    weight_decay_rate: float = 0.01
    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-6
    global_clipnorm: float | None = 1.0
    bias_correction: bool = True
    exclude_from_weight_decay: tuple[str, ...] = DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY

    def __post_init__(self):
        _choice(self.type, OPTIMIZERS, "trainer.optimizer.type")
        check_positive(self, "epsilon", "global_clipnorm", prefix="trainer.optimizer")
        check(
            math.isfinite(self.weight_decay_rate) and self.weight_decay_rate >= 0,
            "trainer.optimizer.weight_decay_rate",
            "a finite number >= 0 (0: no weight decay)",
            self.weight_decay_rate,
        )
        for name in ("beta_1", "beta_2"):
            check(
                0 <= getattr(self, name) < 1,
                f"trainer.optimizer.{name}",
                "in [0, 1)",
                getattr(self, name),
            )
        for pattern in self.exclude_from_weight_decay:
            try:
                re.compile(pattern)
            except re.error as e:
                raise ValueError(
                    f"trainer.optimizer.exclude_from_weight_decay: {pattern!r} "
                    f"is not a regular expression ({e})"
                ) from None


@dataclasses.dataclass(frozen=True)
class LearningRateSection:
    """Linear warmup + polynomial decay (mbert_lib.optim.WarmupPolynomialDecay)."""

    peak: float = 1e-3
    end: float = 0.0
    warmup_steps: int = 0
    power: float = 1.0
    decay_steps: int | None = None  # None: trainer.train_steps

    def __post_init__(self):
        check_positive(self, "peak", "power", "decay_steps", prefix="trainer.learning_rate")
        check(
            0 <= self.end <= self.peak,
            "trainer.learning_rate.end",
            f"in [0, peak = {self.peak}]",
            self.end,
        )
        check(
            self.warmup_steps >= 0, "trainer.learning_rate.warmup_steps", ">= 0", self.warmup_steps
        )


@dataclasses.dataclass(frozen=True)
class LoopSection:
    """What every trainer's `trainer` section holds: batch sizes, the seed, how often it
    logs, XLA, the optimizer. Pre-training, distillation and fine-tuning extend it."""

    batch_size: int = 32
    eval_batch_size: int = 32
    log_interval: int = 10
    seed: int = 0
    jit_compile: bool = False
    optimizer: OptimizerSection = dataclasses.field(default_factory=OptimizerSection)

    def __post_init__(self):
        check_positive(self, "batch_size", "eval_batch_size", "log_interval", prefix="trainer")
        check(
            0 <= self.seed <= MAX_SEED,
            "trainer.seed",
            f"in [0, 2**32 - 1 = {MAX_SEED}] (NumPy's seeds)",
            self.seed,
        )


@dataclasses.dataclass(frozen=True)
class StepLoopSection(LoopSection):
    """A loop counted in steps on pre-training data: held-out evaluation and checkpoints
    every so many steps (pre-training and distillation; fine-tuning counts epochs)."""

    eval_steps: int | None = None  # None: the whole held-out set
    checkpoint_interval: int = 500
    max_checkpoints_to_keep: int = 3
    eval_interval: int = 1000

    def __post_init__(self):
        super().__post_init__()
        check_positive(
            self,
            "eval_steps",
            "checkpoint_interval",
            "max_checkpoints_to_keep",
            "eval_interval",
            prefix="trainer",
        )


@dataclasses.dataclass(frozen=True)
class TrainerSection(StepLoopSection):
    """The pre-training loop: how long, at what rate, and the shared loop settings."""

    train_steps: int = 1000
    learning_rate: LearningRateSection = dataclasses.field(default_factory=LearningRateSection)

    def __post_init__(self):
        super().__post_init__()
        check_positive(self, "train_steps", prefix="trainer")
        warmup = self.learning_rate.warmup_steps
        decay = self.learning_rate.decay_steps or self.train_steps
        check(
            warmup <= decay,
            "trainer.learning_rate.warmup_steps",
            f"<= the decay steps ({decay})",
            warmup,
        )


@dataclasses.dataclass(frozen=True)
class RuntimeSection:
    """Where the computation runs: tf.distribute strategy and precision."""

    distribution_strategy: str = "default"
    devices: tuple[str, ...] | None = None  # mirrored / one_device; None: all GPUs or CPU
    tpu_address: str | None = None
    mixed_precision: str = "float32"

    def __post_init__(self):
        _choice(self.distribution_strategy, STRATEGIES, "runtime.distribution_strategy")
        _choice(self.mixed_precision, PRECISIONS, "runtime.mixed_precision")


@dataclasses.dataclass(frozen=True)
class PretrainExperiment:
    """A pre-training (MLM + NSP) run: `python -m mbert_lib pretrain`."""

    description: str = ""
    model: ModelSection = dataclasses.field(default_factory=ModelSection)
    data: DataSection = dataclasses.field(default_factory=DataSection)
    trainer: TrainerSection = dataclasses.field(default_factory=TrainerSection)
    runtime: RuntimeSection = dataclasses.field(default_factory=RuntimeSection)

    def __post_init__(self):
        model = self.model.build_config()
        if self.data.vocab_size != model.vocab_size:
            raise ValueError(
                f"data.vocab_size ({self.data.vocab_size}) differs from the "
                f"model's vocab_size ({model.vocab_size}); set data.vocab_size "
                "or model.overrides.vocab_size so that they agree"
            )
        check(
            self.data.seq_length <= model.max_position_embeddings,
            "data.seq_length",
            f"<= the model's max_position_embeddings ({model.max_position_embeddings})",
            self.data.seq_length,
        )


def load_experiment(
    path: str | os.PathLike, params_override: str | None = None, cls=PretrainExperiment
):
    """Reads an experiment yaml, applies `params_override`, validates; errors name the file.

    A file with no settings at all (empty, or only comments) is refused: taking it as every
    default would start a run nobody described."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"experiment config file not found: {path}")
    try:
        with open(path, encoding="utf-8") as f:
            values = yaml.safe_load(f)
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not a text file ({e}); expected an experiment yaml") from None
    except yaml.YAMLError as e:
        raise ValueError(f"{path}: not valid yaml ({e})") from None
    if values is None:  # nothing but comments and blank lines: not "every default"
        raise ValueError(
            f"{path}: the file holds no settings (it is empty, or only comments); expected "
            "an experiment yaml with sections such as model, data and trainer "
            "(see experiments/*.yaml)"
        )
    try:
        config = from_dict(cls, values)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    return apply_overrides(config, params_override) if params_override else config
