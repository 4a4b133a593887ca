"""The bottleneck block (paper Figure 1, section 3): where Q, K, V and the residuals come from."""

import numpy as np
import pytest

from mbert_lib.layers.transformer import MobileBertTransformer, block_kwargs
from tests.helpers import randomize_affine_weights, small_config

B, T, H, N = 2, 6, 32, 4
MASK = np.array([[1] * T, [1] * (T - 2) + [0] * 2], np.int32)

# name -> (block arguments, expected kernel widths (query in, value in, attention width))
VARIANTS = {
    "mobilebert": (
        dict(
            intra_bottleneck_size=16, key_query_shared_bottleneck=True, num_feedforward_networks=4
        ),
        (16, H, 16),
    ),
    "mobilebert_tiny": (
        dict(
            intra_bottleneck_size=16,
            key_query_shared_bottleneck=False,
            use_bottleneck_attention=True,
            num_feedforward_networks=2,
        ),
        (16, 16, 16),
    ),
    "ibbert_teacher": (
        dict(
            intra_bottleneck_size=64,
            key_query_shared_bottleneck=False,
            normalization_type="layer_norm",
            hidden_act="gelu",
            num_feedforward_networks=1,
        ),
        (H, H, 64),
    ),
    "bert": (
        dict(
            use_bottleneck=False,
            key_query_shared_bottleneck=False,
            normalization_type="layer_norm",
            hidden_act="gelu",
            num_feedforward_networks=1,
            intra_bottleneck_size=H,
        ),
        (H, H, H),
    ),
}


def _block(variant, **changes):
    kwargs = dict(
        hidden_size=H,
        intermediate_size=24,
        num_attention_heads=N,
        attention_probs_dropout_prob=0.0,
        hidden_dropout_prob=0.0,
    )
    layer = MobileBertTransformer(**{**kwargs, **VARIANTS[variant][0], **changes})
    layer(_x(), MASK)
    randomize_affine_weights(layer)
    return layer


def _x(seed=0):
    return np.random.RandomState(seed).standard_normal((B, T, H)).astype(np.float32)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_shapes_and_projection_widths(variant):
    layer = _block(variant)
    y, probs = layer(_x(1), MASK)
    assert y.shape == (B, T, H)
    assert probs.shape == (B, N, T, T)
    q_in, v_in, width = VARIANTS[variant][1]
    d = width // N
    assert layer.attention.query.kernel.shape == (q_in, N, d)
    assert layer.attention.key.kernel.shape == (q_in, N, d)
    assert layer.attention.value.kernel.shape == (v_in, N, d)
    assert layer.attention.attention_output.kernel.shape == (N, d, width)
    assert len(layer.ffns) == layer.num_feedforward_networks
    assert all(f.intermediate.kernel.shape == (width, 24) for f in layer.ffns)
    if layer.use_bottleneck:
        assert layer.bottleneck_input.kernel.shape == (H, width)
        assert layer.bottleneck_output.kernel.shape == (width, H)
    assert hasattr(layer, "bottleneck_attention") == layer.key_query_shared_bottleneck


@pytest.mark.parametrize("variant", ["mobilebert", "ibbert_teacher"])
def test_output_bottleneck_residual_is_the_block_input(variant):
    """With W_out = 0, b_out = 0: y = Norm(x), whatever happens inside the block."""
    layer = _block(variant)
    for w in (layer.bottleneck_output.kernel, layer.bottleneck_output.bias):
        w.assign(np.zeros(w.shape, np.float32))
    x = 3.0 * _x(2)
    expected = layer.bottleneck_output_norm(x).numpy()
    np.testing.assert_allclose(layer(x, MASK)[0].numpy(), expected, rtol=1e-5, atol=1e-5)


def test_attention_residual_is_the_input_bottleneck():
    """With zero attention output and identity FFNs, u = Norm(a), a = Norm(W_in x + b_in)."""
    layer = _block("mobilebert", num_feedforward_networks=1, normalization_type="no_norm")
    att = layer.attention.attention_output
    ffn = layer.ffns[0]
    for w in (att.kernel, att.bias, ffn.output_dense.kernel, ffn.output_dense.bias):
        w.assign(np.zeros(w.shape, np.float32))
    ffn.norm.gamma.assign(np.ones(ffn.norm.gamma.shape, np.float32))
    ffn.norm.beta.assign(np.zeros(ffn.norm.beta.shape, np.float32))
    x = _x(3)
    a = layer.bottleneck_input_norm(layer.bottleneck_input(x))
    u = layer.attention_norm(a)
    expected = layer.bottleneck_output_norm(layer.bottleneck_output(u) + x).numpy()
    np.testing.assert_allclose(layer(x, MASK)[0].numpy(), expected, rtol=1e-5, atol=1e-5)


def test_values_come_from_the_wide_input_in_mobilebert():
    """Changing x along a direction the Q/K bottleneck cannot see still changes the output."""
    layer = _block("mobilebert", intra_bottleneck_size=8)  # 2h < H
    x = _x(4)
    _, probs = layer(x, MASK)
    seen = np.concatenate(
        [layer.bottleneck_attention.kernel.numpy(), layer.bottleneck_input.kernel.numpy()], 1
    )  # [H, 2h]
    null = np.linalg.svd(seen.T)[2][-1]  # unseen by Q, K and a
    assert np.abs(null @ seen).max() < 1e-5
    x2 = x + 5.0 * null.astype(np.float32)
    y2, probs2 = layer(x2, MASK)
    np.testing.assert_allclose(probs2.numpy(), probs.numpy(), rtol=1e-4, atol=1e-5)
    assert np.abs(y2.numpy() - layer(x, MASK)[0].numpy()).max() > 1e-2


def test_no_hidden_dropout_inside_a_bottleneck_block():
    layer = _block("mobilebert", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    x = _x(5)
    np.testing.assert_array_equal(
        layer(x, MASK, training=True)[0].numpy(), layer(x, MASK, training=False)[0].numpy()
    )


@pytest.mark.parametrize("variant", ["mobilebert", "bert"])
def test_dropout_only_in_training(variant):
    layer = _block(variant, hidden_dropout_prob=0.3)
    x = _x(6)
    eval_a, eval_b = layer(x, MASK)[0].numpy(), layer(x, MASK, training=False)[0].numpy()
    np.testing.assert_array_equal(eval_a, eval_b)
    assert np.abs(layer(x, MASK, training=True)[0].numpy() - eval_a).max() > 1e-3


def test_width_not_divisible_by_heads_raises():
    with pytest.raises(ValueError, match="num_attention_heads"):
        MobileBertTransformer(hidden_size=H, intra_bottleneck_size=18, num_attention_heads=N)


@pytest.mark.parametrize(
    "preset",
    ["mobilebert", "mobilebert_tiny", "ibbert_large", "bert_base", "tiny_student", "tiny_teacher"],
)
def test_block_kwargs_copy_the_config(preset):
    config = small_config(preset)
    kwargs = block_kwargs(config)
    assert all(kwargs[k] == getattr(config, k) for k in kwargs)
    assert set(kwargs) == set(MobileBertTransformer().get_config()) - {"name", "trainable", "dtype"}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_config_round_trip_gives_the_same_function(variant):
    layer = _block(variant, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    x = _x(7)
    clone = MobileBertTransformer.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    clone(x, MASK)
    clone.set_weights(layer.get_weights())
    for a, b in zip(layer(x, MASK), clone(x, MASK)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
