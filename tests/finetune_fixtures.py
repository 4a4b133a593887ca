"""A tiny pre-trained model directory and tiny tasks in GLUE's layout, for tests/test_finetune_*.py.

The "pre-trained" model is a randomly initialized 2-layer tiny student
(no dropout, so runs are reproducible step for step) saved as a model
directory with a 22-token vocabulary. The SST-2 fixture is separable: the
label is 1 exactly when the sentence holds a positive adjective.
"""

from __future__ import annotations

import os

import numpy as np

import mbert_lib  # noqa: F401  (selects tf-keras before TF is imported)
from mbert_lib import get_preset
from mbert_lib.checkpoints import save_model_dir
from mbert_lib.config_tree import apply_overrides
from mbert_lib.data.tokenizer import SPECIAL_TOKENS, WordPieceTokenizer, save_tokenizer
from mbert_lib.experiment.finetune import FinetuneExperiment
from mbert_lib.models import build_pretrainer

POSITIVE, NEGATIVE = ["good", "great", "fine", "nice"], ["bad", "awful", "poor", "sad"]
WORDS = POSITIVE + NEGATIVE + "the a movie film plot was is very".split()
VOCAB = list(SPECIAL_TOKENS) + WORDS
CONFIG = get_preset("tiny_student").replace(
    vocab_size=len(VOCAB),
    num_hidden_layers=2,
    max_position_embeddings=32,
    attention_probs_dropout_prob=0.0,
)


def tokenizer() -> WordPieceTokenizer:
    return WordPieceTokenizer(VOCAB)


def save_pretrained(directory, config=CONFIG) -> str:
    """A random-weight pretrainer of `config` saved as a model directory with the vocab."""
    save_model_dir(
        build_pretrainer(config), directory, save_tokenizer=lambda d: save_tokenizer(tokenizer(), d)
    )
    return str(directory)


def sentiment_rows(n: int, seed: int) -> list[tuple[str, int]]:
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        label = int(rng.integers(2))
        adjective = rng.choice(POSITIVE if label else NEGATIVE)
        very = "very " if rng.integers(2) else ""
        rows.append(
            (
                f"the {rng.choice(['movie', 'film', 'plot'])} "
                f"{rng.choice(['was', 'is'])} {very}{adjective}",
                label,
            )
        )
    return rows


def write_sst2(data_dir, n_train: int = 256, n_dev: int = 64) -> str:
    """<data_dir>/glue/SST-2/{train,dev}.tsv of the separable sentiment task."""
    sst2 = os.path.join(data_dir, "glue", "SST-2")
    os.makedirs(sst2, exist_ok=True)
    for split, n, seed in (("train", n_train, 1), ("dev", n_dev, 2)):
        with open(os.path.join(sst2, f"{split}.tsv"), "w", encoding="utf-8") as f:
            f.write(
                "sentence\tlabel\n" + "".join(f"{s}\t{y}\n" for s, y in sentiment_rows(n, seed))
            )
    return str(data_dir)


def experiment(init_checkpoint, data_dir, overrides: str = "") -> FinetuneExperiment:
    """SST-2 fixture fine-tuning: seq 12, batch 16, 2 epochs of 16 steps, lr 1e-2."""
    base = (
        f"task.data_dir={data_dir},task.seq_length=12,"
        f"model.init_checkpoint={init_checkpoint},model.dropout_rate=0.0,"
        "trainer.epochs=2,trainer.batch_size=16,trainer.learning_rate=1e-2"
    )
    return apply_overrides(FinetuneExperiment(), base + ("," + overrides if overrides else ""))
