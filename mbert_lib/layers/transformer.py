"""The MobileBERT / IB-BERT block: bottlenecks around attention and stacked FFNs.

With x ∈ R^H the block input (H = 512 inter-block width) and h the
intra-block width (128 for MobileBERT, 1024 for the IB-BERT teacher):

    a  = Norm(W_in x + b_in)                    input bottleneck, R^H -> R^h
    s  = Norm(W_s x + b_s)                      shared Q/K bottleneck (key_query_shared_bottleneck)
    Q, K from s (MobileBERT) | a (use_bottleneck_attention) | x (IB-BERT)
    V from x (MobileBERT, IB-BERT) | a (use_bottleneck_attention)
    u  = Norm(MHA(Q, K, V) + a)                 attention output, R^h
    u  = Norm(W_2 act(W_1 u) + u)  F times      stacked FFNs (paper section 3.2)
    y  = Norm(dropout(W_out u + b_out) + x)     output bottleneck, R^h -> R^H

(paper Figure 1 and section 3; the order follows the released code). With
`use_bottleneck` false the block is a post-LN BERT layer: Q, K, V, residual
and FFN all at width H, dropout before each residual.

The teacher shape (Q, K, V from the 512-wide x, projected into the 1024-wide
intra-block space) is just `key_query_shared_bottleneck=False` with h > H;
each projection is built from its own input width, so it runs as is.
"""

import tensorflow as tf
import tf_keras

from mbert_lib.layers.attention import MultiHeadAttention
from mbert_lib.layers.fast.dense import Dense
from mbert_lib.layers.fast.dropout import Dropout
from mbert_lib.layers.ffn import FeedForward
from mbert_lib.layers.initializers import truncated_normal
from mbert_lib.layers.nonorm import make_norm

# The block's constructor arguments: MobileBertConfig fields of the same names.
BLOCK_FIELDS = (
    "hidden_size",
    "intra_bottleneck_size",
    "intermediate_size",
    "num_attention_heads",
    "hidden_act",
    "normalization_type",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "use_bottleneck",
    "use_bottleneck_attention",
    "key_query_shared_bottleneck",
    "num_feedforward_networks",
    "initializer_range",
)


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class MobileBertTransformer(tf_keras.layers.Layer):
    """x [B, T, H], mask [B, T] -> (y [B, T, H], attention probabilities [B, N, T, T]).

    With query_positions [B, P]: (y [B, P, H], probabilities [B, N, P, T]).
    """

    def __init__(  # noqa: PLR0913 (a Keras layer's hyperparameters are its arguments)
        self,
        hidden_size: int = 512,
        intra_bottleneck_size: int = 128,
        intermediate_size: int = 512,
        num_attention_heads: int = 4,
        hidden_act: str = "relu",
        normalization_type: str = "no_norm",
        hidden_dropout_prob: float = 0.0,
        attention_probs_dropout_prob: float = 0.1,
        use_bottleneck: bool = True,
        use_bottleneck_attention: bool = False,
        key_query_shared_bottleneck: bool = True,
        num_feedforward_networks: int = 4,
        initializer_range: float = 0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.intra_bottleneck_size = intra_bottleneck_size
        self.intermediate_size = intermediate_size
        self.num_attention_heads = num_attention_heads
        self.hidden_act = hidden_act
        self.normalization_type = normalization_type
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.use_bottleneck = use_bottleneck
        self.use_bottleneck_attention = use_bottleneck_attention
        self.key_query_shared_bottleneck = key_query_shared_bottleneck
        self.num_feedforward_networks = num_feedforward_networks
        self.initializer_range = initializer_range

        width = intra_bottleneck_size if use_bottleneck else hidden_size  # h, or H for BERT
        if width % num_attention_heads:
            raise ValueError(
                f"attention width {width} is not divisible by "
                f"num_attention_heads = {num_attention_heads}"
            )

        def dense(units, name):
            return Dense(units, kernel_initializer=truncated_normal(initializer_range), name=name)

        if use_bottleneck:
            self.bottleneck_input = dense(width, "bottleneck_input")
            self.bottleneck_input_norm = make_norm(normalization_type, "bottleneck_input_norm")
        if key_query_shared_bottleneck:
            self.bottleneck_attention = dense(width, "bottleneck_attention")
            self.bottleneck_attention_norm = make_norm(
                normalization_type, "bottleneck_attention_norm"
            )
        self.attention = MultiHeadAttention(
            num_attention_heads,
            width // num_attention_heads,
            output_size=width,
            dropout_rate=attention_probs_dropout_prob,
            initializer_range=initializer_range,
            name="attention",
        )
        self.attention_dropout = Dropout(0.0 if use_bottleneck else hidden_dropout_prob)
        self.attention_norm = make_norm(normalization_type, "attention_norm")
        self.ffns = [
            FeedForward(
                intermediate_size,
                hidden_act,
                normalization_type,
                # Only the last FFN of a plain BERT layer has dropout.
                dropout_rate=hidden_dropout_prob
                if (not use_bottleneck and k == num_feedforward_networks - 1)
                else 0.0,
                initializer_range=initializer_range,
                name=f"ffn_{k}",
            )
            for k in range(num_feedforward_networks)
        ]
        if use_bottleneck:
            self.bottleneck_output = dense(hidden_size, "bottleneck_output")
            self.bottleneck_output_dropout = Dropout(hidden_dropout_prob)
            self.bottleneck_output_norm = make_norm(normalization_type, "bottleneck_output_norm")

    def call(self, x, attention_mask=None, training=None, query_positions=None):
        """query_positions [B, P] (optional): compute the block's output only at
        these positions, y [B, P, H] and probabilities [B, N, P, T]. Keys and
        values still cover all T tokens, so each output row equals the full
        block's row at that position; a model's last block needs no more when
        its heads read only some positions."""

        def at_queries(t):  # [B, T, D] -> [B, P, D]
            return t if query_positions is None else tf.gather(t, query_positions, batch_dims=1)

        def bottleneck(t):  # [B, *, H] -> [B, *, h] (BERT: t)
            if not self.use_bottleneck:
                return t
            return self.bottleneck_input_norm(self.bottleneck_input(t))

        x_q = at_queries(x)  # [B, P, H]
        if self.use_bottleneck_attention:
            a_all = bottleneck(x)  # [B, T, h]
            a = at_queries(a_all)  # [B, P, h]
            q, k, v = a, a_all, a_all
        else:
            a = bottleneck(x_q)  # [B, P, h]
            if self.key_query_shared_bottleneck:
                k = self.bottleneck_attention_norm(self.bottleneck_attention(x))  # [B, T, h]
                q, v = at_queries(k), x  # [B, P, h], [B, T, H]
            else:
                q, k, v = x_q, x, x
        attended, probs = self.attention(q, k, v, attention_mask, training=training)
        u = self.attention_norm(
            self.attention_dropout(attended, training=training) + a
        )  # [B, P, h]
        for ffn in self.ffns:
            u = ffn(u, training=training)  # [B, P, h]
        if not self.use_bottleneck:
            return u, probs
        y = self.bottleneck_output_dropout(self.bottleneck_output(u), training=training)
        return self.bottleneck_output_norm(y + x_q), probs  # [B, P, H]

    def get_config(self):
        return {**super().get_config(), **{f: getattr(self, f) for f in BLOCK_FIELDS}}


def block_kwargs(config) -> dict:
    """MobileBertTransformer keyword arguments for a MobileBertConfig (same names)."""
    return {f: getattr(config, f) for f in BLOCK_FIELDS}
