"""Stage-aware checkpoints: a killed distillation resumes in its stage at its step and ends
where an uninterrupted run ends; a finished stage (and run) is never redone."""

import os
import shutil

import numpy as np
import pytest

from mbert_lib.checkpoints import load_encoder, load_pretrainer
from mbert_lib.distill import trainer as distill_trainer
from mbert_lib.distill.trainer import STAGE_DONE_FILE, run_distillation
from mbert_lib.train import progress
from mbert_lib.train.checkpointing import read_done
from tests.distill_fixtures import make_teacher_dir, tiny_distill_experiment

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

# A 1-layer student learns teacher layer 1 (of 2): stage layer_0 (3 steps), then PD (4 steps).
RUN = (
    "student.overrides.num_hidden_layers=1,distillation.transfer_teacher_layers=[1],"
    "trainer.checkpoint_interval=2"
)
QUIET = {"show_progress": False, "log": lambda _: None}


@pytest.fixture(scope="module")
def teacher(tmp_path_factory):
    return make_teacher_dir(tmp_path_factory.mktemp("teacher"), tiny_distill_experiment(RUN))


@pytest.fixture(scope="module")
def straight(teacher, tmp_path_factory):
    model_dir = str(tmp_path_factory.mktemp("straight"))
    run_distillation(tiny_distill_experiment(RUN), teacher, model_dir, **QUIET)
    return model_dir


def test_killed_run_resumes_in_its_stage_and_finishes_like_an_uninterrupted_one(
    teacher, straight, tmp_path, monkeypatch
):
    model_dir, experiment = str(tmp_path), tiny_distill_experiment(RUN)
    update, steps = progress.Progress.update, []

    def killed_after_6_updates(self, metrics):  # 3 layer-wise + 3 PD steps
        update(self, metrics)
        steps.append(1)
        if len(steps) == 6:
            raise KeyboardInterrupt("simulated kill")

    monkeypatch.setattr(progress.Progress, "update", killed_after_6_updates)
    with pytest.raises(KeyboardInterrupt):
        run_distillation(experiment, teacher, model_dir, **QUIET)
    monkeypatch.undo()
    first_stage = os.path.join(model_dir, "stages", "00_layer_0")
    assert read_done(model_dir) is None
    assert os.path.exists(os.path.join(first_stage, STAGE_DONE_FILE))
    assert not os.path.exists(os.path.join(model_dir, "stages", "01_pd", STAGE_DONE_FILE))
    finished_at = os.stat(os.path.join(first_stage, STAGE_DONE_FILE)).st_mtime_ns

    messages = []
    record = run_distillation(
        experiment, teacher, model_dir, show_progress=False, log=messages.append
    )
    assert any(m.startswith("stage 1/2 layer_0: done, skipped") for m in messages), messages
    assert any(m.startswith("stage 2/2 pd") and "ckpt-2 at step 2" in m for m in messages), messages
    assert os.stat(os.path.join(first_stage, STAGE_DONE_FILE)).st_mtime_ns == finished_at
    assert record["train_steps"] == 7
    resumed, uninterrupted = load_pretrainer(model_dir), load_pretrainer(straight)
    for a, b in zip(uninterrupted.weights, resumed.weights):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6, atol=1e-7, err_msg=a.name)
    assert record["eval"] == pytest.approx(read_done(straight)["eval"], rel=1e-5)


def test_a_stage_killed_after_its_last_checkpoint_is_finished_not_retrained(
    teacher, tmp_path, monkeypatch
):
    model_dir, experiment = str(tmp_path), tiny_distill_experiment(RUN)
    write_text = distill_trainer.atomic.write_text

    def kill_before_the_stage_marker(path, text):
        if path.endswith(STAGE_DONE_FILE):
            raise KeyboardInterrupt("killed before writing " + path)
        write_text(path, text)

    monkeypatch.setattr(distill_trainer.atomic, "write_text", kill_before_the_stage_marker)
    with pytest.raises(KeyboardInterrupt):
        run_distillation(experiment, teacher, model_dir, **QUIET)
    monkeypatch.undo()
    messages, updates = [], []
    update = progress.Progress.update
    monkeypatch.setattr(
        progress.Progress, "update", lambda self, m: (updates.append(1), update(self, m))
    )
    run_distillation(experiment, teacher, model_dir, show_progress=False, log=messages.append)
    assert any("resumed from" in m and "at step 3" in m for m in messages), messages
    assert len(updates) == 4  # only the PD stage trained


def test_finished_run_is_not_redone_and_leaves_a_loadable_model_directory(teacher, straight):
    weights = os.path.join(straight, "model.ckpt.index")
    before = os.stat(weights).st_mtime_ns
    messages = []
    record = run_distillation(
        tiny_distill_experiment(RUN), teacher, straight, show_progress=False, log=messages.append
    )
    assert messages[0].startswith("already done") and record == read_done(straight)
    assert os.stat(weights).st_mtime_ns == before
    names = set(os.listdir(straight))
    assert {
        "bert_config.json",
        "model.ckpt.index",
        "vocab.txt",
        "experiment.yaml",
        "training_done.json",
        "stages",
        "tensorboard",
    } <= names
    with (
        open(os.path.join(teacher, "vocab.txt")) as a,
        open(os.path.join(straight, "vocab.txt")) as b,
    ):
        assert a.read() == b.read()
    encoder = load_encoder(straight)
    assert encoder.config == tiny_distill_experiment(RUN).student.build_config()
    metrics = record["eval"]
    assert {"mlm_accuracy", "perplexity", "nsp_accuracy", "layer_0/at", "layer_0/fmt"} <= set(
        metrics
    )
    assert [s["stage"] for s in record["stages"]] == ["00_layer_0", "01_pd"]
    assert {"layer_0/fmt", "layer_0/at"} <= set(record["stages"][0]["eval"])


def test_the_student_copies_the_teachers_embedding_at_the_start(teacher, straight):
    from mbert_lib.distill.plan import plan_stages
    from mbert_lib.distill.trainer import load_stage_student

    experiment = tiny_distill_experiment(RUN)
    initial = load_stage_student(straight, None, experiment.student.build_config())
    t = load_pretrainer(teacher)
    np.testing.assert_array_equal(
        initial.encoder.embedding.word_embeddings.embeddings.numpy(),
        t.encoder.embedding.word_embeddings.embeddings.numpy(),
    )
    stages = plan_stages(experiment.distillation, 1)
    after = load_stage_student(straight, stages[0], experiment.student.build_config())
    assert not np.allclose(
        after.encoder.blocks[0].weights[0].numpy(), initial.encoder.blocks[0].weights[0].numpy()
    )


def test_another_strategy_or_teacher_in_the_same_model_dir_is_refused(teacher, straight, tmp_path):
    with pytest.raises(ValueError, match=r"changed: \['distillation.strategy'\]"):
        run_distillation(
            tiny_distill_experiment(RUN + ",distillation.strategy=joint"),
            teacher,
            straight,
            **QUIET,
        )
    with pytest.raises(ValueError, match="intra_bottleneck_size"):
        run_distillation(
            tiny_distill_experiment(RUN + ",teacher.overrides.intra_bottleneck_size=64"),
            teacher,
            str(tmp_path / "other"),
            **QUIET,
        )


def test_a_student_of_another_teacher_of_the_same_shape_is_refused(teacher, straight, tmp_path):
    """Finished or not, a student asked to go on with another teacher (same shape, other
    weights) is refused, naming both: it would be "done" for a teacher it never saw, or
    resume and learn from two."""
    other = make_teacher_dir(tmp_path / "other_teacher", tiny_distill_experiment(RUN), seed=7)
    recorded = read_done(straight)["teacher"]
    assert recorded == distill_trainer.teacher_identity(teacher)
    with pytest.raises(ValueError, match="distilled from another teacher .* Use another"):
        run_distillation(tiny_distill_experiment(RUN), other, straight, **QUIET)
    unfinished = tmp_path / "unfinished"
    os.makedirs(unfinished)
    with open(unfinished / distill_trainer.TEACHER_FILE, "w") as f:
        f.write(open(os.path.join(straight, distill_trainer.TEACHER_FILE)).read())
    with pytest.raises(ValueError, match="distilled from another teacher"):
        run_distillation(tiny_distill_experiment(RUN), other, str(unfinished), **QUIET)
    # the same teacher copied elsewhere is the same teacher
    copy = shutil.copytree(teacher, tmp_path / "copy")
    assert run_distillation(tiny_distill_experiment(RUN), str(copy), straight, **QUIET)


def test_a_damaged_stage_snapshot_is_named(straight, tmp_path):
    """The snapshots notebooks and the transfer summary read (load_stage_student) go through
    the one checkpoint reader: a truncated file is named, not an IndexError."""
    import shutil

    from mbert_lib.checkpoints import DamagedCheckpointError
    from mbert_lib.distill.plan import plan_stages
    from mbert_lib.distill.trainer import load_stage_student, stage_checkpoint

    copy = tmp_path / "copy"
    shutil.copytree(straight, copy)
    experiment = tiny_distill_experiment(RUN)
    stage = plan_stages(experiment.distillation, 1)[0]
    prefix = stage_checkpoint(copy, stage)
    data = f"{prefix}.data-00000-of-00001"
    with open(data, "r+b") as f:
        f.truncate(os.path.getsize(data) // 2)
    with pytest.raises(DamagedCheckpointError, match=f"{prefix}: the checkpoint's files are "):
        load_stage_student(copy, stage, experiment.student.build_config())
