"""Training throughput of one pre-training (MLM + NSP) step: with and without XLA.

Both variants train their own copy of the same model on the same SYNTHETIC
batches (seq T, batch B, P predictions) and are timed round-robin, so
background load hits both alike. Reported per variant: median step time,
steps/s and tokens/s (B·T tokens per step).
"""

from __future__ import annotations

import tensorflow as tf
import tf_keras

from mbert_lib.bench.timing import interleaved_timings
from mbert_lib.config import MobileBertConfig
from mbert_lib.models import build_pretrainer
from mbert_lib.optim import Lamb, WarmupPolynomialDecay
from mbert_lib.train.objectives import PretrainingObjective
from mbert_lib.train.step import make_train_step
from mbert_lib.train.strategy import precision_policy
from mbert_lib.train.synthetic import synthetic_pretraining_dataset


def _step_fn(config, iterator_factory, jit_compile: bool):
    model = build_pretrainer(config)
    optimizer = Lamb(WarmupPolynomialDecay(1e-3, 10_000, 100), global_clipnorm=1.0)
    optimizer.build(model.trainable_variables)
    step = make_train_step(
        tf.distribute.get_strategy(),
        PretrainingObjective(model),
        optimizer,
        model.trainable_variables,
        jit_compile=jit_compile,
    )
    iterator = iterator_factory()
    return lambda: float(step(iterator)["loss"])


def pretrain_step_throughput(
    config: MobileBertConfig,
    seq_length: int = 128,
    batch_size: int = 32,
    max_predictions_per_seq: int = 20,
    repeats: int = 50,
    warmup: int = 5,
    mixed_precision: str = "float32",
) -> list[dict]:
    """One record per variant (jit_compile False / True), with medians over `repeats` steps."""
    tf_keras.utils.set_random_seed(0)

    def iterator_factory():
        return iter(
            synthetic_pretraining_dataset(
                num_examples=batch_size * 64,
                batch_size=batch_size,
                seq_length=seq_length,
                max_predictions_per_seq=max_predictions_per_seq,
                vocab_size=config.vocab_size,
            ).repeat()
        )

    with precision_policy(mixed_precision):
        fns = {
            f"jit_compile={jit}": _step_fn(config, iterator_factory, jit) for jit in (False, True)
        }
        timings = interleaved_timings(fns, repeats=repeats, warmup=warmup)
    tokens = batch_size * seq_length
    return [
        {
            "variant": name,
            "jit_compile": name.endswith("True"),
            "seq_length": seq_length,
            "batch_size": batch_size,
            "mixed_precision": mixed_precision,
            "median_step_ms": t.median_ms,
            "min_step_ms": t.min_ms,
            "max_step_ms": t.max_ms,
            "repeats": t.repeats,
            "steps_per_second": 1e3 / t.median_ms,
            "tokens_per_second": tokens * 1e3 / t.median_ms,
        }
        for name, t in timings.items()
    ]
