"""Learning-rate schedule: linear warmup, then polynomial decay (BERT, MobileBERT).

With peak rate η₀, end rate η_end, W warmup steps, S decay steps and power p,
the rate used by update number `step` (0-based, the optimizer's `iterations`
before the update) is

    η(step) = η₀ · step / W                                           step < W
    η(step) = (η₀ − η_end) · (1 − min(step, S) / S)^p + η_end          otherwise

The decay is counted from step 0 over all S steps and the warmup overrides
it, exactly as the original BERT and MobileBERT (TF1) `create_optimizer`
do; so at step W the rate drops from η₀ to the decayed value, by W / S
(2% for the paper's 10k warmup over 500k steps). The paper's pre-training
distillation uses η₀ = 1.5e-3, η_end = 1.5e-7, W = 10k, S = 500k, p = 1.
Update 0 has rate 0 when W > 0, as in the original code.
"""

from __future__ import annotations

import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class WarmupPolynomialDecay(tf_keras.optimizers.schedules.LearningRateSchedule):
    """η(step): linear warmup over `warmup_steps`, polynomial decay over `decay_steps`."""

    def __init__(
        self,
        peak_learning_rate: float,
        decay_steps: int,
        warmup_steps: int = 0,
        end_learning_rate: float = 0.0,
        power: float = 1.0,
        name: str | None = None,
    ):
        super().__init__()
        if not peak_learning_rate > 0:
            raise ValueError(f"peak_learning_rate must be > 0, got {peak_learning_rate}")
        if not 0 <= end_learning_rate <= peak_learning_rate:
            raise ValueError(
                f"end_learning_rate must be in [0, peak_learning_rate = "
                f"{peak_learning_rate}], got {end_learning_rate}"
            )
        if decay_steps < 1:
            raise ValueError(f"decay_steps must be >= 1, got {decay_steps}")
        if not 0 <= warmup_steps <= decay_steps:
            raise ValueError(
                f"warmup_steps must be in [0, decay_steps = {decay_steps}], got {warmup_steps}"
            )
        if not power > 0:
            raise ValueError(f"power must be > 0, got {power}")
        self.peak_learning_rate = float(peak_learning_rate)
        self.decay_steps = int(decay_steps)
        self.warmup_steps = int(warmup_steps)
        self.end_learning_rate = float(end_learning_rate)
        self.power = float(power)
        self.name = name

    def __call__(self, step):
        with tf.name_scope(self.name or "warmup_polynomial_decay"):
            step = tf.cast(step, tf.float32)
            peak, end = self.peak_learning_rate, self.end_learning_rate
            done = tf.minimum(step, float(self.decay_steps)) / float(self.decay_steps)
            decayed = (peak - end) * (1.0 - done) ** self.power + end
            if self.warmup_steps == 0:
                return decayed
            warmup = peak * step / float(self.warmup_steps)
            return tf.where(step < float(self.warmup_steps), warmup, decayed)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "decay_steps": self.decay_steps,
            "warmup_steps": self.warmup_steps,
            "end_learning_rate": self.end_learning_rate,
            "power": self.power,
            "name": self.name,
        }
