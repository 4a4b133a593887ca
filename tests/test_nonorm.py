"""NoNorm (paper section 3.3): y = γ ⊙ x + β per channel, and not a LayerNorm."""

import numpy as np
import pytest
import tf_keras

from mbert_lib.layers.nonorm import LAYER_NORM_EPSILON, NoNorm, make_norm

B, T, C = 2, 5, 16


def _random_affine(layer, rng):
    gamma = rng.standard_normal(C).astype(np.float32)
    beta = rng.standard_normal(C).astype(np.float32)
    layer.gamma.assign(gamma)
    layer.beta.assign(beta)
    return gamma, beta


def test_nonorm_is_elementwise_affine():
    rng = np.random.RandomState(0)
    x = (3.0 * rng.standard_normal((B, T, C)) + 2.0).astype(np.float32)  # [B, T, C]
    layer = NoNorm()
    layer.build(x.shape)
    gamma, beta = _random_affine(layer, rng)
    np.testing.assert_allclose(layer(x).numpy(), gamma * x + beta, rtol=1e-6, atol=1e-6)


def test_nonorm_is_not_layer_norm_with_the_same_gamma_beta():
    rng = np.random.RandomState(1)
    x = (3.0 * rng.standard_normal((B, T, C)) + 2.0).astype(np.float32)
    nonorm, layer_norm = make_norm("no_norm", "a"), make_norm("layer_norm", "b")
    nonorm.build(x.shape)
    layer_norm.build(x.shape)
    gamma, beta = _random_affine(nonorm, rng)
    layer_norm.gamma.assign(gamma)
    layer_norm.beta.assign(beta)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    expected_ln = gamma * (x - mean) / np.sqrt(var + LAYER_NORM_EPSILON) + beta
    np.testing.assert_allclose(layer_norm(x).numpy(), expected_ln, rtol=1e-4, atol=1e-4)
    assert np.abs(nonorm(x).numpy() - layer_norm(x).numpy()).max() > 1.0


def test_nonorm_does_not_depend_on_other_tokens_statistics():
    """Scaling one token scales its output linearly (minus β); LayerNorm would undo it."""
    rng = np.random.RandomState(2)
    x = rng.standard_normal((1, 1, C)).astype(np.float32)
    layer = NoNorm()
    layer.build(x.shape)
    _, beta = _random_affine(layer, rng)
    np.testing.assert_allclose(
        layer(5 * x).numpy() - beta, 5 * (layer(x).numpy() - beta), rtol=1e-5, atol=1e-5
    )


def test_nonorm_weights_are_gamma_then_beta_with_identity_init():
    layer = NoNorm()
    layer.build((None, C))
    names = [w.name.split("/")[-1].split(":")[0] for w in layer.weights]
    assert names == ["gamma", "beta"]  # LayerNormalization's order
    np.testing.assert_array_equal(layer.gamma.numpy(), np.ones(C))
    np.testing.assert_array_equal(layer.beta.numpy(), np.zeros(C))


def test_make_norm():
    assert isinstance(make_norm("no_norm", "n"), NoNorm)
    ln = make_norm("layer_norm", "n")
    assert isinstance(ln, tf_keras.layers.LayerNormalization)
    assert ln.epsilon == LAYER_NORM_EPSILON == 1e-12
    with pytest.raises(ValueError, match="normalization_type"):
        make_norm("batch_norm", "n")


def test_config_round_trip_gives_the_same_function():
    rng = np.random.RandomState(3)
    x = rng.standard_normal((B, T, C)).astype(np.float32)
    layer = NoNorm(name="norm")
    layer.build(x.shape)
    _random_affine(layer, rng)
    clone = NoNorm.from_config(layer.get_config())
    clone.build(x.shape)
    clone.set_weights(layer.get_weights())
    assert clone.name == "norm"
    np.testing.assert_array_equal(clone(x).numpy(), layer(x).numpy())
    restored = tf_keras.layers.deserialize(tf_keras.layers.serialize(layer))
    assert isinstance(restored, NoNorm)
