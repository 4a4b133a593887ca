"""`python -m mbert_lib distill` end to end on SYNTHETIC data with a tiny teacher."""

from pathlib import Path

import pytest

from mbert_lib.checkpoints import load_encoder
from mbert_lib.cli import main
from mbert_lib.experiment.distill import load_distill_experiment
from tests.distill_fixtures import make_teacher_dir

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

CONFIG = str(Path(__file__).resolve().parents[1] / "experiments" / "distill_synthetic_smoke.yaml")
SHORT = (
    "distillation.layer_wise.steps=3,distillation.pretrain.steps=4,"
    "distillation.pretrain.learning_rate.warmup_steps=1,trainer.eval_steps=1,"
    "trainer.batch_size=8"
)


@pytest.fixture(scope="module")
def teacher(tmp_path_factory):
    return make_teacher_dir(tmp_path_factory.mktemp("teacher"), load_distill_experiment(CONFIG))


def test_distill_runs_prints_its_plan_and_is_not_redone(teacher, tmp_path, capsys):
    model_dir = str(tmp_path / "student")
    args = [
        "distill",
        "--config_file",
        CONFIG,
        "--params_override",
        SHORT,
        "--teacher_dir",
        teacher,
        "--model_dir",
        model_dir,
        "--no_progress",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "strategy: progressive" in out and "transfer_teacher_layers:\n  - 1" in out
    assert "#   1. layer_0: FMT + AT of layer(s) [0], 3 steps" in out
    assert "#   2. pd: PD, 4 steps" in out
    assert "held-out: mlm_accuracy" in out
    encoder = load_encoder(model_dir)
    assert encoder.config.num_hidden_layers == 1
    assert main(args) == 0
    assert "already done" in capsys.readouterr().out


def test_shorthand_flags_and_clear_errors(teacher, tmp_path, capsys):
    bad_teacher = [
        "distill",
        "--config_file",
        CONFIG,
        "--teacher_dir",
        teacher,
        "--model_dir",
        str(tmp_path / "a"),
        "--no_progress",
        "--params_override",
        SHORT + ",teacher.overrides.intermediate_size=128",
    ]
    assert main(bad_teacher) == 2
    assert "intermediate_size=128 vs 512" in capsys.readouterr().err
    wide = [
        "distill",
        "--config_file",
        CONFIG,
        "--teacher_dir",
        teacher,
        "--model_dir",
        str(tmp_path / "b"),
        "--params_override",
        "student.overrides.hidden_size=64",
    ]
    assert main(wide) == 2
    assert "hidden_size: teacher 128, student 64" in capsys.readouterr().err
    strategy = [
        "distill",
        "--config_file",
        CONFIG,
        "--teacher_dir",
        teacher,
        "--model_dir",
        str(tmp_path / "c"),
        "--distribution_strategy",
        "spread",
    ]
    assert main(strategy) == 2
    assert "runtime.distribution_strategy must be one of" in capsys.readouterr().err


def test_a_finished_student_asked_with_other_transfer_weights_is_refused(teacher, tmp_path, capsys):
    model_dir = str(tmp_path / "student")
    args = [
        "distill",
        "--config_file",
        CONFIG,
        "--teacher_dir",
        teacher,
        "--model_dir",
        model_dir,
        "--no_progress",
        "--params_override",
    ]
    assert main(args + [SHORT]) == 0
    capsys.readouterr()
    assert main(args + [SHORT + ",distillation.layer_wise.attention_weight=3.0"]) == 2
    err = capsys.readouterr().err
    assert "finished run of other settings" in err
    assert "distillation.layer_wise.attention_weight" in err
    assert main(args + [SHORT + ",trainer.log_interval=2"]) == 0
    assert "already done" in capsys.readouterr().out
