"""One feed-forward network with its residual and norm.

    FFN(h) = Norm(W_2 · act(W_1 h + b_1) + b_2 + h)          h ∈ R^w, W_1: w -> I

MobileBERT stacks F of these per block (F = 4) so that the thin block keeps
the MHA:FFN parameter ratio of BERT (paper section 3.2). Dropout before the
residual is used only by plain BERT blocks; inside a bottleneck block the
original code applies none.
"""

import tf_keras

from mbert_lib.layers.activations import get_activation
from mbert_lib.layers.fast.dense import Dense
from mbert_lib.layers.fast.dropout import Dropout
from mbert_lib.layers.initializers import truncated_normal
from mbert_lib.layers.nonorm import make_norm


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class FeedForward(tf_keras.layers.Layer):
    """h [B, T, w] -> Norm(W_2 act(W_1 h) + h), [B, T, w]."""

    def __init__(
        self,
        intermediate_size: int,
        activation: str = "relu",
        normalization_type: str = "no_norm",
        dropout_rate: float = 0.0,
        initializer_range: float = 0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.intermediate_size = intermediate_size
        self.activation = activation
        self.normalization_type = normalization_type
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range
        self.intermediate = Dense(
            intermediate_size,
            activation=get_activation(activation),
            kernel_initializer=truncated_normal(initializer_range),
            name="intermediate",
        )
        self.dropout = Dropout(dropout_rate)

    def build(self, input_shape):
        self.output_dense = Dense(
            int(input_shape[-1]),
            kernel_initializer=truncated_normal(self.initializer_range),
            name="output",
        )
        self.norm = make_norm(self.normalization_type, name="norm")
        super().build(input_shape)

    def call(self, h, training=None):
        y = self.output_dense(self.intermediate(h))  # W_2 act(W_1 h + b_1) + b_2
        return self.norm(self.dropout(y, training=training) + h)

    def get_config(self):
        return {
            **super().get_config(),
            "intermediate_size": self.intermediate_size,
            "activation": self.activation,
            "normalization_type": self.normalization_type,
            "dropout_rate": self.dropout_rate,
            "initializer_range": self.initializer_range,
        }
