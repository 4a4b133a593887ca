"""The name map: one row per weight, under its three names (TF1, Keras, Hugging Face).

Every converter in this package goes through this table, keyed by the names
of the released TF1 checkpoints (docs/reference.md lists the sources):

    TF1 name                                   e.g. bert/encoder/layer_0/attention/self/query/kernel
    Keras path in `Pretrainer`                 e.g. encoder/blocks/0/attention/query/kernel
        (attribute path = the tf.train.Checkpoint key without /.ATTRIBUTES/VARIABLE_VALUE)
    Hugging Face name (google/mobilebert-uncased, PyTorch)
                               e.g. mobilebert.encoder.layer.0.attention.self.query.weight

and how the array changes on the way from TF1 to the other two:

    copy       same array
    reshape    per-head split (Keras MultiHeadAttention layout):
                 query/key/value kernel [D, N·d] -> [D, N, d], bias [N·d] -> [N, d],
                 attention output kernel [N·d, O] -> [N, d, O];
               a C-order reshape, so head n owns columns n·d ... n·d + d − 1
    transpose  2-D transpose: PyTorch Linear weights are [out, in]; TF1's NSP
               `output_weights` is [2, H] where a Keras Dense kernel is [H, 2]

Letters: V vocab, E embedding_size, H hidden_size, h intra-block width
(`config.attention_width`), I intermediate_size, N heads, d head size,
F FFNs per block, P max_position_embeddings, S type_vocab_size.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from mbert_lib.config import MobileBertConfig

COPY, RESHAPE, TRANSPOSE = "copy", "reshape", "transpose"


@dataclasses.dataclass(frozen=True)
class Entry:
    """One weight under its three names, with shapes and the TF1 -> X transforms."""

    tf1: str
    keras: str
    hf: str
    tf1_shape: tuple[int, ...]
    keras_shape: tuple[int, ...]
    hf_shape: tuple[int, ...]
    to_keras: str  # copy | reshape | transpose
    to_hf: str  # copy | transpose


def _apply(kind: str, array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if kind == COPY:
        out = array
    elif kind == RESHAPE:
        out = array.reshape(shape)
    elif kind == TRANSPOSE:
        out = np.ascontiguousarray(array.T)
    else:
        raise ValueError(f"unknown transform {kind!r}")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"{kind} gives shape {tuple(out.shape)}, expected {tuple(shape)}")
    return out


def tf1_to_keras(entry: Entry, array: np.ndarray) -> np.ndarray:
    return _apply(entry.to_keras, np.asarray(array), entry.keras_shape)


def keras_to_tf1(entry: Entry, array: np.ndarray) -> np.ndarray:
    return _apply(entry.to_keras, np.asarray(array), entry.tf1_shape)


def tf1_to_hf(entry: Entry, array: np.ndarray) -> np.ndarray:
    return _apply(entry.to_hf, np.asarray(array), entry.hf_shape)


def hf_to_tf1(entry: Entry, array: np.ndarray) -> np.ndarray:
    return _apply(entry.to_hf, np.asarray(array), entry.tf1_shape)


class _Builder:
    """Collects entries; a helper per kind of weight keeps the map below readable."""

    def __init__(self, norm: str):
        self.norm = norm  # "FakeLayerNorm" (no_norm) or "LayerNorm"
        self.entries: list[Entry] = []

    def add(self, tf1, keras, hf, shape, to_keras=COPY, keras_shape=None, to_hf=COPY):
        shape = tuple(shape)
        hf_shape = shape[::-1] if to_hf == TRANSPOSE else shape
        if keras_shape is None:
            keras_shape = shape[::-1] if to_keras == TRANSPOSE else shape
        self.entries.append(
            Entry(tf1, keras, hf, shape, tuple(keras_shape), hf_shape, to_keras, to_hf)
        )

    def dense(self, tf1, keras, hf, n_in, n_out):
        """TF1 <scope>/kernel [in, out] + bias; Keras Dense; PyTorch Linear."""
        self.add(f"{tf1}/kernel", f"{keras}/kernel", f"{hf}.weight", (n_in, n_out), to_hf=TRANSPOSE)
        self.add(f"{tf1}/bias", f"{keras}/bias", f"{hf}.bias", (n_out,))

    def norm_layer(self, tf1_scope, keras, hf, width, kind=None):
        """TF1 <scope>/{FakeLayerNorm|LayerNorm}/{gamma,beta}; HF LayerNorm/NoNorm weight, bias."""
        kind = kind or self.norm
        self.add(f"{tf1_scope}/{kind}/gamma", f"{keras}/gamma", f"{hf}.weight", (width,))
        self.add(f"{tf1_scope}/{kind}/beta", f"{keras}/beta", f"{hf}.bias", (width,))

    def heads_in(self, tf1, keras, hf, n_in, heads, head_size):
        """Q/K/V projection: TF1 [D, N·d] -> Keras [D, N, d]; bias [N·d] -> [N, d]."""
        width = heads * head_size
        self.add(
            f"{tf1}/kernel",
            f"{keras}/kernel",
            f"{hf}.weight",
            (n_in, width),
            RESHAPE,
            (n_in, heads, head_size),
            TRANSPOSE,
        )
        self.add(
            f"{tf1}/bias", f"{keras}/bias", f"{hf}.bias", (width,), RESHAPE, (heads, head_size)
        )

    def heads_out(self, tf1, keras, hf, heads, head_size, n_out):
        """Attention output: TF1 [N·d, O] -> Keras [N, d, O]; bias [O] unchanged."""
        self.add(
            f"{tf1}/kernel",
            f"{keras}/kernel",
            f"{hf}.weight",
            (heads * head_size, n_out),
            RESHAPE,
            (heads, head_size, n_out),
            TRANSPOSE,
        )
        self.add(f"{tf1}/bias", f"{keras}/bias", f"{hf}.bias", (n_out,))


def _embeddings(b: _Builder, c: MobileBertConfig) -> None:
    tf1, keras, hf = "bert/embeddings", "encoder/embedding", "mobilebert.embeddings"
    b.add(
        f"{tf1}/word_embeddings",
        f"{keras}/word_embeddings/embeddings",
        f"{hf}.word_embeddings.weight",
        (c.vocab_size, c.embedding_size),
    )
    if c.trigram_input or c.embedding_size != c.hidden_size:
        width_in = c.embedding_size * (3 if c.trigram_input else 1)  # 3E: the trigram concat
        b.dense(
            f"{tf1}/embedding_transformation",
            f"{keras}/embedding_transformation",
            f"{hf}.embedding_transformation",
            width_in,
            c.hidden_size,
        )
    b.add(
        f"{tf1}/position_embeddings",
        f"{keras}/position_embeddings/embeddings",
        f"{hf}.position_embeddings.weight",
        (c.max_position_embeddings, c.hidden_size),
    )
    b.add(
        f"{tf1}/token_type_embeddings",
        f"{keras}/token_type_embeddings/embeddings",
        f"{hf}.token_type_embeddings.weight",
        (c.type_vocab_size, c.hidden_size),
    )
    b.norm_layer(tf1, f"{keras}/norm", f"{hf}.LayerNorm", c.hidden_size)


def _block(b: _Builder, c: MobileBertConfig, i: int) -> None:
    tf1, keras, hf = (
        f"bert/encoder/layer_{i}",
        f"encoder/blocks/{i}",
        f"mobilebert.encoder.layer.{i}",
    )
    H, w, N, d, I = (
        c.hidden_size,
        c.attention_width,
        c.num_attention_heads,
        c.attention_head_size,
        c.intermediate_size,
    )
    if c.use_bottleneck:
        b.dense(
            f"{tf1}/bottleneck/input/dense",
            f"{keras}/bottleneck_input",
            f"{hf}.bottleneck.input.dense",
            H,
            w,
        )
        b.norm_layer(
            f"{tf1}/bottleneck/input",
            f"{keras}/bottleneck_input_norm",
            f"{hf}.bottleneck.input.LayerNorm",
            w,
        )
    if c.key_query_shared_bottleneck:
        b.dense(
            f"{tf1}/bottleneck/attention/dense",
            f"{keras}/bottleneck_attention",
            f"{hf}.bottleneck.attention.dense",
            H,
            w,
        )
        b.norm_layer(
            f"{tf1}/bottleneck/attention",
            f"{keras}/bottleneck_attention_norm",
            f"{hf}.bottleneck.attention.LayerNorm",
            w,
        )
    # Widths of the attention inputs (see layers/transformer.py).
    if c.use_bottleneck_attention:
        qk_in, v_in = w, w
    elif c.key_query_shared_bottleneck:
        qk_in, v_in = w, H
    else:
        qk_in, v_in = H, H
    for name, n_in in (("query", qk_in), ("key", qk_in), ("value", v_in)):
        b.heads_in(
            f"{tf1}/attention/self/{name}",
            f"{keras}/attention/{name}",
            f"{hf}.attention.self.{name}",
            n_in,
            N,
            d,
        )
    b.heads_out(
        f"{tf1}/attention/output/dense",
        f"{keras}/attention/attention_output",
        f"{hf}.attention.output.dense",
        N,
        d,
        w,
    )
    b.norm_layer(
        f"{tf1}/attention/output", f"{keras}/attention_norm", f"{hf}.attention.output.LayerNorm", w
    )
    F = c.num_feedforward_networks
    for k in range(F):
        # The last FFN keeps BERT's own names; the extra ones are ffn_layer_k / ffn.k.
        tf1_s, hf_s = (tf1, hf) if k == F - 1 else (f"{tf1}/ffn_layer_{k}", f"{hf}.ffn.{k}")
        b.dense(
            f"{tf1_s}/intermediate/dense",
            f"{keras}/ffns/{k}/intermediate",
            f"{hf_s}.intermediate.dense",
            w,
            I,
        )
        b.dense(
            f"{tf1_s}/output/dense", f"{keras}/ffns/{k}/output_dense", f"{hf_s}.output.dense", I, w
        )
        b.norm_layer(f"{tf1_s}/output", f"{keras}/ffns/{k}/norm", f"{hf_s}.output.LayerNorm", w)
    if c.use_bottleneck:
        b.dense(
            f"{tf1}/output/bottleneck/dense",
            f"{keras}/bottleneck_output",
            f"{hf}.output.bottleneck.dense",
            w,
            H,
        )
        b.norm_layer(
            f"{tf1}/output/bottleneck",
            f"{keras}/bottleneck_output_norm",
            f"{hf}.output.bottleneck.LayerNorm",
            H,
        )


def _pooler(b: _Builder, c: MobileBertConfig) -> None:
    b.dense(
        "bert/pooler/dense",
        "encoder/pooler",
        "mobilebert.pooler.dense",
        c.hidden_size,
        c.hidden_size,
    )


def _heads(b: _Builder, c: MobileBertConfig) -> None:
    H, E, V = c.hidden_size, c.embedding_size, c.vocab_size
    b.dense(
        "cls/predictions/transform/dense",
        "masked_lm/transform",
        "cls.predictions.transform.dense",
        H,
        H,
    )
    # The MLM transform has a real LayerNorm, also in the NoNorm student.
    b.norm_layer(
        "cls/predictions/transform",
        "masked_lm/transform_norm",
        "cls.predictions.transform.LayerNorm",
        H,
        kind="LayerNorm",
    )
    if E < H:
        # W_extra [V, H − E]; Hugging Face stores it as a Linear(V -> H − E): [H − E, V].
        b.add(
            "cls/predictions/extra_output_weights",
            "masked_lm/extra_output_weights",
            "cls.predictions.dense.weight",
            (V, H - E),
            to_hf=TRANSPOSE,
        )
    b.add("cls/predictions/output_bias", "masked_lm/output_bias", "cls.predictions.bias", (V,))
    # NSP: TF1 output_weights [2, H] is PyTorch-like; the Keras Dense kernel is [H, 2].
    b.add(
        "cls/seq_relationship/output_weights",
        "next_sentence/dense/kernel",
        "cls.seq_relationship.weight",
        (2, H),
        to_keras=TRANSPOSE,
    )
    b.add(
        "cls/seq_relationship/output_bias",
        "next_sentence/dense/bias",
        "cls.seq_relationship.bias",
        (2,),
    )


def name_map(config: MobileBertConfig, include_heads: bool = True) -> list[Entry]:
    """Every weight of `Pretrainer(MobileBertEncoder(config))`, in model order.

    `include_heads=False` keeps the encoder's weights only (embeddings, blocks, pooler).
    """
    b = _Builder("FakeLayerNorm" if config.normalization_type == "no_norm" else "LayerNorm")
    _embeddings(b, config)
    for i in range(config.num_hidden_layers):
        _block(b, config, i)
    if config.classifier_activation:
        _pooler(b, config)
    if include_heads:
        _heads(b, config)
    return b.entries


def unused_entries(config: MobileBertConfig) -> list[Entry]:
    """Weights a checkpoint may hold although this config never uses them.

    The pooler dense layer exists in a TF1 / Hugging Face checkpoint trained
    with classifier_activation, but a config with classifier_activation false
    returns the raw [CLS] vector; such weights are skipped and reported.
    """
    if config.classifier_activation:
        return []
    b = _Builder("")
    _pooler(b, config)
    return b.entries


def name_table(config: MobileBertConfig, include_heads: bool = True):
    """The name map as a pandas DataFrame (one row per weight)."""
    return pd.DataFrame(
        [
            {
                "TF1 name": e.tf1,
                "TF1 shape": list(e.tf1_shape),
                "Keras path": e.keras,
                "Keras shape": list(e.keras_shape),
                "TF1→Keras": e.to_keras,
                "Hugging Face name": e.hf,
                "HF shape": list(e.hf_shape),
                "TF1→HF": e.to_hf,
            }
            for e in name_map(config, include_heads)
        ]
    )


def random_tf1_arrays(
    config: MobileBertConfig, seed: int = 0, stddev: float = 0.05
) -> dict[str, np.ndarray]:
    """Random float32 weights under the released TF1 names (a stand-in checkpoint).

    Kernels and tables ~ N(0, stddev²); biases and β ~ N(0, stddev²); γ ~ 1 + N(0, stddev²):
    none is 0 or 1, so a swapped γ/β or a dropped bias changes the outputs.
    """
    rng = np.random.default_rng(seed)
    out = {}
    for e in name_map(config):
        a = rng.normal(0.0, stddev, e.tf1_shape)
        if e.tf1.endswith("/gamma"):
            a += 1.0
        out[e.tf1] = a.astype(np.float32)
    return out
