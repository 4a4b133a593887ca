"""lamb_step_report predicts the next LAMB update exactly, without changing any state."""

import numpy as np
import pytest
import tensorflow as tf

from mbert_lib.optim import Lamb
from mbert_lib.optim.trust import lamb_step_report, short_variable_name
from tests.test_optim_lamb import numpy_lamb


def _setup(rng, clipnorm=None):
    kernel = tf.Variable(rng.normal(size=(5, 4)).astype(np.float32), name="enc/dense/kernel")
    bias = tf.Variable(rng.normal(size=(4,)).astype(np.float32), name="enc/dense/bias")
    opt = Lamb(learning_rate=0.05, weight_decay_rate=0.1, global_clipnorm=clipnorm)
    opt.build([kernel, bias])
    return [kernel, bias], opt


@pytest.mark.parametrize("clipnorm", [None, 0.5])
def test_report_predicts_the_update_after_earlier_steps(clipnorm):
    rng = np.random.default_rng(0)
    variables, opt = _setup(rng, clipnorm)
    start = [v.numpy() for v in variables]
    history = [[rng.normal(size=v.shape).astype(np.float32) for v in variables] for _ in range(3)]
    for grads in history[:2]:
        opt.apply_gradients(zip([tf.constant(g) for g in grads], variables))
    before = [v.numpy() for v in variables]
    slots = [s.numpy() for s in opt._momentums + opt._velocities]

    report = lamb_step_report(opt, [tf.constant(g) for g in history[2]], variables)

    for v, b in zip(variables, before):  # nothing moved
        np.testing.assert_array_equal(v.numpy(), b)
    for s, b in zip(opt._momentums + opt._velocities, slots):
        np.testing.assert_array_equal(s.numpy(), b)
    assert int(opt.iterations) == 2

    opt.apply_gradients(zip([tf.constant(g) for g in history[2]], variables))
    for row, v, b in zip(report.itertuples(), variables, before):
        moved = np.linalg.norm(v.numpy() - b)
        assert row.step_norm == pytest.approx(moved, rel=1e-4), row.variable
    kernel = report.iloc[0]
    assert kernel.adapted and kernel.decayed
    assert kernel.relative_step == pytest.approx(0.05, rel=1e-5)  # = η for adapted variables
    assert kernel.trust_ratio == pytest.approx(kernel.weight_norm / kernel.update_norm)
    bias = report.iloc[1]
    assert not bias.adapted and bias.trust_ratio == 1.0
    if clipnorm is None:  # and against the paper's formula
        want = numpy_lamb(
            start[0], [h[0] for h in history], [0.05] * 3, decay=True, adapt=True, wd=0.1
        )
        np.testing.assert_allclose(variables[0].numpy(), want, rtol=1e-5, atol=1e-6)


def test_bad_arguments():
    variables, opt = _setup(np.random.default_rng(1))
    with pytest.raises(ValueError, match="2 variables"):
        lamb_step_report(opt, [tf.zeros([5, 4])], variables)
    with pytest.raises(ValueError, match="no gradient"):
        lamb_step_report(opt, [None, tf.zeros([4])], variables)
    with pytest.raises(ValueError, match="Lamb"):
        lamb_step_report(tf.keras.optimizers.SGD(), [tf.zeros([4])], variables[1:])


def test_short_names():
    assert (
        short_variable_name("pretrainer/mobile_bert_encoder/layer_0/ffn_0/output/kernel:0")
        == "layer_0/ffn_0/output/kernel"
    )
    assert (
        short_variable_name("pretrainer/cls_predictions/output_bias")
        == "cls_predictions/output_bias"
    )
