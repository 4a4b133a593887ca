"""GroupedOptimizer: per-variable learning rates, and why scaled gradients would not do."""

import numpy as np
import pytest
import tensorflow as tf

import mbert_lib  # noqa: F401
from mbert_lib.optim import GroupedOptimizer, Lamb


def _adam(lr):
    # Lamb without trust ratio or decay: a plain Adam step of size lr·m̂/(√v̂+ε).
    return Lamb(lr, weight_decay_rate=0.0, exclude_from_layer_adaptation=(".*",))


def _step(optimizer, variables, grads):
    optimizer.apply_gradients(zip(grads, variables))
    return variables


def test_each_group_moves_at_its_own_rate():
    a, b = tf.Variable([1.0, -2.0]), tf.Variable([[0.5, 0.5]])
    opt = GroupedOptimizer([_adam(1e-2), _adam(1e-3)])
    opt.build([[a], [b]])
    _step(opt, [a, b], [tf.constant([0.3, -0.7]), tf.constant([[2.0, -5.0]])])
    # First Adam step: Δ = −lr · g/(|g| + ε') ≈ −lr · sign(g).
    np.testing.assert_allclose(a.numpy(), [1.0 - 1e-2, -2.0 + 1e-2], rtol=1e-4)
    np.testing.assert_allclose(b.numpy(), [[0.5 - 1e-3, 0.5 + 1e-3]], rtol=1e-4)


def test_scaling_a_gradient_does_not_scale_an_adam_update():
    # The reason reduced-rate layers need their own optimizer.
    x, y = tf.Variable([1.0, 1.0]), tf.Variable([1.0, 1.0])
    g = tf.constant([0.2, -0.4])
    _step(_adam(1e-2), [x], [g])
    _step(_adam(1e-2), [y], [0.1 * g])
    np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-4)


def test_clipping_is_global_over_all_groups():
    grads = [tf.constant([3.0, 0.0]), tf.constant([0.0, 4.0])]  # global norm 5
    sgd = lambda: __import__("tf_keras").optimizers.SGD(1.0)  # noqa: E731
    a, b = tf.Variable([0.0, 0.0]), tf.Variable([0.0, 0.0])
    opt = GroupedOptimizer([sgd(), sgd()], global_clipnorm=1.0)
    opt.build([[a], [b]])
    _step(opt, [a, b], grads)
    np.testing.assert_allclose(a.numpy(), [-0.6, 0.0], rtol=1e-6)  # 3/5, not clipped alone
    np.testing.assert_allclose(b.numpy(), [0.0, -0.8], rtol=1e-6)


def test_checkpoint_round_trip_keeps_each_groups_slots(tmp_path):
    a, b = tf.Variable([1.0]), tf.Variable([2.0])
    opt = GroupedOptimizer([_adam(1e-2), _adam(1e-3)])
    opt.build([[a], [b]])
    _step(opt, [a, b], [tf.constant([1.0]), tf.constant([1.0])])
    path = tf.train.Checkpoint(opt=opt, a=a, b=b).write(str(tmp_path / "ckpt"))
    a2, b2 = tf.Variable([0.0]), tf.Variable([0.0])
    opt2 = GroupedOptimizer([_adam(1e-2), _adam(1e-3)])
    opt2.build([[a2], [b2]])
    tf.train.Checkpoint(opt=opt2, a=a2, b=b2).read(path).assert_existing_objects_matched()
    assert int(opt2.iterations) == 1
    for o1, o2 in zip(opt.optimizers, opt2.optimizers):
        for s1, s2 in zip(o1.variables(), o2.variables()):
            np.testing.assert_array_equal(s1.numpy(), s2.numpy())


def test_bad_use_is_refused():
    a = tf.Variable([1.0])
    with pytest.raises(ValueError, match="clips its gradients itself"):
        GroupedOptimizer([Lamb(1e-3, global_clipnorm=1.0)])
    opt = GroupedOptimizer([_adam(1e-3), _adam(1e-3)])
    with pytest.raises(ValueError, match="before applying"):
        opt.apply_gradients([(tf.constant([1.0]), a)])
    with pytest.raises(ValueError, match="in groups 0 and 1"):
        opt.build([[a], [a]])
    opt = GroupedOptimizer([_adam(1e-3)])
    opt.build([[a]])
    with pytest.raises(ValueError, match="in no group"):
        opt.apply_gradients([(tf.constant([1.0]), tf.Variable([0.0]))])
