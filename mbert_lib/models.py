"""Encoders and task models: MobileBERT / IB-BERT, the BERT baseline, pretrainer, classifier.

Inputs follow the TF-Hub convention, a dict of int32 [B, T] tensors:
`input_word_ids`, `input_mask` (1 = real token, 0 = padding; default all
ones) and `input_type_ids` (segment ids; default all zeros).

Every encoder returns a dict:
    embedding_output   [B, T, H]        input of the first block
    sequence_output    [B, T, H]        output of the last block
    pooled_output      [B, H]           [CLS] vector (classifier_pooling "first") or the mean
                                        of sequence_output over real tokens ("mean"), then
                                        tanh(W·v + b) if classifier_activation
    encoder_outputs    L × [B, T, H]    every block's output (feature-map transfer)
    attention_scores   L × [B, N, T, T] every block's post-softmax attention probabilities
                                        (attention transfer; TF1 returned pre-softmax logits)
"""

from __future__ import annotations

import tensorflow as tf
import tf_keras

from mbert_lib.config import MobileBertConfig
from mbert_lib.layers.activations import get_activation
from mbert_lib.layers.embedding import MobileBertEmbedding, check_seq_length
from mbert_lib.layers.heads import ClassificationHead, MaskedLMHead, NextSentenceHead
from mbert_lib.layers.initializers import truncated_normal
from mbert_lib.layers.nonorm import LAYER_NORM_EPSILON
from mbert_lib.layers.transformer import MobileBertTransformer, block_kwargs

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


def dummy_inputs(batch_size: int = 1, seq_length: int = 8) -> dict[str, tf.Tensor]:
    """All-ones word ids, full mask, zero type ids: enough to build a model."""
    shape = [batch_size, seq_length]
    return {
        "input_word_ids": tf.ones(shape, tf.int32),
        "input_mask": tf.ones(shape, tf.int32),
        "input_type_ids": tf.zeros(shape, tf.int32),
    }


def _unpack_inputs(inputs):
    """(word_ids, mask, type_ids), each [B, T] int32, from a dict or a 1-3 sequence."""
    if isinstance(inputs, dict):
        unknown = set(inputs) - set(INPUT_NAMES) - {"masked_lm_positions"}
        if unknown:
            raise ValueError(f"unexpected input(s) {sorted(unknown)}; expected {list(INPUT_NAMES)}")
        if "input_word_ids" not in inputs:
            raise ValueError(f"inputs must contain 'input_word_ids'; got {sorted(inputs)}")
        word_ids = inputs["input_word_ids"]
        mask, type_ids = inputs.get("input_mask"), inputs.get("input_type_ids")
    elif isinstance(inputs, (list, tuple)):
        word_ids, mask, type_ids = (list(inputs) + [None, None])[:3]
    else:
        word_ids, mask, type_ids = inputs, None, None
    word_ids = tf.convert_to_tensor(word_ids)
    if word_ids.shape.rank != 2:
        raise ValueError(f"input_word_ids must be [batch, seq_length], got shape {word_ids.shape}")
    word_ids = tf.cast(word_ids, tf.int32)
    mask = tf.ones_like(word_ids) if mask is None else tf.cast(mask, tf.int32)
    type_ids = tf.zeros_like(word_ids) if type_ids is None else tf.cast(type_ids, tf.int32)
    return word_ids, mask, type_ids


def _first_blocks(blocks, num_layers):
    if num_layers is None:
        return blocks
    if not 1 <= num_layers <= len(blocks):
        raise ValueError(f"num_layers must be in [1, {len(blocks)}], got {num_layers}")
    return blocks[:num_layers]


def pool(sequence_output, mask, pooling: str = "first"):
    """The vector a sentence head reads, [B, H], from sequence_output [B, T, H].

    "first": the [CLS] position. "mean": (1/|m|) Σ_t m_t x_t over the real tokens
    (mask m [B, T], 1 = token, 0 = padding).
    """
    if pooling == "first":
        return sequence_output[:, 0]
    if pooling != "mean":
        raise ValueError(f"classifier_pooling must be 'first' or 'mean', got {pooling!r}")
    m = tf.cast(mask, sequence_output.dtype)[:, :, tf.newaxis]  # [B, T, 1]
    count = tf.maximum(tf.reduce_sum(m, axis=1), 1.0)  # [B, 1]
    return tf.reduce_sum(sequence_output * m, axis=1) / count


def _run_blocks(x, blocks, mask, pooler, training, output_positions=None, pooling="first"):
    """The blocks on embeddings x [B, T, H] -> the encoder output dict.

    With output_positions [B, P], the last block runs its queries only at
    [CLS] and those positions (`MobileBertTransformer`'s query_positions); it
    cannot be combined with "mean" pooling, which reads every position.
    """
    if output_positions is not None and pooling != "first":
        raise ValueError(
            "output_positions needs classifier_pooling 'first': 'mean' pooling reads every "
            "position of the last block"
        )
    embedding_output, layer_outputs, attention_probs = x, [], []
    for i, block in enumerate(blocks):
        if output_positions is not None and i == len(blocks) - 1:
            cls_first = tf.concat(
                [tf.zeros_like(output_positions[:, :1]), output_positions], axis=1
            )  # [B, 1 + P]
            x, probs = block(x, mask, training=training, query_positions=cls_first)
            cls, x, probs = x[:, 0], x[:, 1:], probs[:, :, 1:]  # [B, H], [B, P, H]
        else:
            x, probs = block(x, mask, training=training)  # [B, T, H], [B, N, T, T]
            cls = pool(x, mask, pooling)  # [B, H]
        layer_outputs.append(x)
        attention_probs.append(probs)
    return {
        "embedding_output": embedding_output,
        "sequence_output": x,
        "pooled_output": pooler(cls) if pooler is not None else cls,
        "encoder_outputs": layer_outputs,
        "attention_scores": attention_probs,
    }


def _pooler(config: MobileBertConfig):
    if not config.classifier_activation:
        return None
    return tf_keras.layers.Dense(
        config.hidden_size,
        activation="tanh",
        name="pooler",
        kernel_initializer=truncated_normal(config.initializer_range),
    )


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class MobileBertEncoder(tf_keras.Model):
    """MobileBERT, IB-BERT or (with a BERT config) BERT: embedding + L blocks + pooler."""

    def __init__(self, config: MobileBertConfig, **kwargs):
        kwargs.setdefault("name", "mobile_bert_encoder")
        super().__init__(**kwargs)
        self.config = config
        self.embedding = MobileBertEmbedding(
            vocab_size=config.vocab_size,
            embedding_size=config.embedding_size,
            hidden_size=config.hidden_size,
            max_position_embeddings=config.max_position_embeddings,
            type_vocab_size=config.type_vocab_size,
            trigram_input=config.trigram_input,
            normalization_type=config.normalization_type,
            dropout_rate=config.hidden_dropout_prob,
            initializer_range=config.initializer_range,
            name="embeddings",
        )
        self.blocks = [
            MobileBertTransformer(**block_kwargs(config), name=f"layer_{i}")
            for i in range(config.num_hidden_layers)
        ]
        self.pooler = _pooler(config)

    @property
    def embedding_table(self):
        """The token table [V, E], shared with the MLM head."""
        return self.embedding.embedding_table

    def call(self, inputs, training=None, num_layers=None, output_positions=None):
        """Runs the embedding and the first `num_layers` blocks (all by default).

        Layer-wise distillation of layer l needs only blocks 0..l; with
        `num_layers` < L, `sequence_output` and `pooled_output` come from the
        last block run.

        output_positions [B, P] (optional): the last block run computes its
        output only at these positions and at [CLS]; `sequence_output` and the
        last entries of `encoder_outputs` / `attention_scores` are then
        [B, P, H] / [B, N, P, T], equal to the full ones at those positions,
        and `pooled_output` is unchanged. For heads that read only masked
        positions this skips most of the last block's work.
        """
        word_ids, mask, type_ids = _unpack_inputs(inputs)
        x = self.embedding(word_ids, type_ids, training=training)  # [B, T, H]
        return _run_blocks(
            x,
            _first_blocks(self.blocks, num_layers),
            mask,
            self.pooler,
            training,
            output_positions,
            self.config.classifier_pooling,
        )

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(MobileBertConfig.from_dict(config["config"]), name=config.get("name"))


class _BertLayer(tf_keras.layers.Layer):
    """A post-LN BERT layer from Keras' own MultiHeadAttention (the baseline's code path)."""

    def __init__(self, config: MobileBertConfig, **kwargs):
        super().__init__(**kwargs)
        std = config.initializer_range
        heads = config.num_attention_heads
        self.attention = tf_keras.layers.MultiHeadAttention(
            heads,
            config.hidden_size // heads,
            dropout=config.attention_probs_dropout_prob,
            kernel_initializer=truncated_normal(std),
            name="attention",
        )
        self.attention_dropout = tf_keras.layers.Dropout(config.hidden_dropout_prob)
        self.attention_norm = tf_keras.layers.LayerNormalization(
            epsilon=LAYER_NORM_EPSILON, name="attention_norm"
        )
        self.intermediate = tf_keras.layers.Dense(
            config.intermediate_size,
            activation=get_activation(config.hidden_act),
            kernel_initializer=truncated_normal(std),
            name="intermediate",
        )
        self.output_dense = tf_keras.layers.Dense(
            config.hidden_size, kernel_initializer=truncated_normal(std), name="output"
        )
        self.output_dropout = tf_keras.layers.Dropout(config.hidden_dropout_prob)
        self.output_norm = tf_keras.layers.LayerNormalization(
            epsilon=LAYER_NORM_EPSILON, name="output_norm"
        )

    def call(self, x, mask, training=None, query_positions=None):
        pair_mask = tf.cast(mask[:, tf.newaxis, :], tf.bool)  # [B, 1, S], broadcast over T
        x_q = x if query_positions is None else tf.gather(x, query_positions, batch_dims=1)
        attended, probs = self.attention(
            x_q, x, x, attention_mask=pair_mask, return_attention_scores=True, training=training
        )
        x = self.attention_norm(self.attention_dropout(attended, training=training) + x_q)
        y = self.output_dense(self.intermediate(x))
        return self.output_norm(self.output_dropout(y, training=training) + x), probs


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class BertEncoder(tf_keras.Model):
    """The BERT_BASE baseline: a standard post-LN transformer encoder.

    Built from Keras' MultiHeadAttention, Dense and LayerNormalization, not
    from this library's MobileBERT layers, so it doubles as an independent
    code path: MobileBertEncoder with the same BERT config and weights must
    agree with it. The config must describe a plain BERT (no trigram, no
    bottleneck, E = H, one FFN, layer_norm).
    """

    def __init__(self, config: MobileBertConfig, **kwargs):
        kwargs.setdefault("name", "bert_encoder")
        super().__init__(**kwargs)
        for field, required in [
            ("trigram_input", False),
            ("use_bottleneck", False),
            ("num_feedforward_networks", 1),
            ("normalization_type", "layer_norm"),
            ("embedding_size", config.hidden_size),
        ]:
            if getattr(config, field) != required:
                raise ValueError(
                    f"BertEncoder needs a plain BERT config: {field} must be "
                    f"{required!r}, got {getattr(config, field)!r}"
                )
        self.config = config
        std = config.initializer_range
        self.word_embeddings = tf_keras.layers.Embedding(
            config.vocab_size,
            config.hidden_size,
            embeddings_initializer=truncated_normal(std),
            name="word_embeddings",
        )
        self.position_embeddings = tf_keras.layers.Embedding(
            config.max_position_embeddings,
            config.hidden_size,
            embeddings_initializer=truncated_normal(std),
            name="position_embeddings",
        )
        self.token_type_embeddings = tf_keras.layers.Embedding(
            config.type_vocab_size,
            config.hidden_size,
            embeddings_initializer=truncated_normal(std),
            name="token_type_embeddings",
        )
        self.embedding_norm = tf_keras.layers.LayerNormalization(
            epsilon=LAYER_NORM_EPSILON, name="embedding_norm"
        )
        self.embedding_dropout = tf_keras.layers.Dropout(config.hidden_dropout_prob)
        self.blocks = [
            _BertLayer(config, name=f"layer_{i}") for i in range(config.num_hidden_layers)
        ]
        self.pooler = _pooler(config)

    @property
    def embedding_table(self):
        return self.word_embeddings.embeddings

    def call(self, inputs, training=None, output_positions=None):
        """As `MobileBertEncoder.call` (all blocks)."""
        word_ids, mask, type_ids = _unpack_inputs(inputs)
        word_ids = check_seq_length(word_ids, self.config.max_position_embeddings)
        positions = self.position_embeddings(tf.range(tf.shape(word_ids)[1]))
        x = (
            self.word_embeddings(word_ids)
            + positions[tf.newaxis]
            + self.token_type_embeddings(type_ids)
        )
        x = self.embedding_dropout(self.embedding_norm(x), training=training)
        return _run_blocks(
            x,
            self.blocks,
            mask,
            self.pooler,
            training,
            output_positions,
            self.config.classifier_pooling,
        )

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(MobileBertConfig.from_dict(config["config"]), name=config.get("name"))


def _serialize_encoder(encoder):
    return tf_keras.utils.serialize_keras_object(encoder)


def _deserialize_encoder(value):
    return tf_keras.utils.deserialize_keras_object(
        value, custom_objects={"MobileBertEncoder": MobileBertEncoder, "BertEncoder": BertEncoder}
    )


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class Pretrainer(tf_keras.Model):
    """Encoder + masked-LM head + next-sentence head (BERT's pre-training objectives).

    Extra input `masked_lm_positions` [B, P] selects the positions the MLM head
    scores (all T positions if absent). Returns the encoder's dict plus
    `mlm_logits` [B, P, V] and `nsp_logits` [B, 2].
    """

    def __init__(self, encoder, **kwargs):
        kwargs.setdefault("name", "pretrainer")
        super().__init__(**kwargs)
        self.encoder = encoder
        config = encoder.config
        self.masked_lm = MaskedLMHead(
            config.vocab_size,
            config.hidden_size,
            config.embedding_size,
            activation=config.hidden_act,
            initializer_range=config.initializer_range,
            name="cls_predictions",
        )
        self.next_sentence = NextSentenceHead(config.initializer_range, name="cls_seq_relationship")

    @property
    def config(self) -> MobileBertConfig:
        return self.encoder.config

    def call(self, inputs, training=None, heads_only=False):
        """heads_only: the last block runs only where the heads read ([CLS] and
        `masked_lm_positions`, which must be given); the logits are the same,
        `sequence_output` and the last block's outputs cover only the masked
        positions (see `MobileBertEncoder.call`'s output_positions)."""
        positions = inputs.get("masked_lm_positions") if isinstance(inputs, dict) else None
        if heads_only:
            if positions is None:
                raise ValueError("heads_only needs inputs['masked_lm_positions']")
            outputs = dict(self.encoder(inputs, training=training, output_positions=positions))
            positions = None  # sequence_output is already [B, P, H]
        else:
            outputs = dict(self.encoder(inputs, training=training))
        outputs["mlm_logits"] = self.masked_lm(
            outputs["sequence_output"], self.encoder.embedding_table, positions
        )
        outputs["nsp_logits"] = self.next_sentence(outputs["pooled_output"])
        return outputs

    def get_config(self):
        return {"encoder": _serialize_encoder(self.encoder), "name": self.name}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(_deserialize_encoder(config["encoder"]), name=config.get("name"))


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class Classifier(tf_keras.Model):
    """Encoder + classification head on the pooled output -> {"logits": [B, C]}."""

    def __init__(self, encoder, num_classes: int, dropout_rate: float = 0.1, **kwargs):
        kwargs.setdefault("name", "classifier")
        super().__init__(**kwargs)
        self.encoder = encoder
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.head = ClassificationHead(
            num_classes, dropout_rate, encoder.config.initializer_range, name="classifier_head"
        )

    @property
    def config(self) -> MobileBertConfig:
        return self.encoder.config

    def call(self, inputs, training=None):
        # a frozen encoder (trainable False: features only) runs without its dropout
        encoder_training = training if self.encoder.trainable else False
        pooled = self.encoder(inputs, training=encoder_training)["pooled_output"]
        return {"logits": self.head(pooled, training=training)}

    def get_config(self):
        return {
            "encoder": _serialize_encoder(self.encoder),
            "num_classes": self.num_classes,
            "dropout_rate": self.dropout_rate,
            "name": self.name,
        }

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(
            _deserialize_encoder(config["encoder"]),
            config["num_classes"],
            config["dropout_rate"],
            name=config.get("name"),
        )


def build_encoder(config: MobileBertConfig, seq_length: int = 8) -> MobileBertEncoder:
    """A MobileBertEncoder with its weights created (one call on dummy inputs)."""
    encoder = MobileBertEncoder(config)
    encoder(dummy_inputs(1, min(seq_length, config.max_position_embeddings)))
    return encoder


def build_pretrainer(config: MobileBertConfig, encoder=None) -> Pretrainer:
    """Encoder + MLM + NSP heads, built."""
    model = Pretrainer(encoder if encoder is not None else MobileBertEncoder(config))
    model(dummy_inputs())
    return model


def build_classifier(
    config: MobileBertConfig, num_classes: int, dropout_rate: float = 0.1, encoder=None
) -> Classifier:
    """Encoder + classification head, built."""
    model = Classifier(
        encoder if encoder is not None else MobileBertEncoder(config), num_classes, dropout_rate
    )
    model(dummy_inputs())
    return model


def count_params(model_or_layer) -> int:
    """Number of scalar weights (trainable or not) of a built model."""
    return int(sum(int(tf.size(w)) for w in model_or_layer.weights))
