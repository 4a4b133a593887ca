"""One feed-forward network: Norm(W_2 act(W_1 h + b_1) + b_2 + h) (paper section 3.2)."""

import numpy as np
import pytest

from mbert_lib.layers.ffn import FeedForward
from tests.helpers import randomize_affine_weights
from tests.numpy_reference import activation

B, T, W, I = 2, 5, 12, 20


def _ffn(**kwargs):
    layer = FeedForward(I, **kwargs)
    layer(np.zeros((B, T, W), np.float32))
    randomize_affine_weights(layer)
    return layer


def _h(seed=0):
    return np.random.RandomState(seed).standard_normal((B, T, W)).astype(np.float32)


@pytest.mark.parametrize(
    "act, norm", [("relu", "no_norm"), ("gelu", "layer_norm"), ("gelu_new", "no_norm")]
)
def test_numerics_match_numpy(act, norm):
    layer = _ffn(activation=act, normalization_type=norm)
    h = _h(1)
    hidden = activation(
        act, h @ layer.intermediate.kernel.numpy() + layer.intermediate.bias.numpy()
    )  # [B, T, I]
    y = hidden @ layer.output_dense.kernel.numpy() + layer.output_dense.bias.numpy() + h
    if norm == "layer_norm":
        y = (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + 1e-12)
    expected = y * layer.norm.gamma.numpy() + layer.norm.beta.numpy()  # [B, T, W]
    np.testing.assert_allclose(layer(h).numpy(), expected, rtol=1e-4, atol=1e-4)


def test_output_width_follows_the_input():
    layer = _ffn()
    assert layer.intermediate.kernel.shape == (W, I)
    assert layer.output_dense.kernel.shape == (I, W)


def test_no_dropout_by_default_and_dropout_only_in_training():
    h = _h(2)
    plain = _ffn()
    np.testing.assert_array_equal(plain(h, training=True).numpy(), plain(h).numpy())
    dropping = _ffn(dropout_rate=0.5)
    np.testing.assert_array_equal(dropping(h, training=False).numpy(), dropping(h).numpy())
    assert np.abs(dropping(h, training=True).numpy() - dropping(h).numpy()).max() > 1e-3


def test_config_round_trip_gives_the_same_function():
    layer = _ffn(activation="gelu", normalization_type="layer_norm", dropout_rate=0.1)
    h = _h(3)
    clone = FeedForward.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    clone(h)
    clone.set_weights(layer.get_weights())
    np.testing.assert_array_equal(clone(h).numpy(), layer(h).numpy())
