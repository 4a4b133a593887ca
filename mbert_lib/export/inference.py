"""An export-time forward pass with quantization-friendly attention masking.

The Keras attention layer masks padded keys by adding a large negative
number to their scores (M = -1e9), exact in float. Full-integer (int8)
quantization records one range per tensor from calibration data, and the
range of "scores + M" then spans [-1e9, max score]: with 256 levels, every
real score rounds to the same value and attention becomes uniform over the
real tokens. The released TF1 code avoided this with a bounded mask; this
forward does the same for export:

    scores' = scores ⊙ m − c (1 − m)          m ∈ {0, 1} per key, c = mask_penalty

so the tensor's range grows by at most c. A padded key keeps a weight of
e^(−c − s_max) relative to the best real key instead of exactly 0: with
c = 20 that is ≈2e-9 · e^(−s_max), far below the int8 softmax output step
(1/256), and in float the outputs match the model's to ~1e-6 (tested). On a
toy task the bounded mask cut the int8 classifier's largest logit error
about 20× (tests/test_export_tflite_accuracy.py).

Everything else reuses the model's own layers (the weights and their
arrangement are those of MobileBertEncoder and Classifier); the block's
control flow mirrors `MobileBertTransformer.call`.
"""

from __future__ import annotations

import math

import tensorflow as tf

from mbert_lib.models import Classifier, MobileBertEncoder, _unpack_inputs, pool

DEFAULT_MASK_PENALTY = 20.0


def check_mask_penalty(mask_penalty: float, name: str = "mask_penalty") -> None:
    """ValueError naming `name` unless c is a finite number > 0: c <= 0 does not mask padded
    keys at all, nan or inf turns every score into nan (or aborts the interpreter)."""
    if not (math.isfinite(mask_penalty) and mask_penalty > 0):
        raise ValueError(
            f"{name} must be a finite number > 0, got {mask_penalty}; a few tens is sensible: "
            f"{DEFAULT_MASK_PENALTY:g} (the default) already leaves a padded key a weight of "
            "about 2e-9 of the best real key's, and a larger c only widens the scores' int8 "
            "range (as -1e9 did)"
        )


def _scores(attention, qk, keep, mask_penalty: float):
    """The masked, scaled scores [B, N, T, S] that enter the softmax. keep: [B, 1, 1, S]."""
    q = attention.query(qk)  # [B, T, N, d]
    k = attention.key(qk)  # [B, S, N, d]
    scores = tf.einsum("btnh,bsnh->bnts", q, k) * (1.0 / math.sqrt(attention.head_size))
    return scores * keep - mask_penalty * (1.0 - keep)  # scores ⊙ m − c(1 − m)


def _attend(attention, qk, v, keep, mask_penalty: float):
    """MultiHeadAttention.call with the bounded mask. keep: [B, 1, 1, S] float 0/1."""
    value = attention.value(v)  # [B, S, N, d]
    probs = tf.nn.softmax(_scores(attention, qk, keep, mask_penalty), axis=-1)  # [B, N, T, S]
    context = tf.einsum("bnts,bsnh->btnh", probs, value)  # [B, T, N, d]
    return attention.attention_output(context)  # [B, T, h]


def _attention_inputs(block, x):
    """(a, qk, v) of a block: the residual input, the query/key input and the value input."""
    a = block.bottleneck_input_norm(block.bottleneck_input(x)) if block.use_bottleneck else x
    if block.use_bottleneck_attention:
        return a, a, a
    if block.key_query_shared_bottleneck:
        return a, block.bottleneck_attention_norm(block.bottleneck_attention(x)), x
    return a, x, x


def _block(block, x, keep, mask_penalty: float):
    """MobileBertTransformer.call in inference mode, with `_attend`."""
    a, qk, v = _attention_inputs(block, x)
    u = block.attention_norm(_attend(block.attention, qk, v, keep, mask_penalty) + a)
    for ffn in block.ffns:
        u = ffn(u, training=False)
    if not block.use_bottleneck:
        return u
    return block.bottleneck_output_norm(block.bottleneck_output(u) + x)  # [B, T, H]


def encoder_forward(
    encoder: MobileBertEncoder, inputs, mask_penalty: float = DEFAULT_MASK_PENALTY
) -> dict:
    """{"sequence_output" [B, T, H], "pooled_output" [B, H], "encoder_outputs" L × [B, T, H]}
    with the bounded mask (the keys of `MobileBertEncoder.call` a deployed model needs)."""
    if not isinstance(encoder, MobileBertEncoder):
        raise ValueError(f"encoder_forward needs a MobileBertEncoder, got {type(encoder).__name__}")
    word_ids, mask, type_ids = _unpack_inputs(inputs)
    keep = tf.reshape(tf.cast(mask, tf.float32), [tf.shape(mask)[0], 1, 1, -1])  # [B, 1, 1, S]
    x = encoder.embedding(word_ids, type_ids, training=False)  # [B, T, H]
    blocks = []
    for block in encoder.blocks:
        x = _block(block, x, keep, mask_penalty)
        blocks.append(x)
    cls = pool(x, mask, encoder.config.classifier_pooling)  # [B, H]
    return {
        "sequence_output": x,
        "pooled_output": encoder.pooler(cls) if encoder.pooler is not None else cls,
        "encoder_outputs": blocks,
    }


def attention_scores(
    encoder: MobileBertEncoder, inputs, layer: int = 0, mask_penalty: float = DEFAULT_MASK_PENALTY
) -> tf.Tensor:
    """The scores [B, N, T, S] entering block `layer`'s softmax, padded keys at −c.

    With mask_penalty = 1e9 these are the model's own (−1e9) masked scores:
    the tensor whose int8 range the mask penalty exists to keep small.
    """
    if not 0 <= layer < len(encoder.blocks):
        raise ValueError(f"layer must be in [0, {len(encoder.blocks)}), got {layer}")
    word_ids, mask, type_ids = _unpack_inputs(inputs)
    keep = tf.reshape(tf.cast(mask, tf.float32), [tf.shape(mask)[0], 1, 1, -1])  # [B, 1, 1, S]
    x = encoder.embedding(word_ids, type_ids, training=False)  # [B, T, H]
    for block in encoder.blocks[:layer]:
        x = _block(block, x, keep, mask_penalty)
    block = encoder.blocks[layer]
    _, qk, _ = _attention_inputs(block, x)
    return _scores(block.attention, qk, keep, mask_penalty)  # [B, N, T, S]


def model_forward(model, inputs, mask_penalty: float = DEFAULT_MASK_PENALTY) -> dict:
    """The serving outputs of an encoder or a Classifier, with the bounded mask."""
    if isinstance(model, Classifier):
        pooled = encoder_forward(model.encoder, inputs, mask_penalty)["pooled_output"]
        return {"logits": model.head(pooled, training=False)}  # [B, C]
    return encoder_forward(model, inputs, mask_penalty)
