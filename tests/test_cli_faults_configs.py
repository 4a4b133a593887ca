"""Bad settings at the command line: refused before anything trains or is written, one line
naming the key (or the flag, or the file) and what was expected, exit status 2."""

import errno
import math

import pytest

from mbert_lib.cli import main
from mbert_lib.experiment import (
    LearningRateSection,
    OptimizerSection,
    PretrainExperiment,
    apply_overrides,
)
from mbert_lib.runtime import REPO_ROOT
from tests.test_cli_faults import _fails
from tests.train_fixtures import TINY

CONFIG = str(REPO_ROOT / "experiments" / "pretrain_tiny_teacher.yaml")


def _pretrain(model_dir, overrides: str = "") -> list[str]:
    """`pretrain` of the tiny synthetic experiment, three steps, with `overrides`."""
    override = TINY + ",trainer.train_steps=3" + ("," + overrides if overrides else "")
    return [
        "pretrain",
        "--config_file",
        CONFIG,
        "--model_dir",
        str(model_dir),
        "--no_progress",
        "--params_override",
        override,
    ]


@pytest.mark.parametrize(
    "override, message",
    [
        ("trainer.learning_rate.peak=.inf", "trainer.learning_rate.peak must be a finite number"),
        ("trainer.learning_rate.peak=.nan", "trainer.learning_rate.peak must be a finite number"),
        ("trainer.learning_rate.end=-.inf", "trainer.learning_rate.end must be a finite number"),
        ("trainer.learning_rate.power=1e999", "trainer.learning_rate.power must be a finite"),
        ("trainer.optimizer.epsilon=0", "trainer.optimizer.epsilon must be > 0, got 0.0"),
        ("trainer.optimizer.epsilon=.inf", "trainer.optimizer.epsilon must be a finite number"),
        (
            "trainer.optimizer.weight_decay_rate=.nan",
            "trainer.optimizer.weight_decay_rate must be a finite number",
        ),
        (
            "trainer.optimizer.weight_decay_rate=-0.1",
            "trainer.optimizer.weight_decay_rate must be a finite number >= 0 (0: no weight decay)",
        ),
        ("trainer.optimizer.beta_1=.nan", "trainer.optimizer.beta_1 must be a finite number"),
        ("trainer.optimizer.beta_2=1.0", "trainer.optimizer.beta_2 must be in [0, 1), got 1.0"),
        (
            "trainer.optimizer.global_clipnorm=.inf",
            "trainer.optimizer.global_clipnorm must be a finite number",
        ),
        ("data.masked_lm_prob=.nan", "data.masked_lm_prob must be a finite number"),
        ("trainer.learning_rate.warmup_steps=.inf", "warmup_steps must be an integer, got inf"),
        (
            "trainer.train_steps=100000000000000000000000",
            "trainer.train_steps must be an integer that fits in 64 bits",
        ),
        ("trainer.seed=-1", "trainer.seed must be in [0, 2**32 - 1 = 4294967295]"),
        ("trainer.seed=4294967296", "trainer.seed must be in [0, 2**32 - 1 = 4294967295]"),
        (
            "model.overrides.initializer_range=.inf",
            "initializer_range must be a finite number > 0, got inf",
        ),
    ],
)
def test_a_number_setting_that_cannot_train_is_refused_naming_its_key(
    capsys, tmp_path, override, message
):
    """nan or ±inf in any number setting, a zero epsilon, a weight decay that is not a
    rate, an integer beyond int64, a seed NumPy refuses: refused when the experiment is
    read, before TensorFlow is loaded."""
    _fails(capsys, _pretrain(tmp_path / "run", override), message)
    assert not (tmp_path / "run").exists()


def test_the_sections_check_their_numbers_when_built_in_python_too():
    with pytest.raises(ValueError, match="trainer.learning_rate.peak must be a finite number"):
        LearningRateSection(peak=math.inf)
    with pytest.raises(ValueError, match="trainer.optimizer.epsilon must be > 0"):
        OptimizerSection(epsilon=0.0)
    with pytest.raises(ValueError, match="trainer.optimizer.weight_decay_rate"):
        OptimizerSection(weight_decay_rate=math.nan)
    assert OptimizerSection(weight_decay_rate=0.0).weight_decay_rate == 0.0  # off is fine
    assert LearningRateSection(end=0.0).end == 0.0
    # an integer too large for a float is refused like inf, the value shown as given
    with pytest.raises(ValueError, match=r"trainer.learning_rate.peak must be a finite number"):
        apply_overrides(PretrainExperiment(), [("trainer.learning_rate.peak", 10**400)])


@pytest.mark.parametrize("text", ["", "# only a comment\n\n   # and another\n"])
def test_an_experiment_file_without_settings_is_named(capsys, tmp_path, text):
    config = tmp_path / "empty.yaml"
    config.write_text(text, encoding="utf-8")
    _fails(
        capsys,
        ["pretrain", "--config_file", str(config), "--model_dir", str(tmp_path / "run")],
        f"{config}: the file holds no settings (it is empty, or only comments)",
    )
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "override, message",
    [
        (
            "trainer.batch_size=50000000",
            "trainer.batch_size: this run needs at least 652.8 GB of memory, more than "
            "this machine's 16.0 GB",
        ),
        (
            "data.vocab_size=400000000,model.overrides.vocab_size=400000000",
            "model.overrides.vocab_size (and data.vocab_size): this run needs at least",
        ),
    ],
)
def test_a_run_too_large_for_memory_is_refused_before_tensorflow_allocates(
    capsys, monkeypatch, tmp_path, override, message
):
    from mbert_lib.train import memory

    monkeypatch.setattr(memory, "physical_memory", lambda: 16 * 10**9)
    err = _fails(capsys, _pretrain(tmp_path / "run", override), message)
    assert "mbert_lib.train.memory has the estimate" in err
    assert not (tmp_path / "run").exists()


def test_the_memory_estimate_passes_the_tiny_run_and_skips_accelerators(monkeypatch):
    from mbert_lib.train import memory
    from tests.train_fixtures import tiny_experiment

    memory.check_memory(tiny_experiment(), memory=10**9)  # a few MB: fits in 1 GB
    huge = tiny_experiment("trainer.batch_size=50000000")
    with pytest.raises(ValueError, match="Lower trainer.batch_size"):
        memory.check_memory(huge, memory=10**9)
    monkeypatch.setattr(memory.tf.config, "list_physical_devices", lambda kind: ["a GPU"])
    memory.check_memory(huge, memory=10**9)  # the device's memory is not known here


def test_a_model_dir_that_is_a_file_is_named(capsys, tmp_path):
    file = tmp_path / "model"
    file.write_text("not a directory")
    _fails(
        capsys,
        _pretrain(file),
        f"--model_dir {file} is a file; expected a directory",
    )
    assert file.read_text() == "not a directory"


def test_a_run_that_fails_in_a_new_directory_leaves_nothing_there(capsys, monkeypatch, tmp_path):
    """A full disk in a run's first steps: reported in one line (as `reproduce` does), and the
    directory the run made (with its parents) is gone, lock and experiment record included."""
    import tensorflow as tf

    from mbert_lib.train import pretrain

    def disk_full(experiment, run, data):  # pretrain._train
        (tmp_path / "new" / "run" / "tensorboard").mkdir()
        raise tf.errors.ResourceExhaustedError(
            None,
            None,
            f"{run.model_dir}/checkpoints/ckpt-1_temp/part-00000; No space left on device",
        )

    monkeypatch.setattr(pretrain, "_train", disk_full)
    _fails(
        capsys,
        _pretrain(tmp_path / "new" / "run"),
        f"error: disk full ({tmp_path}/new/run/checkpoints/ckpt-1_temp/part-00000; No space "
        "left on device). Nothing was half-written",
    )
    assert not (tmp_path / "new").exists()


def _fail_in(directory):
    from mbert_lib.train.run_dir import writing_run
    from tests.train_fixtures import tiny_experiment

    with pytest.raises(OSError), writing_run(tiny_experiment(), directory):
        if directory.name == "resumable":
            (directory / "ckpt-1.index").write_text("")
        raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("name", ["existing", "resumable"])
def test_a_failed_run_keeps_a_directory_that_was_there_or_holds_a_checkpoint(tmp_path, name):
    directory = tmp_path / name
    if name == "existing":
        directory.mkdir()
    _fail_in(directory)
    assert (directory / "experiment.yaml").is_file()


def test_every_grid_point_is_checked_before_the_first_run(capsys, tmp_path):
    argv = [
        "finetune",
        "--init_checkpoint",
        str(tmp_path / "pretrained"),
        "--model_dir",
        str(tmp_path / "grid"),
        "--grid",
        "trainer.batch_size=[8,-1]",
    ]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert "grid point batch_size=-1,seed=0: trainer.batch_size must be > 0, got -1" in err
    assert "grid: " not in out and "Traceback" not in err  # no run started
    assert not (tmp_path / "grid").exists()
