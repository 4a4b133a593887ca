"""Output distillation: the targets, the loss against numpy, the transfer set, the refusals."""

import json

import numpy as np
import pytest
import tensorflow as tf

from mbert_lib.config_tree import apply_overrides
from mbert_lib.experiment.finetune import FinetuneExperiment
from mbert_lib.finetune import trainer
from mbert_lib.finetune.data import encode_task, select_task_data
from mbert_lib.finetune.objective import ClassificationObjective
from mbert_lib.finetune.task_distill import (
    read_teacher_logits,
    teacher_targets,
    write_teacher_logits,
)
from tests.finetune_fixtures import experiment, save_pretrained, tokenizer, write_sst2

QUIET = dict(show_progress=False, log=lambda _: None)


def softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_soft_targets_are_the_tempered_softmax_and_hard_ones_its_argmax():
    z = np.array([[2.0, -1.0], [0.1, 0.3], [-4.0, 4.0]])
    q, tau = teacher_targets(z, 4.0, "soft")
    np.testing.assert_allclose(q, softmax(z / 4.0), rtol=1e-6)
    assert tau.tolist() == [4.0] * 3
    assert q[0, 0] < softmax(z)[0, 0]  # τ > 1 flattens: the teacher's doubts grow
    hard, tau = teacher_targets(z, 4.0, "hard")
    assert hard.tolist() == [[1, 0], [0, 1], [0, 1]] and tau.tolist() == [1.0] * 3
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="temperature must be > 0"):
            teacher_targets(z, bad)


def test_the_distillation_loss_is_tau_squared_times_the_cross_entropy_at_tau():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(5, 3)).astype(np.float32)  # the student's, [B, C]
    q = softmax(rng.normal(size=(5, 3)))
    tau = np.array([1.0, 2.0, 2.0, 4.0, 1.0], np.float32)

    class Model:  # returns the fixed logits: the loss alone is under test
        def __call__(self, inputs, training=True):
            return {"logits": tf.constant(logits)}

    batch = {
        "input_word_ids": tf.zeros((5, 4), tf.int32),
        "input_mask": tf.ones((5, 4), tf.int32),
        "input_type_ids": tf.zeros((5, 4), tf.int32),
        "label": tf.constant(np.argmax(q, -1).astype(np.int32)),
        "target": tf.constant(q.astype(np.float32)),
        "temperature": tf.constant(tau),
    }
    objective = ClassificationObjective(Model())
    loss, _ = objective.loss(batch, objective.denominators(batch))
    p = softmax(logits / tau[:, None])
    expected = np.mean(tau**2 * -(q * np.log(p)).sum(-1))
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    # one-hot targets at τ = 1: exactly the plain cross-entropy of the labels
    onehot = {**batch, "target": tf.one_hot(batch["label"], 3), "temperature": tf.ones(5)}
    plain = {k: v for k, v in batch.items() if k not in ("target", "temperature")}
    a, _ = objective.loss(onehot, objective.denominators(onehot))
    b, _ = objective.loss(plain, objective.denominators(plain))
    assert float(a) == pytest.approx(float(b), rel=1e-6)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("task_distill")
    return save_pretrained(root / "pretrained"), write_sst2(root / "data"), root


def _logits(root, n, classes=2, task="sst2", sha=None, name="teacher.npy"):
    z = np.random.default_rng(3).normal(size=(n, classes)).astype(np.float32)
    path = root / name
    write_teacher_logits(path, z, task, sha or tokenizer().sha256, {"model": "test"})
    return path, z


def test_the_transfer_set_follows_the_labeled_budget_with_the_teachers_targets(setup):
    init, data_dir, root = setup
    path, z = _logits(root, 256)
    exp = experiment(
        init,
        data_dir,
        f"task.max_train_examples=40,distill.teacher_logits={path},distill.temperature=2.0",
    )
    encoded = encode_task(exp.task, tokenizer())
    plain = select_task_data(encoded, exp.task)
    data = select_task_data(encoded, exp.task, exp.distill)
    assert data.labeled == 40 and len(data.train) == 256 and plain.labeled is None
    np.testing.assert_array_equal(data.train.labels[:40], plain.train.labels)  # same budget
    np.testing.assert_array_equal(data.train.targets[:40], np.eye(2)[plain.train.labels])
    assert data.train.temperatures[:40].tolist() == [1.0] * 40
    # the budget: 40 of 256 drawn with data_seed 0; the transfer set: the other 216, in order
    budget = np.sort(np.random.default_rng(0).choice(256, size=40, replace=False))
    rest = np.setdiff1d(np.arange(256), budget)
    np.testing.assert_array_equal(
        data.train.features["input_word_ids"][40:], encoded.train.features["input_word_ids"][rest]
    )
    np.testing.assert_allclose(data.train.targets[40:], softmax(z[rest] / 2.0), rtol=1e-5)
    assert data.train.temperatures[40:].tolist() == [2.0] * 216


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(n=255), r"shape \(255, 2\).*expected \[256, 2\]"),
        (dict(n=256, classes=3), r"expected \[256, 2\]"),
        (dict(n=256, task="cola"), "expected"),
        (dict(n=256, sha="0" * 64), "another tokenizer"),
    ],
)
def test_logits_of_another_task_size_or_tokenizer_are_refused(setup, kwargs, message):
    _, _, root = setup
    path, _ = _logits(root, name="bad.npy", **kwargs)
    with pytest.raises(ValueError, match=message):
        read_teacher_logits(path, "sst2", 256, 2, tokenizer().sha256)


def test_a_missing_sidecar_and_an_all_labeled_budget_are_refused(setup):
    init, data_dir, root = setup
    path, _ = _logits(root, 256, name="alone.npy")
    (root / "alone.json").unlink()
    with pytest.raises(ValueError, match=r"alone\.json is missing"):
        read_teacher_logits(path, "sst2", 256, 2, tokenizer().sha256)
    path, _ = _logits(root, 256)
    exp = experiment(init, data_dir, f"distill.teacher_logits={path}")
    with pytest.raises(ValueError, match="every training example keeps its label"):
        select_task_data(encode_task(exp.task, tokenizer()), exp.task, exp.distill)


@pytest.mark.parametrize("bad", ["0", "-2", ".nan", ".inf"])
def test_a_temperature_that_is_not_positive_and_finite_is_refused(bad):
    with pytest.raises(ValueError, match="distill.temperature must be (> 0|a finite number)"):
        apply_overrides(FinetuneExperiment(), f"distill.temperature={bad}")


@pytest.mark.slow
def test_a_run_with_soft_targets_makes_train_steps_updates_and_one_evaluation(setup, tmp_path):
    init, data_dir, root = setup
    path, _ = _logits(root, 256)
    exp = experiment(
        init,
        data_dir,
        f"task.max_train_examples=32,distill.teacher_logits={path},trainer.train_steps=7",
    )
    record = trainer.run_finetuning(exp, tmp_path / "run", **QUIET)
    assert [h["step"] for h in record["history"]] == [7]
    history = json.loads((tmp_path / "run" / "history.json").read_text())
    assert len(history) == 1


def test_a_label_budget_of_one_class_and_a_negative_data_seed_are_refused(setup):
    init, data_dir, _ = setup
    with pytest.raises(ValueError, match="task.data_seed must be in"):
        experiment(init, data_dir, "task.data_seed=-1")
    exp = experiment(init, data_dir, "task.max_train_examples=1")
    with pytest.raises(ValueError, match="1 training examples drawn .* all have one label"):
        select_task_data(encode_task(exp.task, tokenizer()), exp.task)
