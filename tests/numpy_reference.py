"""An independent numpy forward pass of MobileBERT / IB-BERT / BERT.

Written from the paper and the released TF1 code's variable layout, not from
mbert_lib: weights come as a dict keyed by the released checkpoints' TF1
names (docs/reference.md) with TF1's 2-D [in, out] kernels, so the same
reference checks the Keras layers (via `tf1_arrays_from_encoder` in the
tests) and the checkpoint converters.
"""

from __future__ import annotations

import math

import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])


def activation(name: str, x: np.ndarray) -> np.ndarray:
    if name == "relu":
        return np.maximum(x, 0.0)
    if name == "relu6":
        return np.clip(x, 0.0, 6.0)
    if name == "gelu":
        return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    if name == "gelu_new":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    if name == "tanh":
        return np.tanh(x)
    if name == "swish":
        return x / (1.0 + np.exp(-x))
    if name == "linear":
        return x
    raise ValueError(name)


def norm_name(config) -> str:
    return "FakeLayerNorm" if config.normalization_type == "no_norm" else "LayerNorm"


def normalize(w: dict, scope: str, x: np.ndarray, kind: str) -> np.ndarray:
    """FakeLayerNorm: γ x + β.  LayerNorm: γ (x − μ) / sqrt(σ² + 1e-12) + β."""
    gamma, beta = w[f"{scope}/{kind}/gamma"], w[f"{scope}/{kind}/beta"]
    if kind == "FakeLayerNorm":
        return x * gamma + beta
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * gamma + beta


def dense(w: dict, scope: str, x: np.ndarray) -> np.ndarray:
    return x @ w[f"{scope}/kernel"] + w[f"{scope}/bias"]


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def attention(w, scope, q_in, k_in, v_in, mask, num_heads):
    """Returns (context [B, T, N·d], probabilities [B, N, T, T])."""

    def heads(x, name):
        y = dense(w, f"{scope}/self/{name}", x)  # [B, T, N·d]
        b, t, nd = y.shape
        return y.reshape(b, t, num_heads, nd // num_heads).transpose(0, 2, 1, 3)

    q, k, v = heads(q_in, "query"), heads(k_in, "key"), heads(v_in, "value")
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])  # [B, N, T, T]
    scores = scores + (1.0 - mask[:, None, None, :]) * -1e9
    probs = softmax(scores)
    context = (probs @ v).transpose(0, 2, 1, 3)  # [B, T, N, d]
    return context.reshape(context.shape[0], context.shape[1], -1), probs


def block(w, config, i, x, mask):
    """One transformer block, TF1 scope bert/encoder/layer_i."""
    L = f"bert/encoder/layer_{i}"
    kind = norm_name(config)
    if config.use_bottleneck:
        a = normalize(w, f"{L}/bottleneck/input", dense(w, f"{L}/bottleneck/input/dense", x), kind)
        if config.use_bottleneck_attention:
            q_in = v_in = a
        elif config.key_query_shared_bottleneck:
            q_in = normalize(
                w, f"{L}/bottleneck/attention", dense(w, f"{L}/bottleneck/attention/dense", x), kind
            )
            v_in = x
        else:
            q_in = v_in = x
    else:
        a = q_in = v_in = x
    context, probs = attention(
        w, f"{L}/attention", q_in, q_in, v_in, mask, config.num_attention_heads
    )
    u = normalize(
        w, f"{L}/attention/output", dense(w, f"{L}/attention/output/dense", context) + a, kind
    )
    scopes = [f"{L}/ffn_layer_{k}" for k in range(config.num_feedforward_networks - 1)] + [L]
    for s in scopes:
        hidden = activation(config.hidden_act, dense(w, f"{s}/intermediate/dense", u))
        u = normalize(w, f"{s}/output", dense(w, f"{s}/output/dense", hidden) + u, kind)
    if not config.use_bottleneck:
        return u, probs
    y = dense(w, f"{L}/output/bottleneck/dense", u) + x
    return normalize(w, f"{L}/output/bottleneck", y, kind), probs


def encoder_forward(w: dict, config, word_ids, mask=None, type_ids=None) -> dict:
    """Numpy encoder outputs (float64), keys as mbert_lib's encoders return them."""
    word_ids = np.asarray(word_ids)
    mask = np.ones_like(word_ids) if mask is None else np.asarray(mask)
    type_ids = np.zeros_like(word_ids) if type_ids is None else np.asarray(type_ids)
    mask = mask.astype(np.float64)
    e = w["bert/embeddings/word_embeddings"][word_ids]  # [B, T, E]
    if config.trigram_input:
        zero = np.zeros_like(e[:, :1])
        e = np.concatenate(
            [np.concatenate([e[:, 1:], zero], 1), e, np.concatenate([zero, e[:, :-1]], 1)], axis=-1
        )  # [B, T, 3E]
    if config.trigram_input or config.embedding_size != config.hidden_size:
        e = dense(w, "bert/embeddings/embedding_transformation", e)  # [B, T, H]
    t = word_ids.shape[1]
    e = (
        e
        + w["bert/embeddings/position_embeddings"][:t][None]
        + w["bert/embeddings/token_type_embeddings"][type_ids]
    )
    x = normalize(w, "bert/embeddings", e, norm_name(config))
    outputs, probs = [], []
    for i in range(config.num_hidden_layers):
        x, p = block(w, config, i, x, mask)
        outputs.append(x)
        probs.append(p)
    cls = x[:, 0]
    pooled = np.tanh(dense(w, "bert/pooler/dense", cls)) if config.classifier_activation else cls
    return {
        "sequence_output": x,
        "pooled_output": pooled,
        "encoder_outputs": outputs,
        "attention_scores": probs,
    }


def pretrainer_forward(w: dict, config, word_ids, mask=None, type_ids=None, positions=None) -> dict:
    """Encoder outputs plus `mlm_logits` [B, P, V] and `nsp_logits` [B, 2]."""
    out = encoder_forward(w, config, word_ids, mask, type_ids)
    h = out["sequence_output"]
    if positions is not None:
        h = np.take_along_axis(h, np.asarray(positions)[..., None], axis=1)
    z = activation(config.hidden_act, dense(w, "cls/predictions/transform/dense", h))
    z = normalize(w, "cls/predictions/transform", z, "LayerNorm")
    table = w["bert/embeddings/word_embeddings"]
    if config.embedding_size < config.hidden_size:
        table = np.concatenate([table, w["cls/predictions/extra_output_weights"]], axis=1)
    out["mlm_logits"] = z @ table.T + w["cls/predictions/output_bias"]
    out["nsp_logits"] = (
        out["pooled_output"] @ w["cls/seq_relationship/output_weights"].T
        + w["cls/seq_relationship/output_bias"]
    )
    return out
