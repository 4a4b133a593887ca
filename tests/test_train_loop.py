"""The shared train step: it learns, XLA and bfloat16 variants agree with float32."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import mbert_lib
from mbert_lib.optim import Lamb, WarmupPolynomialDecay
from mbert_lib.train.objectives import PretrainingObjective, model_inputs
from mbert_lib.train.step import make_train_step
from mbert_lib.train.strategy import create_strategy, precision_policy
from tests.train_fixtures import tiny_batches, tiny_config


def setup(jit_compile=False, schedule=None, seed=0):
    tf_keras.utils.set_random_seed(seed)
    model = mbert_lib.build_pretrainer(tiny_config())
    optimizer = Lamb(schedule or 1e-2, global_clipnorm=1.0)
    optimizer.build(model.trainable_variables)
    step = make_train_step(
        tf.distribute.get_strategy(),
        PretrainingObjective(model),
        optimizer,
        model.trainable_variables,
        jit_compile=jit_compile,
    )
    return model, optimizer, step


def test_a_few_steps_reduce_the_loss_and_report_lr_and_grad_norm():
    schedule = WarmupPolynomialDecay(1e-2, decay_steps=100, warmup_steps=3)
    model, optimizer, step = setup(schedule=schedule)
    iterator = iter(tiny_batches(8).repeat())  # one batch of 8, over and over
    history = [{k: float(v) for k, v in step(iterator).items()} for _ in range(25)]
    assert history[-1]["loss"] < history[0]["loss"] - 1.0, [h["loss"] for h in history]
    for i, h in enumerate(history):
        assert h["learning_rate"] == pytest.approx(float(schedule(i)), rel=1e-6)
        assert np.isfinite(h["grad_norm"]) and h["grad_norm"] > 0
        assert h["loss"] == pytest.approx(h["mlm_loss"] + h["nsp_loss"], rel=1e-5)
    assert int(optimizer.iterations) == 25


def test_grad_norm_is_the_global_norm_before_clipping():
    model, _, step = setup()
    batch = next(iter(tiny_batches(8)))
    objective = PretrainingObjective(model)
    with tf.GradientTape() as tape:
        loss, _ = objective.loss(batch, objective.denominators(batch), training=False)
    grads = tape.gradient(loss, model.trainable_variables)
    want = np.sqrt(
        sum(np.sum(tf.convert_to_tensor(g).numpy().astype(np.float64) ** 2) for g in grads)
    )
    got = float(step(iter([batch]))["grad_norm"])
    assert got == pytest.approx(want, rel=1e-4)
    assert got > 1.0  # so clipping to 1.0 was active


@pytest.mark.slow
def test_jit_compiled_step_matches_the_graph_step():
    batches = list(tiny_batches(24))
    plain_model, _, plain_step = setup(jit_compile=False)
    xla_model, _, xla_step = setup(jit_compile=True)
    for a, b in zip(plain_model.weights, xla_model.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    plain_it, xla_it = iter(batches), iter(batches)
    for _ in range(3):
        plain, xla = plain_step(plain_it), xla_step(xla_it)
        assert float(xla["loss"]) == pytest.approx(float(plain["loss"]), rel=1e-4)
    for a, b in zip(plain_model.trainable_variables, xla_model.trainable_variables):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-3, atol=1e-4, err_msg=a.name)


@pytest.mark.slow
def test_bfloat16_step_runs_with_float32_variables_and_loss():
    batch = next(iter(tiny_batches(8)))
    tf_keras.utils.set_random_seed(0)
    reference = mbert_lib.build_pretrainer(tiny_config())
    objective = PretrainingObjective(reference)
    want, _ = objective.loss(batch, objective.denominators(batch), training=False)
    with precision_policy("bfloat16"):
        tf_keras.utils.set_random_seed(0)
        model = mbert_lib.build_pretrainer(tiny_config())
        model.set_weights(reference.get_weights())
        assert model(model_inputs(batch))["mlm_logits"].dtype == tf.bfloat16
        optimizer = Lamb(1e-2, global_clipnorm=1.0)
        optimizer.build(model.trainable_variables)
        step = make_train_step(
            tf.distribute.get_strategy(),
            PretrainingObjective(model),
            optimizer,
            model.trainable_variables,
        )
        out = step(iter([batch]))
    assert tf_keras.mixed_precision.global_policy().name == "float32"  # restored
    assert out["loss"].dtype == tf.float32 and np.isfinite(float(out["loss"]))
    assert float(out["loss"]) == pytest.approx(float(want), rel=0.05)
    assert all(v.dtype == tf.float32 for v in model.trainable_variables)


def test_strategy_and_precision_names_are_checked():
    assert create_strategy("default") is tf.distribute.get_strategy()
    assert isinstance(create_strategy("one_device", ["/cpu:0"]), tf.distribute.OneDeviceStrategy)
    with pytest.raises(ValueError, match="runtime.distribution_strategy"):
        create_strategy("horovod")
    with pytest.raises(ValueError, match="runtime.mixed_precision"):
        with precision_policy("float16"):
            pass
