"""Tiny teacher/student pairs on SYNTHETIC data for the tests/test_distill_*.py files."""

from __future__ import annotations

import os

import tf_keras

import mbert_lib  # noqa: F401  (selects tf-keras before TF is imported)
from mbert_lib.checkpoints import save_model_dir
from mbert_lib.config_tree import apply_overrides
from mbert_lib.experiment.distill import DistillExperiment
from mbert_lib.models import build_pretrainer
from tests.train_fixtures import BATCH, PREDICTIONS, SEQ, VOCAB

LAYERS = 2

# Both models: vocab 64, 2 blocks, no dropout (runs reproducible step for step).
_MODEL = (
    f"overrides.vocab_size={VOCAB},overrides.num_hidden_layers={LAYERS},"
    "overrides.max_position_embeddings=32,overrides.hidden_dropout_prob=0.0,"
    "overrides.attention_probs_dropout_prob=0.0"
)
TINY = ",".join(
    [f"teacher.{kv}" for kv in _MODEL.split(",")]
    + [f"student.{kv}" for kv in _MODEL.split(",")]
    + [
        "data.source=synthetic",
        f"data.vocab_size={VOCAB}",
        f"data.seq_length={SEQ}",
        f"data.max_predictions_per_seq={PREDICTIONS}",
        f"trainer.batch_size={BATCH}",
        "trainer.eval_batch_size=16",
        "trainer.eval_steps=2",
        "distillation.layer_wise.steps=3",
        "distillation.layer_wise.learning_rate.peak=1e-2",
        "distillation.layer_wise.learning_rate.end=1e-2",
        "distillation.pretrain.steps=4",
        "distillation.pretrain.learning_rate.peak=1e-2",
        "distillation.pretrain.learning_rate.warmup_steps=1",
    ]
)


def tiny_distill_experiment(overrides: str = "") -> DistillExperiment:
    return apply_overrides(DistillExperiment(), TINY + ("," + overrides if overrides else ""))


def make_teacher_dir(
    directory, experiment: DistillExperiment | None = None, seed: int = 1, **config_changes
) -> str:
    """A randomly initialised teacher saved as a model directory (with a vocab.txt)."""
    experiment = experiment or tiny_distill_experiment()
    config = experiment.teacher.build_config().replace(**config_changes)
    tf_keras.utils.set_random_seed(seed)
    teacher = build_pretrainer(config)
    directory = os.fspath(directory)
    save_model_dir(
        teacher,
        directory,
        overwrite=True,
        extra_files={"vocab.txt": "\n".join(f"w{i}" for i in range(VOCAB)) + "\n"},
    )
    return directory
