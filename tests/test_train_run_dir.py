"""The two ends every trainer shares: finished_run (same run? done?) and writing_run."""

import os

import pytest

from mbert_lib.config_tree import apply_overrides
from mbert_lib.experiment import PretrainExperiment
from mbert_lib.run_lock import RunLockedError
from mbert_lib.train.checkpointing import write_done
from mbert_lib.train.run_dir import finished_run, writing_run
from mbert_lib.train.run_record import EXPERIMENT_FILE, recorded_experiment


def _start(experiment, model_dir, log, train_steps=10):
    return finished_run(
        experiment,
        model_dir,
        train_steps=train_steps,
        fixed=lambda key: key.startswith("model."),
        describe=lambda d: f"finished {d['train_steps']} steps",
        log=log.append,
    )


def test_a_fresh_directory_has_training_to_do(tmp_path):
    log = []
    assert _start(PretrainExperiment(), tmp_path / "run", log) is None
    assert log == []


def test_a_finished_run_is_returned_and_another_run_refused(tmp_path):
    experiment, log = PretrainExperiment(), []
    with writing_run(experiment, tmp_path):
        write_done(tmp_path, 10, eval={"mlm_accuracy": 0.5})
    done = _start(experiment, tmp_path, log)
    assert done["eval"] == {"mlm_accuracy": 0.5}
    assert log == [f"already done: {tmp_path} finished 10 steps; nothing to do"]
    assert _start(experiment, tmp_path, log, train_steps=20) is None  # asked for more: not done
    other = apply_overrides(experiment, [("trainer.seed", 99)])
    with pytest.raises(ValueError, match="finished run of other settings.*trainer.seed"):
        _start(other, tmp_path, log)


def test_writing_run_records_and_locks_on_the_chief_only(tmp_path):
    experiment = apply_overrides(PretrainExperiment(), [("trainer.seed", 7)])
    with writing_run(experiment, tmp_path / "chief"):
        assert recorded_experiment(PretrainExperiment, tmp_path / "chief") == experiment
        with pytest.raises(RunLockedError):
            with writing_run(experiment, tmp_path / "chief"):
                pass
    with writing_run(experiment, tmp_path / "worker", chief=False):
        assert not os.path.exists(tmp_path / "worker" / EXPERIMENT_FILE)
