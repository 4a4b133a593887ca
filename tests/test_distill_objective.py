"""The stage objective: losses equal a direct computation; the teacher is frozen and in
inference mode; each stage moves exactly its variables, at its rates."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import mbert_lib as m
from mbert_lib.distill.losses import (
    FmtWeights,
    attention_transfer,
    feature_map_transfer,
    pretraining_distillation,
)
from mbert_lib.distill.objective import DistillationObjective
from mbert_lib.distill.plan import plan_stages, stage_variables
from mbert_lib.distill.step import stage_step
from mbert_lib.train.objectives import model_inputs
from tests.distill_fixtures import tiny_distill_experiment
from tests.train_fixtures import tiny_batches

LAYERS = 3


def setup(overrides="", teacher_changes=None, layer_map=(0, 1, 2)):
    exp = tiny_distill_experiment(
        f"student.overrides.num_hidden_layers={LAYERS},teacher.overrides.num_hidden_layers=4,"
        "distillation.transfer_teacher_layers=[0, 1, 3]" + ("," + overrides if overrides else "")
    )
    tf_keras.utils.set_random_seed(3)
    teacher = m.build_pretrainer(exp.teacher.build_config().replace(**(teacher_changes or {})))
    teacher.trainable = False
    student = m.build_pretrainer(exp.student.build_config())
    return exp, teacher, student, plan_stages(exp.distillation, LAYERS)


def objective(exp, teacher, student, stage):
    return DistillationObjective(
        teacher, student, stage, (0, 1, 3), exp.distillation.layer_wise, exp.distillation.pretrain
    )


@pytest.fixture(scope="module")
def batch():
    return next(iter(tiny_batches(8)))


def counts(batch):
    return {
        "tokens": float(np.sum(batch["input_mask"])),
        "mlm_weight": float(np.sum(batch["masked_lm_weights"])),
        "examples": float(batch["input_mask"].shape[0]),
    }


def test_layer_wise_stage_loss_is_fmt_plus_at_of_its_layer_on_the_mapped_teacher_layer(batch):
    exp, teacher, student, plan = setup("distillation.layer_wise.attention_weight=0.5")
    stage = plan[2]  # student layer 2 <- teacher 3
    loss, metrics = objective(exp, teacher, student, stage).loss(batch, counts(batch), False)
    inputs = model_inputs(batch)
    t = teacher.encoder(inputs, training=False)
    s = student.encoder(inputs, training=False)
    mask = batch["input_mask"]
    fmt = feature_map_transfer(
        t["encoder_outputs"][3], s["encoder_outputs"][2], mask, FmtWeights(100.0, 5000.0, 5.0)
    )["fmt"]
    at = attention_transfer(t["attention_scores"][3], s["attention_scores"][2], mask)
    np.testing.assert_allclose(loss, fmt + 0.5 * at, rtol=1e-5)
    np.testing.assert_allclose(metrics["fmt"], fmt, rtol=1e-5)
    np.testing.assert_allclose(metrics["at"], at, rtol=1e-5)


def test_pd_and_auxiliary_losses_match_the_losses_module(batch):
    exp, teacher, student, plan = setup("distillation.pretrain.distill_ground_truth_ratio=0.3")
    inputs = model_inputs(batch)
    t, s = teacher(inputs, training=False), student(inputs, training=False)
    pd = pretraining_distillation(
        s["mlm_logits"],
        t["mlm_logits"],
        batch["masked_lm_ids"],
        batch["masked_lm_weights"],
        s["nsp_logits"],
        batch["next_sentence_labels"],
        alpha=0.3,
    )["loss"]
    loss, metrics = objective(exp, teacher, student, plan[-1]).loss(batch, counts(batch), False)
    np.testing.assert_allclose(loss, pd, rtol=1e-5)
    assert {"mlm_loss", "kd_loss", "nsp_loss"} <= set(metrics)

    exp, teacher, student, _ = setup(
        "distillation.strategy=auxiliary,distillation.pretrain.distill_ground_truth_ratio=0.3"
    )
    (aux,) = plan_stages(exp.distillation, LAYERS)
    loss, _ = objective(exp, teacher, student, aux).loss(batch, counts(batch), False)
    layer_terms = sum(
        feature_map_transfer(
            t["encoder_outputs"][tl], s["encoder_outputs"][sl], batch["input_mask"]
        )["fmt"]
        + attention_transfer(
            t["attention_scores"][tl], s["attention_scores"][sl], batch["input_mask"]
        )
        for sl, tl in enumerate((0, 1, 3))
    )
    np.testing.assert_allclose(loss, layer_terms + pd, rtol=1e-5)


def test_auxiliary_layer_mean_divides_the_layer_wise_sum_by_L(batch):
    exp, teacher, student, _ = setup("distillation.strategy=auxiliary")
    (aux,) = plan_stages(exp.distillation, LAYERS)
    args = (
        teacher,
        student,
        aux,
        (0, 1, 3),
        exp.distillation.layer_wise,
        exp.distillation.pretrain,
    )
    summed = DistillationObjective(*args).loss(batch, counts(batch), False)
    averaged = DistillationObjective(*args, layer_mean=True).loss(batch, counts(batch), False)
    layer_sum = summed[1]["fmt"] + summed[1]["at"]
    pd = summed[0] - layer_sum
    np.testing.assert_allclose(averaged[0], layer_sum / LAYERS + pd, rtol=1e-5)


def test_student_without_dropout_trains_on_its_inference_forward(batch):
    exp, teacher, student, plan = setup()
    student = m.build_pretrainer(
        exp.student.build_config().replace(
            hidden_dropout_prob=0.5, attention_probs_dropout_prob=0.5
        )
    )
    stage = plan[1]
    args = (
        teacher,
        student,
        stage,
        (0, 1, 3),
        exp.distillation.layer_wise,
        exp.distillation.pretrain,
    )
    quiet = DistillationObjective(*args, student_dropout=False)
    inference = quiet.loss(batch, counts(batch), training=False)[0]
    np.testing.assert_allclose(
        quiet.loss(batch, counts(batch), training=True)[0], inference, rtol=1e-6
    )
    noisy = DistillationObjective(*args).loss(batch, counts(batch), training=True)[0]
    assert not np.isclose(noisy, inference, rtol=1e-3)  # dropout on: another loss


def test_teacher_runs_in_inference_mode(batch):
    # A teacher with heavy dropout gives the same loss twice, equal to its inference output.
    exp, teacher, student, plan = setup(
        teacher_changes={"hidden_dropout_prob": 0.5, "attention_probs_dropout_prob": 0.5}
    )
    obj = objective(exp, teacher, student, plan[-1])
    first = obj.loss(batch, counts(batch), training=True)[0]
    second = obj.loss(batch, counts(batch), training=True)[0]
    np.testing.assert_allclose(first, second, rtol=1e-6)
    dropped = teacher(model_inputs(batch), training=True)["mlm_logits"]
    assert not np.allclose(dropped, teacher(model_inputs(batch), training=False)["mlm_logits"])


@pytest.mark.parametrize("stage_index", [1, 3])
def test_a_stage_moves_only_its_variables_at_its_rates_and_never_the_teacher(stage_index):
    # AdamW without decay: a first step moves each element by ≈ lr·sign(g), so the largest
    # move of each variable reveals its learning rate.
    exp, teacher, student, plan = setup(
        "trainer.optimizer.type=adamw,trainer.optimizer.weight_decay_rate=0.0,"
        "distillation.pretrain.learning_rate.warmup_steps=0"
    )
    stage = plan[stage_index]
    groups = stage_variables(student, stage)
    step = stage_step(objective(exp, teacher, student, stage), groups, exp.trainer.optimizer)
    teacher_before = [w.numpy().copy() for w in teacher.weights]
    before = {v.ref(): v.numpy().copy() for v in student.weights}
    iterator = iter(tiny_batches(16))
    step.train_step(iterator)
    for w, b in zip(teacher.weights, teacher_before):
        np.testing.assert_array_equal(w.numpy(), b, err_msg=f"teacher {w.name} changed")
    lr = stage.learning_rate.peak  # update 0, no warmup: the peak rate
    moved = {v.ref(): float(np.max(np.abs(v.numpy() - before[v.ref()]))) for v in student.weights}
    rate_of = {v.ref(): rate for rate, vs in groups.items() for v in vs}
    for v in student.weights:
        if v.ref() not in rate_of:
            assert moved[v.ref()] == 0.0, f"{v.name} is not trained in {stage.name}"
        else:  # ≤ lr·rate (less where |g| is near Adam's ε)
            assert moved[v.ref()] <= lr * rate_of[v.ref()] * 1.001, v.name
    for rate, variables in groups.items():
        largest = max(moved[v.ref()] for v in variables)
        assert largest == pytest.approx(lr * rate, rel=1e-2), rate
    if stage_index == 1:
        assert set(groups) == {1.0, 0.1}
        block_1 = {v.ref() for v in student.encoder.blocks[1].weights}
        assert {v.ref() for v in groups[1.0]} == block_1
    else:
        assert list(groups) == [1.0] and len(groups[1.0]) == len(student.trainable_variables)


@pytest.mark.slow
def test_a_bfloat16_step_trains_with_float32_losses(batch):
    from mbert_lib.train.strategy import precision_policy

    exp, teacher, student, plan = setup()
    reference = objective(exp, teacher, student, plan[-1]).loss(batch, counts(batch), False)[0]
    with precision_policy("bfloat16"):
        t16 = m.build_pretrainer(teacher.config)
        s16 = m.build_pretrainer(student.config)
    t16.set_weights(teacher.get_weights())
    s16.set_weights(student.get_weights())
    t16.trainable = False
    assert s16.encoder.blocks[0].compute_dtype == "bfloat16"
    assert s16.encoder.blocks[0].weights[0].dtype == tf.float32
    stage = plan[-1]
    groups = stage_variables(s16, stage)
    obj = objective(exp, t16, s16, stage)
    loss, _ = obj.loss(batch, counts(batch), False)
    assert loss.dtype == tf.float32
    np.testing.assert_allclose(float(loss), float(reference), rtol=5e-2)
    step = stage_step(obj, groups, exp.trainer.optimizer)
    assert np.isfinite(float(step.train_step(iter(tiny_batches(16)))["loss"]))
