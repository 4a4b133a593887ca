"""Multi-head attention with per-head kernels: probabilities, masking, head split numerics."""

import math

import numpy as np
import pytest

from mbert_lib.layers.attention import HeadMerge, HeadProjection, MultiHeadAttention
from tests.helpers import randomize_affine_weights

B, T, N, d = 2, 6, 4, 8
D_QK, D_V, OUT = 16, 24, 20  # MobileBERT-like: Q/K and V inputs of different widths
MASK = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]], np.int32)  # [B, T]


def _inputs(seed=0):
    rng = np.random.RandomState(seed)
    return (
        rng.standard_normal((B, T, D_QK)).astype(np.float32),  # [B, T, D_qk]
        rng.standard_normal((B, T, D_V)).astype(np.float32),
    )  # [B, T, D_v]


def _attention(dropout_rate=0.0):
    layer = MultiHeadAttention(N, d, OUT, dropout_rate=dropout_rate)
    qk, v = _inputs()
    layer(qk, qk, v, MASK)
    randomize_affine_weights(layer)
    for w in layer.weights:  # larger kernels: peaked, non-uniform probabilities
        if "kernel" in w.name:
            w.assign(w.numpy() * 10)
    return layer


def _numpy_attention(layer, q_in, k_in, v_in, mask):
    """Q, K, V as 2-D matmuls, split into heads by reshape (the TF1 layout)."""

    def project(proj, x):
        w, b = proj.kernel.numpy(), proj.bias.numpy()  # [D, N, d], [N, d]
        y = x @ w.reshape(w.shape[0], N * d) + b.reshape(N * d)  # [B, T, N·d]
        return y.reshape(B, T, N, d).transpose(0, 2, 1, 3)  # [B, N, T, d]

    q, k, v = project(layer.query, q_in), project(layer.key, k_in), project(layer.value, v_in)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)  # [B, N, T, T]
    scores = np.where(mask[:, None, None, :] > 0, scores, -np.inf)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(B, T, N * d)  # [B, T, N·d]
    w_o = layer.attention_output.kernel.numpy().reshape(N * d, OUT)
    return context @ w_o + layer.attention_output.bias.numpy(), probs


def test_probability_rows_sum_to_one_and_masked_keys_get_zero():
    layer = _attention()
    qk, v = _inputs(1)
    _, probs = layer(qk, qk, v, MASK)
    probs = probs.numpy()  # [B, N, T, T]
    assert probs.shape == (B, N, T, T)
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=0, atol=1e-6)
    assert np.all(probs[1, :, :, 4:] == 0.0)  # exactly 0
    assert np.all(probs[1, :, :, :4] > 0.0)
    assert probs.max() > 0.5  # not uniform


def test_head_split_numerics_match_numpy():
    layer = _attention()
    qk, v = _inputs(2)
    out, probs = layer(qk, qk, v, MASK)
    expected_out, expected_probs = _numpy_attention(layer, qk, qk, v, MASK)
    assert out.shape == (B, T, OUT)
    np.testing.assert_allclose(probs.numpy(), expected_probs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out.numpy(), expected_out, rtol=1e-4, atol=1e-4)


def test_queries_and_keys_can_come_from_different_inputs():
    layer = _attention()
    q, v = _inputs(3)
    k = np.roll(q, 1, axis=1)
    out, probs = layer(q, k, v)
    expected_out, expected_probs = _numpy_attention(layer, q, k, v, np.ones((B, T)))
    np.testing.assert_allclose(probs.numpy(), expected_probs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out.numpy(), expected_out, rtol=1e-4, atol=1e-4)


def test_no_mask_equals_all_ones_mask():
    layer = _attention()
    qk, v = _inputs(4)
    a, _ = layer(qk, qk, v)
    b, _ = layer(qk, qk, v, np.ones((B, T), np.int32))
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_kernel_shapes_are_per_head():
    layer = _attention()
    assert layer.query.kernel.shape == (D_QK, N, d)
    assert layer.key.kernel.shape == (D_QK, N, d)
    assert layer.value.kernel.shape == (D_V, N, d)
    assert layer.query.bias.shape == (N, d)
    assert layer.attention_output.kernel.shape == (N, d, OUT)


def test_attention_dropout_acts_on_the_context_not_on_the_returned_probabilities():
    layer = _attention(dropout_rate=0.5)
    qk, v = _inputs(5)
    out_eval, probs_eval = layer(qk, qk, v, MASK, training=False)
    out_train, probs_train = layer(qk, qk, v, MASK, training=True)
    np.testing.assert_array_equal(probs_train.numpy(), probs_eval.numpy())
    assert np.abs(out_train.numpy() - out_eval.numpy()).max() > 1e-3
    again, _ = layer(qk, qk, v, MASK, training=False)
    np.testing.assert_array_equal(again.numpy(), out_eval.numpy())


@pytest.mark.parametrize(
    "make, args",
    [
        (lambda: HeadProjection(N, d, 0.05, name="p"), lambda: [_inputs()[0]]),
        (
            lambda: HeadMerge(OUT, 0.05, name="m"),
            lambda: [np.random.RandomState(0).standard_normal((B, T, N, d)).astype(np.float32)],
        ),
        (
            lambda: MultiHeadAttention(N, d, OUT, 0.1, 0.05, name="a"),
            lambda: [_inputs()[0], _inputs()[0], _inputs()[1], MASK],
        ),
    ],
    ids=["HeadProjection", "HeadMerge", "MultiHeadAttention"],
)
def test_config_round_trip_gives_the_same_function(make, args):
    layer = make()
    inputs = args()
    layer(*inputs)
    randomize_affine_weights(layer)
    out = layer(*inputs)
    clone = type(layer).from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    clone(*inputs)
    clone.set_weights(layer.get_weights())
    as_list = lambda y: list(y) if isinstance(y, tuple) else [y]  # noqa: E731
    for a, b in zip(as_list(out), as_list(clone(*inputs)), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
