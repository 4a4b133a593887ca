"""What keeps a run directory to one run: the recorded-settings check every trainer shares, the
writer lock each trainer takes, and a failed checkpoint save that leaves nothing behind."""

import os

import pytest
import tensorflow as tf

from mbert_lib.distill.trainer import run_distillation
from mbert_lib.finetune.trainer import run_finetuning
from mbert_lib.run_lock import RunLockedError
from mbert_lib.train.checkpointing import RunCheckpoint
from mbert_lib.train.pretrain import run_pretraining
from mbert_lib.train.run_record import EXPERIMENT_FILE, check_same_run, record_experiment
from tests import finetune_fixtures
from tests.distill_fixtures import make_teacher_dir, tiny_distill_experiment
from tests.helpers import lock_held_by_another_process
from tests.train_fixtures import tiny_experiment

QUIET = {"show_progress": False, "log": lambda _: None}


def _lr(value: float):
    return tiny_experiment(f"trainer.learning_rate.peak={value}")


def _fixed_model(key: str) -> bool:
    return key.startswith("model.")


# ------------------------------------------------------------ the recorded settings
def test_a_new_directory_and_an_unchanged_run_pass(tmp_path):
    check_same_run(_lr(1e-3), tmp_path / "new", finished=False, fixed=_fixed_model)
    record_experiment(_lr(1e-3), tmp_path)
    notes = []
    check_same_run(_lr(1e-3), tmp_path, finished=True, fixed=_fixed_model, log=notes.append)
    check_same_run(_lr(1e-3), tmp_path, finished=False, fixed=_fixed_model, log=notes.append)
    assert notes == []


def test_a_finished_run_refuses_other_training_settings_and_names_them(tmp_path):
    record_experiment(_lr(1e-3), tmp_path)
    with pytest.raises(
        ValueError,
        match=r"finished run of other settings .*"
        r"changed: \['trainer.learning_rate.peak'\]",
    ):
        check_same_run(_lr(2e-3), tmp_path, finished=True, fixed=_fixed_model)
    logged = tiny_experiment("trainer.learning_rate.peak=1e-3,trainer.log_interval=7")
    check_same_run(logged, tmp_path, finished=True, fixed=_fixed_model)  # not a trained setting


def test_where_the_data_is_cached_is_not_a_training_setting_but_its_seed_is(tmp_path):
    record_experiment(tiny_experiment("data.cache_dir=runs/x/data"), tmp_path)
    moved = tiny_experiment(f"data.cache_dir={tmp_path / 'elsewhere'}")
    check_same_run(moved, tmp_path, finished=True, fixed=_fixed_model)
    with pytest.raises(ValueError, match=r"changed: \['data.seed'\]"):
        reseeded = tiny_experiment("data.cache_dir=runs/x/data,data.seed=7")
        check_same_run(reseeded, tmp_path, finished=True, fixed=_fixed_model)


def test_an_unfinished_run_with_checkpoints_keeps_its_fixed_settings(tmp_path):
    record_experiment(_lr(1e-3), tmp_path)
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "ckpt-4.index").write_bytes(b"")
    other_model = tiny_experiment(
        "trainer.learning_rate.peak=1e-3,model.overrides.num_hidden_layers=3"
    )
    with pytest.raises(
        ValueError,
        match=r"unfinished run of other settings .*"
        r"model.overrides.num_hidden_layers.*own settings",
    ):
        check_same_run(other_model, tmp_path, finished=False, fixed=_fixed_model)
    notes = []
    check_same_run(_lr(2e-3), tmp_path, finished=False, fixed=_fixed_model, log=notes.append)
    assert notes and notes[0].startswith(f"note: continuing {tmp_path}")


def test_a_longer_run_asked_of_a_finished_one_says_its_schedule_changes(tmp_path):
    record_experiment(tiny_experiment("trainer.train_steps=400"), tmp_path)
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "ckpt-400.index").write_bytes(b"")
    notes = []
    longer = tiny_experiment("trainer.train_steps=410")
    check_same_run(longer, tmp_path, finished=False, fixed=_fixed_model, log=notes.append)
    assert len(notes) == 2 and "from 400 to 410" in notes[1], notes
    assert "learning-rate schedule" in notes[1]
    notes.clear()
    other_rate = tiny_experiment("trainer.train_steps=400,trainer.learning_rate.peak=2e-3")
    check_same_run(other_rate, tmp_path, finished=False, fixed=_fixed_model, log=notes.append)
    assert len(notes) == 1 and "schedule" not in notes[0], notes


def test_a_record_left_by_an_attempt_without_checkpoints_gives_way(tmp_path):
    """A run that failed before its first checkpoint (bad data, a typo) holds nothing to
    protect: the corrected command runs, and says that it replaces the record."""
    record_experiment(_lr(1e-3), tmp_path)
    other_model = tiny_experiment("model.overrides.num_hidden_layers=3")
    notes = []
    check_same_run(other_model, tmp_path, finished=False, fixed=_fixed_model, log=notes.append)
    assert "saved no checkpoint" in notes[0] and "num_hidden_layers" in notes[0]


def test_an_unreadable_record_is_named(tmp_path):
    (tmp_path / EXPERIMENT_FILE).write_bytes(os.urandom(64) + b"\xff\xfe")
    with pytest.raises(ValueError, match=rf"{EXPERIMENT_FILE}: the run record .* cannot be read"):
        check_same_run(_lr(1e-3), tmp_path, finished=False, fixed=_fixed_model)


# ------------------------------------------------------------ one writer per directory
def _refused_while_held(directory, train):
    with lock_held_by_another_process(directory) as pid:
        with pytest.raises(
            RunLockedError,
            match=rf"in use by another run \(pid {pid} on .*"
            r"--model_dir",
        ):
            train()
    assert sorted(os.listdir(directory)) == [".lock"]  # nothing of its own written


def test_pretraining_into_a_directory_in_use_is_refused(tmp_path):
    _refused_while_held(
        tmp_path,
        lambda: run_pretraining(tiny_experiment("trainer.train_steps=2"), tmp_path, **QUIET),
    )


def test_distillation_into_a_directory_in_use_is_refused(tmp_path):
    experiment = tiny_distill_experiment(
        "student.overrides.num_hidden_layers=1,distillation.transfer_teacher_layers=[1]"
    )
    teacher = make_teacher_dir(tmp_path / "teacher", experiment)
    (tmp_path / "student").mkdir()
    _refused_while_held(
        tmp_path / "student",
        lambda: run_distillation(experiment, teacher, tmp_path / "student", **QUIET),
    )


def test_finetuning_into_a_directory_in_use_is_refused(tmp_path):
    pretrained = finetune_fixtures.save_pretrained(tmp_path / "pretrained")
    data = finetune_fixtures.write_sst2(tmp_path / "data")
    (tmp_path / "ft").mkdir()
    _refused_while_held(
        tmp_path / "ft",
        lambda: run_finetuning(
            finetune_fixtures.experiment(pretrained, data), tmp_path / "ft", **QUIET
        ),
    )


# ------------------------------------------------------------ a failed save
def test_a_checkpoint_save_that_fails_leaves_no_temporary_files(tmp_path, monkeypatch):
    from tensorflow.python.checkpoint import functional_saver

    checkpoint = RunCheckpoint(tmp_path, 3, v=tf.Variable(tf.zeros([64, 64])))
    checkpoint.save(1)
    before = sorted(os.listdir(tmp_path))

    def disk_full(*args, **kwargs):  # where a full disk stops TensorFlow's two-phase save
        raise tf.errors.ResourceExhaustedError(None, None, "No space left on device")

    monkeypatch.setattr(functional_saver.gen_io_ops, "merge_v2_checkpoints", disk_full)
    with pytest.raises(tf.errors.ResourceExhaustedError):
        checkpoint.save(2)
    assert sorted(os.listdir(tmp_path)) == before  # no ckpt-2_temp/, no ckpt-2.*
    monkeypatch.undo()
    assert checkpoint.save(3).endswith("ckpt-3")
