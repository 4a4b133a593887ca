"""Output heads: masked LM, next-sentence prediction and classification.

Masked LM (MLM), for a hidden state x ∈ R^H at a masked position:

    z = LayerNorm(act(W_t x + b_t))          a real LayerNorm, also in the student
    logits = z · [E | W_extra]ᵀ + b          E: [V, E] token table (shared),
                                             W_extra: [V, H − E] ("extra_output_weights")

The token table is only E = 128 wide while z is H = 512 wide, so the output
layer pads the shared table with H − E extra learned columns per token.

Next sentence: logits = W_nsp · pooled + b, 2 classes (0 = is next).
Classification: logits = W_c · dropout(pooled) + b. `pooled` is the encoder's
pooled output: the raw [CLS] vector, or tanh(W_p [CLS] + b_p) when the
config's `classifier_activation` is true (the pooler lives in the encoder,
as `bert/pooler` does in the released checkpoints, because NSP and the
classifier share it).
"""

import tensorflow as tf
import tf_keras

from mbert_lib.layers.activations import get_activation
from mbert_lib.layers.fast.dense import Dense
from mbert_lib.layers.fast.dropout import Dropout
from mbert_lib.layers.fast.layer_norm import LayerNorm
from mbert_lib.layers.initializers import truncated_normal
from mbert_lib.layers.nonorm import LAYER_NORM_EPSILON


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class MaskedLMHead(tf_keras.layers.Layer):
    """Sequence [B, T, H], table [V, E], positions [B, P] -> logits [B, P, V]."""

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        embedding_size: int,
        activation: str = "relu",
        initializer_range: float = 0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if embedding_size > hidden_size:
            raise ValueError(
                f"embedding_size ({embedding_size}) must be <= hidden_size ({hidden_size})"
            )
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.embedding_size = embedding_size
        self.activation = activation
        self.initializer_range = initializer_range
        self.transform = Dense(
            hidden_size,
            activation=get_activation(activation),
            kernel_initializer=truncated_normal(initializer_range),
            name="transform",
        )
        self.transform_norm = LayerNorm(epsilon=LAYER_NORM_EPSILON, name="transform_norm")

    def build(self, input_shape):
        extra = self.hidden_size - self.embedding_size
        self.extra_output_weights = (
            self.add_weight(
                "extra_output_weights",
                shape=[self.vocab_size, extra],
                initializer=truncated_normal(self.initializer_range),
            )
            if extra
            else None
        )
        self.output_bias = self.add_weight(
            "output_bias", shape=[self.vocab_size], initializer="zeros"
        )
        super().build(input_shape)

    def call(self, sequence_output, embedding_table, masked_positions=None):
        x = sequence_output  # [B, T, H]
        if masked_positions is not None:
            x = tf.gather(x, masked_positions, batch_dims=1)  # [B, P, H]
        z = self.transform_norm(self.transform(x))  # [B, P, H]
        table = tf.cast(embedding_table, z.dtype)  # [V, E]
        if self.extra_output_weights is not None:  # [V, H]: [E | W_extra]
            table = tf.concat([table, tf.cast(self.extra_output_weights, z.dtype)], axis=1)
        # One product with the [V, H] table: the [B, P, V] logits are written once.
        logits = tf.einsum("BPH,VH->BPV", z, table)
        return tf.nn.bias_add(logits, tf.cast(self.output_bias, z.dtype))  # [B, P, V]

    def get_config(self):
        return {
            **super().get_config(),
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "embedding_size": self.embedding_size,
            "activation": self.activation,
            "initializer_range": self.initializer_range,
        }


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class NextSentenceHead(tf_keras.layers.Layer):
    """Pooled [B, H] -> logits [B, 2] (class 0: segment B follows segment A)."""

    def __init__(self, initializer_range: float = 0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range
        self.dense = Dense(
            2, kernel_initializer=truncated_normal(initializer_range), name="seq_relationship"
        )

    def call(self, pooled_output):
        return self.dense(pooled_output)

    def get_config(self):
        return {**super().get_config(), "initializer_range": self.initializer_range}


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class ClassificationHead(tf_keras.layers.Layer):
    """Pooled [B, H] -> dropout -> logits [B, num_classes]."""

    def __init__(
        self, num_classes: int, dropout_rate: float = 0.1, initializer_range: float = 0.02, **kwargs
    ):
        super().__init__(**kwargs)
        if num_classes < 1:
            raise ValueError(f"num_classes must be >= 1, got {num_classes}")
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range
        self.dropout = Dropout(dropout_rate)
        self.dense = Dense(
            num_classes, kernel_initializer=truncated_normal(initializer_range), name="logits"
        )

    def call(self, pooled_output, training=None):
        return self.dense(self.dropout(pooled_output, training=training))

    def get_config(self):
        return {
            **super().get_config(),
            "num_classes": self.num_classes,
            "dropout_rate": self.dropout_rate,
            "initializer_range": self.initializer_range,
        }
