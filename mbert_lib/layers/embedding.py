"""MobileBERT's embedding: a thin token table widened by a trigram convolution.

With e_t ∈ R^E the table row of token t (E = 128 in MobileBERT), the trigram
input is the concatenation of a token's right neighbour, itself and its left
neighbour (zeros past either end of the sequence):

    x_t = [e_{t+1} ; e_t ; e_{t-1}] ∈ R^{3E}          (paper section 3.4, embedding factorization)
    emb_t = Norm(W_p x_t + b_p + P_t + S_{s_t})  ∈ R^H,     then dropout

which is a width-3 1-D convolution over the sequence, computed here as shift
and concatenate. P is the position table, S the token-type table.
Without `trigram_input`, x_t = e_t and W_p exists only when E != H (as in the
original code), so a BERT config gives the plain BERT embedding.
"""

import tensorflow as tf
import tf_keras

from mbert_lib.layers.fast.dense import Dense
from mbert_lib.layers.fast.dropout import Dropout
from mbert_lib.layers.initializers import truncated_normal
from mbert_lib.layers.nonorm import make_norm


def trigram_concat(x):
    """[e_{t+1}; e_t; e_{t-1}] along channels. x: [B, T, E] -> [B, T, 3E]."""
    # tf.slice, not x[:, 1:]: the gradient of Slice is a Pad, far cheaper here
    # than StridedSliceGrad (a few % of a distillation step).
    x = tf.convert_to_tensor(x)
    shorter = (x.shape[1] if x.shape[1] is not None else tf.shape(x)[1]) - 1  # T - 1
    next_tokens = tf.pad(
        tf.slice(x, [0, 1, 0], [-1, shorter, -1]), [[0, 0], [0, 1], [0, 0]]
    )  # e_{t+1}, 0 at t = T-1
    prev_tokens = tf.pad(
        tf.slice(x, [0, 0, 0], [-1, shorter, -1]), [[0, 0], [1, 0], [0, 0]]
    )  # e_{t-1}, 0 at t = 0
    out = tf.concat([next_tokens, x, prev_tokens], axis=-1)
    out.set_shape(x.shape[:-1].concatenate([None if x.shape[-1] is None else 3 * x.shape[-1]]))
    return out


def check_seq_length(input_word_ids, max_position_embeddings: int):
    """Returns `input_word_ids`; raises if T exceeds the position table.

    Statically (ValueError) when T is known; otherwise the returned ids depend
    on a run-time assertion, so use them: the position lookup must not run first.
    """
    static_length = input_word_ids.shape[1]
    message = (
        f"input_word_ids has {{}} tokens per sequence, more than "
        f"max_position_embeddings = {max_position_embeddings}; truncate the input"
    )
    if static_length is not None:
        if static_length > max_position_embeddings:
            raise ValueError(message.format(static_length))
        return input_word_ids
    check = tf.debugging.assert_less_equal(
        tf.shape(input_word_ids)[1],
        max_position_embeddings,
        message=message.format("too many"),
    )
    with tf.control_dependencies([check]):
        return tf.identity(input_word_ids)


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class MobileBertEmbedding(tf_keras.layers.Layer):
    """Token ids [B, T] and type ids [B, T] -> embeddings [B, T, H].

    `embedding_table` ([V, E]) is exposed for the MLM head, which shares it.
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        hidden_size: int,
        max_position_embeddings: int = 512,
        type_vocab_size: int = 2,
        trigram_input: bool = True,
        normalization_type: str = "no_norm",
        dropout_rate: float = 0.0,
        initializer_range: float = 0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.embedding_size = embedding_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.trigram_input = trigram_input
        self.normalization_type = normalization_type
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range

        std = initializer_range
        self.word_embeddings = tf_keras.layers.Embedding(
            vocab_size,
            embedding_size,
            embeddings_initializer=truncated_normal(std),
            name="word_embeddings",
        )
        self.needs_projection = trigram_input or embedding_size != hidden_size
        self.embedding_transformation = (
            Dense(
                hidden_size,
                kernel_initializer=truncated_normal(std),
                name="embedding_transformation",
            )
            if self.needs_projection
            else None
        )
        self.position_embeddings = tf_keras.layers.Embedding(
            max_position_embeddings,
            hidden_size,
            embeddings_initializer=truncated_normal(std),
            name="position_embeddings",
        )
        self.token_type_embeddings = tf_keras.layers.Embedding(
            type_vocab_size,
            hidden_size,
            embeddings_initializer=truncated_normal(std),
            name="token_type_embeddings",
        )
        self.norm = make_norm(normalization_type, name="norm")
        self.dropout = Dropout(dropout_rate)

    @property
    def embedding_table(self):
        """The token table E, [V, E]."""
        return self.word_embeddings.embeddings

    def call(self, input_word_ids, input_type_ids, training=None):
        input_word_ids = check_seq_length(input_word_ids, self.max_position_embeddings)
        seq_length = tf.shape(input_word_ids)[1]
        x = self.word_embeddings(input_word_ids)  # [B, T, E]
        if self.trigram_input:
            x = trigram_concat(x)  # [B, T, 3E]
        if self.needs_projection:
            x = self.embedding_transformation(x)  # [B, T, H]
        positions = self.position_embeddings(tf.range(seq_length))  # [T, H]
        x = x + positions[tf.newaxis] + self.token_type_embeddings(input_type_ids)
        x = self.norm(x)
        return self.dropout(x, training=training)  # [B, T, H]

    def get_config(self):
        return {
            **super().get_config(),
            "vocab_size": self.vocab_size,
            "embedding_size": self.embedding_size,
            "hidden_size": self.hidden_size,
            "max_position_embeddings": self.max_position_embeddings,
            "type_vocab_size": self.type_vocab_size,
            "trigram_input": self.trigram_input,
            "normalization_type": self.normalization_type,
            "dropout_rate": self.dropout_rate,
            "initializer_range": self.initializer_range,
        }
