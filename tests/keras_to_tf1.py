"""Test helper: read a built mbert_lib model's weights out under the TF1 names.

Written for the tests, walking the Keras layers by attribute, so that
`numpy_reference` can run the same numbers. Kernels become TF1's 2-D
[in, out]: per-head [D, N, d] -> [D, N·d], output [N, d, O] -> [N·d, O].
"""

from __future__ import annotations

import numpy as np

from tests.numpy_reference import norm_name


def _dense(out, scope, layer):
    out[f"{scope}/kernel"] = layer.kernel.numpy()
    out[f"{scope}/bias"] = layer.bias.numpy()


def _norm(out, scope, kind, layer):
    out[f"{scope}/{kind}/gamma"] = layer.gamma.numpy()
    out[f"{scope}/{kind}/beta"] = layer.beta.numpy()


def _heads(out, scope, proj):
    k = proj.kernel.numpy()
    out[f"{scope}/kernel"] = k.reshape(k.shape[0], -1)
    out[f"{scope}/bias"] = proj.bias.numpy().reshape(-1)


def tf1_arrays_from_encoder(encoder) -> dict[str, np.ndarray]:
    config = encoder.config
    kind = norm_name(config)
    out = {}
    emb = encoder.embedding
    out["bert/embeddings/word_embeddings"] = emb.word_embeddings.embeddings.numpy()
    if emb.embedding_transformation is not None:
        _dense(out, "bert/embeddings/embedding_transformation", emb.embedding_transformation)
    out["bert/embeddings/position_embeddings"] = emb.position_embeddings.embeddings.numpy()
    out["bert/embeddings/token_type_embeddings"] = emb.token_type_embeddings.embeddings.numpy()
    _norm(out, "bert/embeddings", kind, emb.norm)
    for i, block in enumerate(encoder.blocks):
        L = f"bert/encoder/layer_{i}"
        if config.use_bottleneck:
            _dense(out, f"{L}/bottleneck/input/dense", block.bottleneck_input)
            _norm(out, f"{L}/bottleneck/input", kind, block.bottleneck_input_norm)
            _dense(out, f"{L}/output/bottleneck/dense", block.bottleneck_output)
            _norm(out, f"{L}/output/bottleneck", kind, block.bottleneck_output_norm)
        if config.key_query_shared_bottleneck:
            _dense(out, f"{L}/bottleneck/attention/dense", block.bottleneck_attention)
            _norm(out, f"{L}/bottleneck/attention", kind, block.bottleneck_attention_norm)
        att = block.attention
        for name in ("query", "key", "value"):
            _heads(out, f"{L}/attention/self/{name}", getattr(att, name))
        k = att.attention_output.kernel.numpy()
        out[f"{L}/attention/output/dense/kernel"] = k.reshape(-1, k.shape[-1])
        out[f"{L}/attention/output/dense/bias"] = att.attention_output.bias.numpy()
        _norm(out, f"{L}/attention/output", kind, block.attention_norm)
        for k_idx, ffn in enumerate(block.ffns):
            s = L if k_idx == len(block.ffns) - 1 else f"{L}/ffn_layer_{k_idx}"
            _dense(out, f"{s}/intermediate/dense", ffn.intermediate)
            _dense(out, f"{s}/output/dense", ffn.output_dense)
            _norm(out, f"{s}/output", kind, ffn.norm)
    if encoder.pooler is not None:
        _dense(out, "bert/pooler/dense", encoder.pooler)
    return out


def tf1_arrays_from_pretrainer(pretrainer) -> dict[str, np.ndarray]:
    out = tf1_arrays_from_encoder(pretrainer.encoder)
    mlm = pretrainer.masked_lm
    _dense(out, "cls/predictions/transform/dense", mlm.transform)
    _norm(out, "cls/predictions/transform", "LayerNorm", mlm.transform_norm)
    if mlm.extra_output_weights is not None:
        out["cls/predictions/extra_output_weights"] = mlm.extra_output_weights.numpy()
    out["cls/predictions/output_bias"] = mlm.output_bias.numpy()
    nsp = pretrainer.next_sentence.dense
    out["cls/seq_relationship/output_weights"] = nsp.kernel.numpy().T
    out["cls/seq_relationship/output_bias"] = nsp.bias.numpy()
    return out
