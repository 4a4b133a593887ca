"""Dropout, LayerNorm and Dense of mbert_lib.layers against Keras' own layers and numpy.

Each is a faster way to run a stock Keras layer: the tests hold them to the
stock layer's numbers (values and gradients), its weights, and, for Dropout,
its distribution.
"""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from mbert_lib.layers.fast.dense import Dense
from mbert_lib.layers.fast.dropout import Dropout
from mbert_lib.layers.fast.layer_norm import LayerNorm, xla_enabled, xla_layer_norm

RATE = 0.1


# ------------------------------------------------------------------- Dropout
def test_dropout_keeps_each_entry_with_probability_1_minus_p_and_rescales():
    x = tf.fill([64, 4, 64, 64], 2.0)  # 1,048,576 entries
    y = Dropout(RATE)(x, training=True).numpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], 2.0 / (1 - RATE), rtol=1e-6)  # x / (1 − p)
    n = y.size
    sigma = np.sqrt(n * RATE * (1 - RATE))  # binomial standard deviation
    assert abs(kept.sum() - n * (1 - RATE)) < 5 * sigma
    assert abs(y.mean() - 2.0) < 5 * 2.0 / (1 - RATE) * sigma / n  # E[dropout(x)] = x


def test_dropout_masks_are_independent_across_calls_and_positions():
    layer = Dropout(0.5)
    a = layer(tf.ones([256, 256]), training=True).numpy() != 0
    b = layer(tf.ones([256, 256]), training=True).numpy() != 0
    # Two calls: P(both kept) = 1/4 if independent.
    assert abs((a & b).mean() - 0.25) < 5 * np.sqrt(0.25 * 0.75 / a.size)
    # Neighbouring entries of one mask: no correlation either.
    assert abs((a[:, :-1] & a[:, 1:]).mean() - 0.25) < 5 * np.sqrt(0.25 * 0.75 / a.size)


def test_dropout_is_the_identity_at_inference_and_rate_zero():
    x = tf.random.normal([3, 5, 7])
    np.testing.assert_array_equal(Dropout(RATE)(x, training=False), x)
    np.testing.assert_array_equal(Dropout(0.0)(x, training=True), x)


def test_dropout_gradient_is_the_mask_times_the_scale():
    x = tf.random.normal([32, 4, 16, 16]) + 3.0  # no exact zeros
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = Dropout(RATE)(x, training=True)
        total = tf.reduce_sum(y)
    grad = tape.gradient(total, x).numpy()
    np.testing.assert_allclose(grad, (y.numpy() != 0) / (1 - RATE), rtol=1e-6)


def test_dropout_is_reproducible_under_set_random_seed():
    def masks():
        tf_keras.utils.set_random_seed(7)
        layer = Dropout(0.3)
        run = tf.function(lambda x: layer(x, training=True))
        return [run(tf.ones([40, 40])).numpy() for _ in range(2)]

    first, second = masks(), masks()
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    assert not np.array_equal(first[0], first[1])  # a new mask every step


@pytest.mark.parametrize("rate", [-0.1, 1.0])
def test_dropout_rejects_rates_outside_0_1(rate):
    with pytest.raises(ValueError, match="dropout rate"):
        Dropout(rate)


# ----------------------------------------------------------------- LayerNorm
def _keras_and_ours_layer_norm(width):
    keras = tf_keras.layers.LayerNormalization(epsilon=1e-12)
    ours = LayerNorm(epsilon=1e-12)
    keras.build([None, None, width])
    ours.build([None, None, width])
    rng = np.random.default_rng(0)
    weights = [
        rng.normal(1.0, 0.3, width).astype("float32"),
        rng.normal(0.0, 0.3, width).astype("float32"),
    ]
    keras.set_weights(weights)
    ours.set_weights(weights)
    return keras, ours


@pytest.fixture(params=[True, False], ids=["xla", "unfused"])
def layer_norm_mode(request):
    """Both ways a LayerNorm runs its formula: XLA (full runs), TensorFlow's kernels
    (fast mode)."""
    with xla_layer_norm(request.param):
        yield request.param


def test_layer_norm_matches_numpy_and_keras_values_and_gradients(layer_norm_mode):
    keras, ours = _keras_and_ours_layer_norm(48)
    assert (ours._xla_formula is not None) == layer_norm_mode
    x = tf.constant(np.random.default_rng(1).normal(2.0, 3.0, (4, 9, 48)).astype("float32"))
    gamma, beta = (w.numpy() for w in ours.weights)
    mu, var = x.numpy().mean(-1, keepdims=True), x.numpy().var(-1, keepdims=True)
    np.testing.assert_allclose(
        ours(x), gamma * (x - mu) / np.sqrt(var + 1e-12) + beta, rtol=1e-5, atol=1e-5
    )
    grads = []
    for layer in (keras, ours):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x)
            loss = tf.reduce_sum(y * tf.sin(y))
        grads.append(tape.gradient(loss, [x] + layer.trainable_weights))
    for k, o in zip(*grads):
        np.testing.assert_allclose(o, k, rtol=1e-4, atol=1e-4)


def test_layer_norm_has_keras_weights_and_dtypes(layer_norm_mode):
    keras, ours = _keras_and_ours_layer_norm(8)
    assert isinstance(ours, tf_keras.layers.LayerNormalization)
    assert [w.name.split("/")[-1].split(":")[0] for w in ours.weights] == ["gamma", "beta"]
    x = tf.cast(tf.random.normal([2, 3, 8]), tf.bfloat16)
    assert ours(x).dtype == keras(x).dtype
    np.testing.assert_allclose(ours(x), keras(x), rtol=1e-5, atol=1e-5)


def test_layer_norm_under_mixed_bfloat16_matches_keras(layer_norm_mode):
    tf_keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        keras, ours = _keras_and_ours_layer_norm(16)
        x = tf.random.normal([2, 5, 16])
        y_keras, y_ours = keras(x), ours(x)
    finally:
        tf_keras.mixed_precision.set_global_policy("float32")
    assert y_ours.dtype == y_keras.dtype == tf.bfloat16
    np.testing.assert_allclose(
        tf.cast(y_ours, tf.float32), tf.cast(y_keras, tf.float32), rtol=1e-2, atol=1e-2
    )


def test_many_layer_norms_called_eagerly_trace_once_each_without_a_retracing_warning():
    """A model with ≥ 5 LayerNorms, run eagerly (building a model, loading a checkpoint):
    each layer's XLA function is traced once, and TensorFlow, which counts traces per
    code object, sees no function that keeps retracing."""
    import logging

    messages = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())
    tf.get_logger().addHandler(handler)
    try:
        x = tf.random.normal([2, 3, 8])
        layers = [LayerNorm() for _ in range(8)]
        with xla_layer_norm(True):
            for layer in layers:
                x = layer(x)
    finally:
        tf.get_logger().removeHandler(handler)
    assert [layer._xla_formula.experimental_get_tracing_count() for layer in layers] == [1] * 8
    assert not [m for m in messages if "retracing" in m], messages


def test_fast_mode_builds_layer_norms_without_xla_and_both_give_one_result(monkeypatch):
    x = tf.constant(np.random.default_rng(3).normal(1.0, 2.0, (3, 7, 16)).astype("float32"))
    with xla_layer_norm(True):
        fused = LayerNorm()
        y_fused = fused(x)
    assert fused._xla_formula is not None
    for fast, expected in (("1", False), ("0", True)):
        monkeypatch.setenv("MBERT_FAST", fast)
        assert xla_enabled() is expected
    monkeypatch.setenv("MBERT_FAST", "1")
    unfused = LayerNorm()
    unfused.build(x.shape)
    unfused.set_weights(fused.get_weights())
    assert unfused._xla_formula is None
    np.testing.assert_allclose(unfused(x), y_fused, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------- Dense
@pytest.mark.parametrize("activation", [None, "relu", tf.nn.gelu])
def test_dense_matches_keras_dense_on_rank_3_inputs(activation):
    keras = tf_keras.layers.Dense(24, activation=activation)
    ours = Dense(24, activation=activation)
    x = tf.random.normal([5, 7, 16])
    keras.build(x.shape)
    ours.build(x.shape)
    ours.set_weights(keras.get_weights())
    grads = []
    for layer in (keras, ours):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x)
            loss = tf.reduce_sum(tf.square(y))
        grads.append([y] + tape.gradient(loss, [x] + layer.trainable_weights))
    for k, o in zip(*grads):
        np.testing.assert_allclose(o, k, rtol=1e-5, atol=1e-5)
    assert ours(x).shape == (5, 7, 24)


def test_dense_keeps_static_shapes_in_graphs():
    ours = Dense(6)
    fn = tf.function(lambda x: ours(x)).get_concrete_function(
        tf.TensorSpec([None, 11, 4], tf.float32)
    )
    assert fn.output_shapes.as_list() == [None, 11, 6]
