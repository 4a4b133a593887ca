"""Tiny pre-training setups shared by the tests/test_train_*.py files."""

from __future__ import annotations

import mbert_lib  # noqa: F401  (selects tf-keras before TF is imported)
from mbert_lib.experiment import PretrainExperiment, apply_overrides
from mbert_lib.train.synthetic import synthetic_pretraining_dataset

VOCAB, SEQ, PREDICTIONS, BATCH = 64, 16, 3, 8

# A 1-layer tiny teacher without dropout, so runs are reproducible step for step.
TINY = (
    f"data.source=synthetic,data.vocab_size={VOCAB},data.seq_length={SEQ},"
    f"data.max_predictions_per_seq={PREDICTIONS},model.overrides.vocab_size={VOCAB},"
    "model.overrides.num_hidden_layers=1,model.overrides.max_position_embeddings=32,"
    "model.overrides.hidden_dropout_prob=0.0,model.overrides.attention_probs_dropout_prob=0.0,"
    f"trainer.batch_size={BATCH},trainer.eval_batch_size=16,trainer.eval_steps=2,"
    "trainer.learning_rate.peak=1e-2,trainer.learning_rate.warmup_steps=2"
)


def tiny_experiment(overrides: str = "") -> PretrainExperiment:
    return apply_overrides(PretrainExperiment(), TINY + ("," + overrides if overrides else ""))


def tiny_config():
    return tiny_experiment().model.build_config()


def tiny_batches(num_examples: int = 64, batch_size: int = BATCH, seed: int = 0):
    return synthetic_pretraining_dataset(
        num_examples=num_examples,
        batch_size=batch_size,
        seq_length=SEQ,
        max_predictions_per_seq=PREDICTIONS,
        vocab_size=VOCAB,
        seed=seed,
    )
