"""LAMB against a numpy transcription of Algorithm 2 of You et al. (2019)."""

import numpy as np
import pytest
import tensorflow as tf

import mbert_lib
from mbert_lib.optim import Lamb, WarmupPolynomialDecay

# Lamb's default β₁, β₂ and ε, the ones every test here runs with.
B1, B2, EPS = 0.9, 0.999, 1e-6


def numpy_lamb(x, grads, lrs, decay, adapt, wd=0.01, bias_correction=True):
    """Runs len(grads) LAMB updates of one variable x, written from the paper (with Lamb's
    default β₁ = B1, β₂ = B2, ε = EPS); returns x after them, float64."""
    b1, b2, eps = B1, B2, EPS
    x = np.array(x, np.float64)
    m, v = np.zeros_like(x), np.zeros_like(x)
    for t, (g, lr) in enumerate(zip(grads, lrs), start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat, v_hat = (m / (1 - b1**t), v / (1 - b2**t)) if bias_correction else (m, v)
        u = m_hat / (np.sqrt(v_hat) + eps) + (wd * x if decay else 0.0)
        w_norm, u_norm = np.linalg.norm(x), np.linalg.norm(u)
        ratio = w_norm / u_norm if (adapt and w_norm > 0 and u_norm > 0) else 1.0
        x = x - lr * ratio * u
    return x


def _variables(rng):
    kernel = tf.Variable(rng.normal(size=(4, 3)).astype(np.float32), name="layer/dense/kernel")
    bias = tf.Variable(rng.normal(size=(3,)).astype(np.float32), name="layer/dense/bias")
    gamma = tf.Variable(rng.normal(size=(3,)).astype(np.float32), name="layer/norm/gamma")
    return kernel, bias, gamma


@pytest.mark.parametrize("bias_correction", [True, False])
def test_one_update_matches_numpy(bias_correction):
    rng = np.random.default_rng(0)
    variables = _variables(rng)
    start = [v.numpy() for v in variables]
    grads = [rng.normal(size=v.shape).astype(np.float32) for v in variables]
    opt = Lamb(learning_rate=0.05, weight_decay_rate=0.1, bias_correction=bias_correction)
    opt.apply_gradients(zip([tf.constant(g) for g in grads], variables))
    for var, x0, g, decayed in zip(variables, start, grads, [True, False, False]):
        want = numpy_lamb(
            x0, [g], [0.05], decay=decayed, adapt=decayed, wd=0.1, bias_correction=bias_correction
        )
        np.testing.assert_allclose(var.numpy(), want, rtol=1e-5, atol=1e-6, err_msg=var.name)
        assert not np.allclose(var.numpy(), x0)


def test_several_updates_with_schedule_match_numpy():
    rng = np.random.default_rng(1)
    variables = _variables(rng)
    start = [v.numpy() for v in variables]
    steps = 7
    grads = [[rng.normal(size=v.shape).astype(np.float32) for v in variables] for _ in range(steps)]
    schedule = WarmupPolynomialDecay(
        0.02, decay_steps=10, warmup_steps=3, end_learning_rate=1e-4, power=1.0
    )
    lrs = [float(schedule(t)) for t in range(steps)]
    opt = Lamb(learning_rate=schedule, weight_decay_rate=0.01)
    for step_grads in grads:
        opt.apply_gradients(zip([tf.constant(g) for g in step_grads], variables))
    assert int(opt.iterations) == steps
    for i, (var, x0, decayed) in enumerate(zip(variables, start, [True, False, False])):
        want = numpy_lamb(x0, [g[i] for g in grads], lrs, decay=decayed, adapt=decayed)
        np.testing.assert_allclose(var.numpy(), want, rtol=1e-5, atol=1e-6, err_msg=var.name)


def _same_shape_variables(rng, strategy):
    """Four [5, 3] variables: three layer-adapted kernels (one group) and a gamma."""
    names = ["a/kernel", "b/kernel", "c/kernel", "d/norm/gamma"]
    with strategy.scope():
        return [tf.Variable(rng.normal(size=(5, 3)).astype(np.float32), name=n) for n in names]


def test_shape_groups_match_numpy_and_the_per_variable_path():
    # One device: the variables of a shape are stacked and updated together;
    # under a strategy (OneDeviceStrategy here) each goes through update_step.
    rng = np.random.default_rng(3)
    grads = [[rng.normal(size=(5, 3)).astype(np.float32) for _ in range(4)] for _ in range(3)]
    finals = []
    for strategy in (tf.distribute.get_strategy(), tf.distribute.OneDeviceStrategy("/cpu:0")):
        variables = _same_shape_variables(np.random.default_rng(4), strategy)
        start = [v.numpy() for v in variables]
        with strategy.scope():
            opt = Lamb(learning_rate=0.05, weight_decay_rate=0.1)
            opt.build(variables)

        @tf.function
        def step(g):
            # called within this iteration only, so the late binding is the wanted one
            strategy.run(lambda g: opt.apply_gradients(zip(g, variables)), args=(g,))  # noqa: B023

        for step_grads in grads:
            step([tf.constant(g) for g in step_grads])
        for i, (var, x0) in enumerate(zip(variables, start)):
            decayed = i < 3
            want = numpy_lamb(
                x0, [g[i] for g in grads], [0.05] * 3, decay=decayed, adapt=decayed, wd=0.1
            )
            np.testing.assert_allclose(var.numpy(), want, rtol=1e-5, atol=1e-6, err_msg=var.name)
        finals.append([v.numpy() for v in variables])
    for grouped, single in zip(*finals):
        np.testing.assert_allclose(grouped, single, rtol=1e-6, atol=1e-7)


def test_trust_ratio_zero_norm_guards():
    zero_kernel = tf.Variable(tf.zeros([3, 2]), name="zero/kernel")  # ‖x‖ = 0
    kernel = tf.Variable(tf.ones([3, 2]), name="still/kernel")  # ‖u‖ = 0 below
    opt = Lamb(learning_rate=0.1, weight_decay_rate=0.0)
    g = np.full([3, 2], 0.5, np.float32)
    opt.apply_gradients([(tf.constant(g), zero_kernel), (tf.zeros([3, 2]), kernel)])
    want = numpy_lamb(np.zeros([3, 2]), [g], [0.1], decay=False, adapt=True, wd=0.0)
    np.testing.assert_allclose(zero_kernel.numpy(), want, rtol=1e-6)  # ratio 1, not 0/0
    assert np.all(np.isfinite(kernel.numpy()))
    np.testing.assert_array_equal(kernel.numpy(), np.ones([3, 2]))


def test_global_clipnorm_clips_all_gradients_together():
    a = tf.Variable(tf.ones([2]), name="a/kernel")
    b = tf.Variable(tf.ones([3]), name="b/kernel")
    ga, gb = np.array([3.0, 0.0], np.float32), np.array([0.0, 4.0, 0.0], np.float32)
    opt = Lamb(learning_rate=0.1, global_clipnorm=1.0)
    opt.apply_gradients([(tf.constant(ga), a), (tf.constant(gb), b)])
    # global norm 5 -> every gradient divided by 5; m_1 = (1 − β₁) g_clipped
    np.testing.assert_allclose(opt._momentums[0].numpy(), 0.1 * ga / 5, rtol=1e-6)
    np.testing.assert_allclose(opt._momentums[1].numpy(), 0.1 * gb / 5, rtol=1e-6)


def test_weight_decay_exclusion_on_model_variables():
    config = mbert_lib.get_preset("tiny_student").replace(vocab_size=64, num_hidden_layers=1)
    model = mbert_lib.build_pretrainer(config)
    opt = Lamb(learning_rate=0.01, weight_decay_rate=0.1)
    excluded = {v.name for v in model.trainable_variables if not opt.uses_weight_decay(v)}
    assert excluded and all(
        n.rsplit("/", 1)[-1] in ("gamma:0", "beta:0", "bias:0", "output_bias:0") for n in excluded
    )
    suffixes = {n.rsplit("/", 1)[-1] for n in excluded}
    assert suffixes == {"gamma:0", "beta:0", "bias:0", "output_bias:0"}
    decayed = {v.name for v in model.trainable_variables} - excluded
    assert any("word_embeddings/embeddings" in n for n in decayed)
    assert any("extra_output_weights" in n for n in decayed)
    assert all(n.endswith(("kernel:0", "embeddings:0", "extra_output_weights:0")) for n in decayed)
    # Behaviour: with zero gradients, LAMB moves only decayed variables,
    # each by x − η·(‖x‖/‖λx‖)·λx = (1 − η)·x.
    before = {v.name: v.numpy() for v in model.trainable_variables}
    opt.apply_gradients([(tf.zeros_like(v), v) for v in model.trainable_variables])
    for v in model.trainable_variables:
        want = before[v.name] * (0.99 if v.name in decayed else 1.0)
        np.testing.assert_allclose(v.numpy(), want, rtol=1e-5, atol=1e-7, err_msg=v.name)


def test_custom_patterns_and_separate_layer_adaptation():
    x = tf.Variable(tf.ones([2]), name="head/kernel")
    opt = Lamb(
        learning_rate=0.1,
        weight_decay_rate=0.5,
        exclude_from_weight_decay=["head"],
        exclude_from_layer_adaptation=[],
    )
    assert not opt.uses_weight_decay(x) and opt.uses_layer_adaptation(x)
    g = np.array([0.3, -0.1], np.float32)
    opt.apply_gradients([(tf.constant(g), x)])
    want = numpy_lamb(np.ones(2), [g], [0.1], decay=False, adapt=True, wd=0.5)
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-6)


def test_config_round_trip():
    schedule = WarmupPolynomialDecay(1.5e-3, 500_000, 10_000, 1.5e-7)
    opt = Lamb(schedule, weight_decay_rate=0.01, global_clipnorm=1.0, bias_correction=False)
    config = opt.get_config()
    again = Lamb.from_config(dict(config)).get_config()
    assert again == config
    assert config["learning_rate"]["config"]["end_learning_rate"] == 1.5e-7


def test_bad_hyperparameters_raise():
    with pytest.raises(ValueError, match="beta_1"):
        Lamb(beta_1=1.0)
    with pytest.raises(ValueError, match="weight_decay_rate"):
        Lamb(weight_decay_rate=-1.0)
