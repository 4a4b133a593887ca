"""Multi-head scaled dot-product attention with per-head 3-D kernels.

For each head n = 1..N with head size d:

    Q_n = X_q W^Q_n + b^Q_n,   K_n = X_k W^K_n + b^K_n,   V_n = X_v W^V_n + b^V_n
    A_n = softmax(Q_n K_nᵀ / sqrt(d) + M)         M = 0 for real keys, -1e9 for padding
    out = Σ_n (A_n V_n) W^O_n + b^O

Kernels are stored per head, as Keras' MultiHeadAttention and tf-models store
them: W^Q, W^K, W^V as [D_in, N, d] (bias [N, d]) and W^O as [N, d, D_out].
A released TF1 checkpoint stores the same numbers as 2-D [D_in, N·d] and
[N·d, D_out] matrices; converting is a reshape.

In MobileBERT the three inputs differ: queries and keys come from a 128-wide
bottleneck while values come from the 512-wide block input, so each
projection is built from the width of its own input.

Masking adds a large negative number to padded keys, so their probability is
exactly 0 in float32. (The TF1 code instead uses scores·m − 6·(1−m), which
keeps a small weight e^-6 on padding; outputs on padded inputs differ.)
"""

import math

import tensorflow as tf
import tf_keras

from mbert_lib.layers.fast.dropout import Dropout
from mbert_lib.layers.initializers import truncated_normal


def _large_negative(dtype):
    return tf.float16.min if dtype == tf.float16 else -1e9


def _heads_first(x):
    """Swaps the token and head axes: [B, T, N, d] <-> [B, N, T, d]."""
    return tf.transpose(x, [0, 2, 1, 3])


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class HeadProjection(tf_keras.layers.Layer):
    """x [B, T, D] -> x W + b, [B, T, N, d], with W: [D, N, d], b: [N, d]."""

    def __init__(self, num_heads: int, head_size: int, initializer_range: float = 0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.head_size = head_size
        self.initializer_range = initializer_range

    def build(self, input_shape):
        shape = [int(input_shape[-1]), self.num_heads, self.head_size]
        self.kernel = self.add_weight(
            "kernel", shape=shape, initializer=truncated_normal(self.initializer_range)
        )
        self.bias = self.add_weight("bias", shape=shape[1:], initializer="zeros")
        super().build(input_shape)

    def call(self, x):
        # Labels in one case, each letter once: tf2onnx reads an equation case-blind, and
        # "BTD,DNd" would become "btd,dnd" (d = D), a contraction ONNX cannot run.
        return tf.einsum("btd,dnh->btnh", x, self.kernel) + self.bias

    def get_config(self):
        return {
            **super().get_config(),
            "num_heads": self.num_heads,
            "head_size": self.head_size,
            "initializer_range": self.initializer_range,
        }


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class HeadMerge(tf_keras.layers.Layer):
    """Per-head contexts [B, T, N, d] -> Σ_n c_n W_n + b, [B, T, O]; W: [N, d, O]."""

    def __init__(self, output_size: int, initializer_range: float = 0.02, **kwargs):
        super().__init__(**kwargs)
        self.output_size = output_size
        self.initializer_range = initializer_range

    def build(self, input_shape):
        shape = [int(input_shape[-2]), int(input_shape[-1]), self.output_size]
        self.kernel = self.add_weight(
            "kernel", shape=shape, initializer=truncated_normal(self.initializer_range)
        )
        self.bias = self.add_weight("bias", shape=[self.output_size], initializer="zeros")
        super().build(input_shape)

    def call(self, x):
        return tf.einsum("btnh,nho->bto", x, self.kernel) + self.bias

    def get_config(self):
        return {
            **super().get_config(),
            "output_size": self.output_size,
            "initializer_range": self.initializer_range,
        }


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class MultiHeadAttention(tf_keras.layers.Layer):
    """Attention from queries [B, T, D_q] over keys [B, S, D_k] / values [B, S, D_v].

    Returns (output [B, T, output_size], probabilities [B, N, T, S]); the
    probabilities are post-softmax (what attention transfer compares), before
    attention dropout.
    """

    def __init__(
        self,
        num_heads: int,
        head_size: int,
        output_size: int,
        dropout_rate: float = 0.0,
        initializer_range: float = 0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.head_size = head_size
        self.output_size = output_size
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range
        self.query = HeadProjection(num_heads, head_size, initializer_range, name="query")
        self.key = HeadProjection(num_heads, head_size, initializer_range, name="key")
        self.value = HeadProjection(num_heads, head_size, initializer_range, name="value")
        self.attention_output = HeadMerge(output_size, initializer_range, name="attention_output")
        self.dropout = Dropout(dropout_rate)

    def call(self, query, key, value, attention_mask=None, training=None):
        """attention_mask: [B, S], 1 for real keys, 0 for padding (or None)."""
        # 1/sqrt(d) scales Q, [B, T, N, d], rather than the T/d times larger
        # scores Q Kᵀ; heads are moved ahead of tokens so that both products
        # are plain batched matmuls (faster to train than einsum here).
        q = self.query(query)  # [B, T, N, d]
        q = _heads_first(q * tf.cast(1.0 / math.sqrt(self.head_size), q.dtype))  # [B, N, T, d]
        k = _heads_first(self.key(key))  # [B, N, S, d]
        v = _heads_first(self.value(value))  # [B, N, S, d]
        scores = tf.matmul(q, k, transpose_b=True)  # Q Kᵀ / sqrt(d), [B, N, T, S]
        if attention_mask is not None:
            # [B, 1, 1, S] by reshape: TFLite has no builtin for a new-axis slice of a
            # tensor whose shape is only known at run time (a resizable model).
            keep = tf.reshape(
                tf.cast(attention_mask, scores.dtype), [tf.shape(attention_mask)[0], 1, 1, -1]
            )
            scores += (1.0 - keep) * _large_negative(scores.dtype)  # M
        probs = tf.nn.softmax(scores, axis=-1)  # A, [B, N, T, S]
        context = tf.matmul(self.dropout(probs, training=training), v)  # [B, N, T, d]
        return self.attention_output(_heads_first(context)), probs  # [B, T, O]

    def get_config(self):
        return {
            **super().get_config(),
            "num_heads": self.num_heads,
            "head_size": self.head_size,
            "output_size": self.output_size,
            "dropout_rate": self.dropout_rate,
            "initializer_range": self.initializer_range,
        }
