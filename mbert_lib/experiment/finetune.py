"""A fine-tuning experiment: yaml -> frozen dataclasses (`experiments/finetune_*.yaml`).

    task:     which task, from which source, sequence length, train subsample (the label
              budget)
    model:    the pre-trained model directory to start from, head dropout
    trainer:  epochs (or a fixed number of steps), batch size, AdamW peak learning rate,
              warmup fraction, seed
    distill:  output distillation: the training examples outside the label budget, with a
              fine-tuned teacher's outputs for labels (mbert_lib.finetune.task_distill)
    prune:    magnitude pruning of the encoder's blocks during the run (tfmot's polynomial
              decay; mbert_lib.compress.pruning)
    qat:      quantization-aware training during the run (tfmot's fake-quantizers;
              mbert_lib.compress.qat)
    runtime:  tf.distribute strategy and precision (mbert_lib.experiment.RuntimeSection)

Loaded with `mbert_lib.experiment.load_experiment(path, overrides, cls=FinetuneExperiment)`;
unknown keys and wrong types are errors naming the dotted key.
"""

from __future__ import annotations

import dataclasses
import math

from mbert_lib.config import POOLINGS
from mbert_lib.config_tree import check
from mbert_lib.experiment import (
    LearningRateSection,
    LoopSection,
    OptimizerSection,
    RuntimeSection,
    check_sparsity,
)


@dataclasses.dataclass(frozen=True)
class TaskSection:
    """The labeled data: task name, source, packing, and an optional train subsample."""

    name: str = "sst2"
    source: str = "auto"  # auto | local | hub | builtin
    data_dir: str | None = None  # local: GLUE's layout (default MBERT_DATA_DIR)
    seq_length: int = 64
    max_train_examples: int | None = None  # None: all; else a random subset (data_seed)
    max_eval_examples: int | None = None  # None: the whole dev set
    data_seed: int = 0  # the subset; the same for every trainer.seed
    vocab_file: str | None = None  # None: vocab.txt beside model.init_checkpoint

    def __post_init__(self):
        check(self.seq_length >= 4, "task.seq_length", ">= 4", self.seq_length)
        for name in ("max_train_examples", "max_eval_examples"):
            value = getattr(self, name)
            check(value is None or value > 0, f"task.{name}", "> 0 or null", value)
        check(
            0 <= self.data_seed < 2**32,
            "task.data_seed",
            "in [0, 2**32 - 1] (NumPy's seeds)",
            self.data_seed,
        )


@dataclasses.dataclass(frozen=True)
class FinetuneModelSection:
    """The encoder to start from (any model directory) and the classification head."""

    init_checkpoint: str | None = None  # required to run (--init_checkpoint)
    dropout_rate: float = 0.1  # dropout on the pooled output, before the head
    # what the head reads: "first" ([CLS], the paper's) or "mean" (every real token's
    # average), written into the classifier's bert_config.json as classifier_pooling
    pooling: str = "first"
    # true: the encoder's weights stay as pre-trained and only the head learns (BERT's
    # "feature-based" use, a probe of what pre-training put into the vectors)
    freeze_encoder: bool = False

    def __post_init__(self):
        check(0 <= self.dropout_rate < 1, "model.dropout_rate", "in [0, 1)", self.dropout_rate)
        check(self.pooling in POOLINGS, "model.pooling", f"one of {POOLINGS}", self.pooling)


@dataclasses.dataclass(frozen=True)
class FinetuneTrainerSection(LoopSection):
    """AdamW with linear warmup and linear decay to 0 over all steps (BERT's fine-tuning).
    `seed` sets the head's initialization, dropout and the example order.

    By default the run lasts `epochs`, is evaluated after each and keeps the best epoch's
    model. With `train_steps` set it lasts that many steps whatever the data's size (so
    that runs on 500 or 67,349 examples make the same number of updates) and is evaluated
    once, at the end: the model reported is the last one, chosen by nothing on the dev set.
    """

    eval_batch_size: int = 128
    optimizer: OptimizerSection = dataclasses.field(
        default_factory=lambda: OptimizerSection(type="adamw")
    )
    epochs: int = 3
    train_steps: int | None = None  # None: epochs x steps per epoch, best epoch kept
    learning_rate: float = 1e-4  # peak
    warmup_fraction: float = 0.1  # of all steps
    # 0: random batches at [B, task.seq_length]; k > 0: batches sorted by length within
    # runs of k batches, each cut to its longest example (mbert_lib.finetune.data)
    length_pool: int = 0

    def __post_init__(self):
        super().__post_init__()
        check(self.epochs > 0, "trainer.epochs", "> 0", self.epochs)
        check(
            self.train_steps is None or self.train_steps > 0,
            "trainer.train_steps",
            "> 0 or null (null: epochs)",
            self.train_steps,
        )
        check(self.length_pool >= 0, "trainer.length_pool", ">= 0 (0: off)", self.length_pool)
        check(self.learning_rate > 0, "trainer.learning_rate", "> 0", self.learning_rate)
        check(
            0 <= self.warmup_fraction < 1,
            "trainer.warmup_fraction",
            "in [0, 1)",
            self.warmup_fraction,
        )

    def schedule(self, train_steps: int) -> LearningRateSection:
        """The warmup + linear decay schedule over `train_steps` steps."""
        return LearningRateSection(
            peak=self.learning_rate,
            end=0.0,
            power=1.0,
            warmup_steps=int(round(self.warmup_fraction * train_steps)),
        )


TARGETS = ("soft", "hard")


@dataclasses.dataclass(frozen=True)
class TaskDistillSection:
    """Output distillation (Hinton et al. 2015; the task stage of TinyBERT and DistilBERT).

    With `teacher_logits` set, every training example outside the label budget
    (task.max_train_examples) joins the training set without its label: it carries the
    fine-tuned teacher's output instead, softened by `temperature` ("soft", dark knowledge)
    or as the teacher's argmax ("hard", pseudo-labels). teacher_logits: a .npy of the
    teacher's logits [n, C] on every training example of the task in file order, with a
    sidecar .json naming the task and tokenizer (`mbert_lib.finetune.task_distill`)."""

    teacher_logits: str | None = None  # None: off
    targets: str = "soft"  # soft | hard
    temperature: float = 1.0  # τ > 0, for soft targets

    def __post_init__(self):
        check(self.targets in TARGETS, "distill.targets", f"one of {TARGETS}", self.targets)
        check(
            isinstance(self.temperature, int | float)
            and math.isfinite(self.temperature)
            and self.temperature > 0,
            "distill.temperature",
            "> 0 (τ softens the teacher's distribution; τ = 1 leaves it as it is)",
            self.temperature,
        )


@dataclasses.dataclass(frozen=True)
class PruneSection:
    """Magnitude pruning while fine-tuning: the sparsity of the blocks' kernels rises along
    tfmot's polynomial decay from 0 at `begin_fraction` of the run's steps to `sparsity`
    at `end_fraction`, the masks recomputed every `frequency` steps; the steps after
    `end_fraction` recover at the final sparsity. `sparsity` 0 leaves the model dense.
    (`mbert_lib.compress.pruning.Schedule.over` turns it into steps.)"""

    sparsity: float = 0.0
    begin_fraction: float = 0.1
    end_fraction: float = 0.7
    frequency: int = 50

    def __post_init__(self):
        check_sparsity(self.sparsity, "prune.sparsity")
        check(
            0 <= self.begin_fraction < self.end_fraction <= 1,
            "prune.begin_fraction and prune.end_fraction",
            "0 <= begin_fraction < end_fraction <= 1",
            (self.begin_fraction, self.end_fraction),
        )
        check(self.frequency >= 1, "prune.frequency", ">= 1", self.frequency)


@dataclasses.dataclass(frozen=True)
class QatSection:
    """Quantization-aware fine-tuning (Q8BERT's recipe): the blocks' kernels and outputs
    and every NoNorm output pass through tfmot's 8-bit fake-quantizers from the first
    step; the run leaves its ranges in model_dir/qat.ckpt for the int8 export."""

    enabled: bool = False

    def __post_init__(self):
        check(isinstance(self.enabled, bool), "qat.enabled", "true or false", self.enabled)


@dataclasses.dataclass(frozen=True)
class FinetuneExperiment:
    """A fine-tuning run: `python -m mbert_lib finetune`."""

    description: str = ""
    task: TaskSection = dataclasses.field(default_factory=TaskSection)
    model: FinetuneModelSection = dataclasses.field(default_factory=FinetuneModelSection)
    trainer: FinetuneTrainerSection = dataclasses.field(default_factory=FinetuneTrainerSection)
    distill: TaskDistillSection = dataclasses.field(default_factory=TaskDistillSection)
    prune: PruneSection = dataclasses.field(default_factory=PruneSection)
    qat: QatSection = dataclasses.field(default_factory=QatSection)
    runtime: RuntimeSection = dataclasses.field(default_factory=RuntimeSection)

    def __post_init__(self):
        check(
            not self.prune.sparsity or self.trainer.train_steps is not None,
            "trainer.train_steps",
            "set when prune.sparsity > 0 (a pruned model is the last one, at its final "
            "sparsity, not the best epoch's)",
            self.trainer.train_steps,
        )
        check(
            not (self.qat.enabled and self.prune.sparsity),
            "qat.enabled",
            "false when prune.sparsity > 0 (tfmot's pruning and QAT wrappers are not nested "
            "on one layer here)",
            self.qat.enabled,
        )
