"""Dropout with its mask drawn by XLA's counter-based Threefry generator.

In training, with rate p,

    dropout(x) = x ⊙ s,   s_i = 1/(1 − p) if u_i ≥ p else 0,   u_i ~ U[0, 1) i.i.d.

the same distribution as `tf_keras.layers.Dropout` (inverted dropout: the
expected output is x); at inference it is the identity. Only the random
numbers come from elsewhere: TensorFlow's CPU kernel for uniform floats
(Philox) draws the student's attention dropout, [B, N, T, T] numbers per
layer, at a large share of a distillation step; XLA's Threefry kernel draws
the boolean mask [u ≥ p] in one fused pass instead
(docs/distillation_throughput.md has the measurement). A fresh seed pair is drawn for every
call by a stateful op, so `tf_keras.utils.set_random_seed` still makes runs
reproducible. The layer has no weights: checkpoints are unchanged.
"""

import tensorflow as tf
import tf_keras

_INT32_MAX = 2**31 - 1


@tf.function(jit_compile=True)
def _keep_mask(x, seed, rate):
    """[u ≥ rate], bool, shaped like x; u ~ U[0, 1) float32 from seed [2] int32."""
    return tf.random.stateless_uniform(tf.shape(x), seed, alg="threefry") >= rate


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class Dropout(tf_keras.layers.Layer):
    """x [...] -> x ⊙ s in training (s as in the module docstring), x otherwise."""

    def __init__(self, rate: float, **kwargs):
        super().__init__(**kwargs)
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"dropout rate must be in [0, 1), got {rate}")
        self.rate = float(rate)

    def call(self, x, training=None):
        if self.rate == 0.0:
            return x
        if training is None:
            training = tf_keras.backend.learning_phase()

        def dropped():
            seed = tf.random.uniform([2], maxval=_INT32_MAX, dtype=tf.int32)
            keep = _keep_mask(x, seed, tf.constant(self.rate, tf.float32))
            return x * tf.cast(keep, x.dtype) * tf.cast(1.0 / (1.0 - self.rate), x.dtype)

        return tf.__internal__.smart_cond.smart_cond(training, dropped, lambda: x)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate}
