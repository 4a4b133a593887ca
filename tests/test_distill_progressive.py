"""`progressive_transfer` is the paper's algorithm and the trainer adds no numerics to it.

The loop alone, with plain steps (`minimise_in_steps`), ends on the same student as
`run_distillation`, which resumes, checkpoints, evaluates and records every stage
around the same loop. The stages come in the paper's order, each training only its
own variables, with the teacher frozen throughout.
"""

import numpy as np
import pytest
import tf_keras

from mbert_lib.checkpoints import load_pretrainer
from mbert_lib.distill.initialize import copy_from_teacher
from mbert_lib.distill.progressive import (
    TransferPlan,
    minimise_in_steps,
    progressive_transfer,
)
from mbert_lib.distill.trainer import run_distillation
from mbert_lib.models import build_pretrainer
from mbert_lib.train.pretrain_data import strategy_and_data
from tests.distill_fixtures import LAYERS, make_teacher_dir, tiny_distill_experiment

QUIET = {"show_progress": False, "log": lambda _: None}


def test_stages_come_in_the_papers_order_and_train_only_their_own_variables():
    experiment = tiny_distill_experiment()
    tf_keras.utils.set_random_seed(0)
    teacher = build_pretrainer(experiment.teacher.build_config())
    student = build_pretrainer(experiment.student.build_config())
    plan = TransferPlan.of(experiment.distillation, LAYERS, LAYERS)
    calls = []

    def record(stage, objective, groups):
        assert not teacher.trainable and objective.stage is stage
        calls.append((stage.name, {rate: {v.ref() for v in vs} for rate, vs in groups.items()}))

    assert progressive_transfer(teacher, student, plan, record) is student
    assert [name for name, _ in calls] == ["layer_0", "layer_1", "pd"]
    blocks = [{v.ref() for v in b.trainable_variables} for b in student.encoder.blocks]
    embedding = {v.ref() for v in student.encoder.embedding.trainable_variables}
    lw = experiment.distillation.layer_wise
    lower = lw.current_lr_multiplier * lw.lower_lr_multiplier
    assert calls[0][1] == {1.0: blocks[0], lower: embedding}
    assert calls[1][1] == {1.0: blocks[1], lower: embedding | blocks[0]}
    assert calls[2][1] == {1.0: {v.ref() for v in student.trainable_variables}}


@pytest.mark.slow
def test_the_papers_loop_alone_ends_where_the_trainer_ends(tmp_path):
    experiment = tiny_distill_experiment("distillation.student_dropout=false")
    teacher_dir = make_teacher_dir(tmp_path / "teacher", experiment)
    run_distillation(experiment, teacher_dir, tmp_path / "run", **QUIET)
    trained = load_pretrainer(str(tmp_path / "run"))

    _, data = strategy_and_data(experiment, None)
    tf_keras.utils.set_random_seed(experiment.trainer.seed)
    teacher = load_pretrainer(teacher_dir, experiment.teacher.build_config())
    student = build_pretrainer(experiment.student.build_config())
    iterator = iter(data.train.repeat())
    copy_from_teacher(teacher, student)
    start = [w.numpy().copy() for w in student.weights]
    plan = TransferPlan.of(experiment.distillation, LAYERS, LAYERS)
    minimise = minimise_in_steps(iterator, experiment.trainer.optimizer)
    progressive_transfer(teacher, student, plan, minimise)

    moved = [not np.array_equal(w.numpy(), s) for w, s in zip(student.weights, start)]
    assert sum(moved) > len(moved) // 2  # it trained
    assert [w.name for w in trained.weights] == [w.name for w in student.weights]
    for ours, theirs in zip(student.weights, trained.weights):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-7)
