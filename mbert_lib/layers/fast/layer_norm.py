"""LayerNorm over the last axis, its formula compiled by XLA.

    LayerNorm(h) = γ ⊙ (h − μ(h)) / sqrt(σ²(h) + ε) + β       μ, σ² over the C channels

This is `tf_keras.layers.LayerNormalization(axis=-1)`: same weights (γ, β),
same checkpoint names, same formula (`tf.nn.moments` then
`tf.nn.batch_normalization`, the path Keras takes for ε = 1e-12, below the
fused kernel's 1e-5 floor), same float32 computation for float16/bfloat16
inputs. Only the execution differs: TensorFlow runs the formula as five
passes over [B, T, C], XLA fuses it into one kernel (the frozen teacher runs
16 LayerNorms per forward pass; docs/distillation_throughput.md has the
measurement).

Each layer compiles its own copy of the formula. One function shared by
every LayerNorm, called with each layer's (γ, β), is wrong after TFLite
conversion: the converter freezes the weights into constants and runs every
call of the shared function with one layer's constants (a three-layer
check: outputs off by ~15; the smoke pipeline's fine-tuned teacher: logits
off by 4e-4, hidden states by 0.2). `tests/test_export_tflite.py` exports a
teacher whose LayerNorms all differ and compares it with Keras.

XLA compiles each LayerNorm's forward and backward for every new shape: that pays back
over a training run, not over CI's runs of a few steps (`results/ci_test_time.json`).
So in fast mode (`MBERT_FAST=1`) LayerNorms are built running the same formula unfused,
by TensorFlow's kernels; `xla_layer_norm(True)` forces XLA, as the tests of this layer
do.
"""

import contextlib
import functools

import tensorflow as tf
import tf_keras

from mbert_lib.runtime import fast_mode

_FORCED: list[bool | None] = [None]


def xla_enabled() -> bool:
    """Whether a LayerNorm built now runs its formula by XLA: forced by
    `xla_layer_norm`, else everywhere but fast mode."""
    return not fast_mode() if _FORCED[0] is None else _FORCED[0]


@contextlib.contextmanager
def xla_layer_norm(enabled: bool):
    """LayerNorms built inside the block run by XLA (True) or by TensorFlow's kernels."""
    previous, _FORCED[0] = _FORCED[0], bool(enabled)
    try:
        yield
    finally:
        _FORCED[0] = previous


def _layer_norm(x, gamma, beta, epsilon):
    mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)  # μ, σ² [..., 1]
    return tf.nn.batch_normalization(x, mean, variance, beta, gamma, epsilon)


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class LayerNorm(tf_keras.layers.LayerNormalization):
    """x [..., C] -> LayerNorm(x) [..., C]; a LayerNormalization(axis=-1) run by XLA."""

    def __init__(self, epsilon: float = 1e-3, **kwargs):
        # Always the last axis; a saved config holds Keras' resolved axis, e.g. [2].
        kwargs.pop("axis", None)
        super().__init__(axis=-1, epsilon=epsilon, **kwargs)
        self._xla_formula = None

    def build(self, input_shape):
        super().build(input_shape)
        if not xla_enabled():
            return
        # Traced once, for float32 inputs of this rank and any size (XLA still compiles
        # each shape it meets). TensorFlow counts traces per code object and warns about
        # "retracing" after five: a lambda or closure would share one code object across
        # every LayerNorm; a partial has none, so each layer is counted on its own. Known
        # ranks and widths keep the gradients' shapes known.
        rank, width = len(input_shape), int(input_shape[-1])
        self._xla_formula = tf.function(
            functools.partial(_layer_norm),
            jit_compile=True,
            input_signature=[
                tf.TensorSpec([None] * rank, tf.float32),
                tf.TensorSpec([width], tf.float32),
                tf.TensorSpec([width], tf.float32),
                tf.TensorSpec([], tf.float32),
            ],
        )

    def call(self, inputs):
        dtype = inputs.dtype
        x = tf.cast(inputs, tf.float32) if dtype in (tf.float16, tf.bfloat16) else inputs
        signature = self._xla_formula.input_signature[0] if self._xla_formula else None
        fits = signature is not None and x.shape.rank == signature.shape.rank
        formula = self._xla_formula if fits and x.dtype == tf.float32 else _layer_norm
        y = formula(
            x,
            tf.cast(self.gamma, x.dtype),
            tf.cast(self.beta, x.dtype),
            tf.constant(self.epsilon, x.dtype),
        )
        y.set_shape(x.shape)  # the signature's unknown sizes, made known
        return tf.cast(y, dtype)


@contextlib.contextmanager
def unfused_layer_norms(model):
    """Inside the block every LayerNorm of `model` runs its formula by TensorFlow's
    kernels: for a graph traced for another runtime (tf2onnx reads no XLA-compiled
    function; it would keep it as a call ONNX has no op for)."""
    norms = [m for m in model.submodules if isinstance(m, LayerNorm) and m._xla_formula]
    saved = [m._xla_formula for m in norms]
    for norm in norms:
        norm._xla_formula = None
    try:
        yield
    finally:
        for norm, formula in zip(norms, saved):
            norm._xla_formula = formula
