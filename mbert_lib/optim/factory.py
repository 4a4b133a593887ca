"""An optimizer from an experiment's `trainer.optimizer` and `trainer.learning_rate` sections."""

from __future__ import annotations

from mbert_lib.optim.lamb import Lamb
from mbert_lib.optim.schedules import WarmupPolynomialDecay


def create_optimizer(optimizer, learning_rate, train_steps: int) -> Lamb:
    """LAMB, or "adamw": the same update without the trust ratio (BERT's AdamWeightDecay).

    `optimizer` and `learning_rate` are `mbert_lib.experiment.OptimizerSection`
    and `LearningRateSection`; the decay runs over `learning_rate.decay_steps`,
    or over `train_steps` when that is None.
    """
    schedule = WarmupPolynomialDecay(
        peak_learning_rate=learning_rate.peak,
        decay_steps=learning_rate.decay_steps or train_steps,
        warmup_steps=learning_rate.warmup_steps,
        end_learning_rate=learning_rate.end,
        power=learning_rate.power,
    )
    if optimizer.type not in ("lamb", "adamw"):
        raise ValueError(
            f"trainer.optimizer.type must be 'lamb' or 'adamw', got {optimizer.type!r}"
        )
    return Lamb(
        learning_rate=schedule,
        weight_decay_rate=optimizer.weight_decay_rate,
        beta_1=optimizer.beta_1,
        beta_2=optimizer.beta_2,
        epsilon=optimizer.epsilon,
        exclude_from_weight_decay=optimizer.exclude_from_weight_decay,
        exclude_from_layer_adaptation=None if optimizer.type == "lamb" else (".*",),
        bias_correction=optimizer.bias_correction,
        global_clipnorm=optimizer.global_clipnorm,
        name="Lamb" if optimizer.type == "lamb" else "AdamW",
    )
