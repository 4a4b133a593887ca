"""Bad flags, bad files and a read-only disk at the command line: one line naming the culprit
and what was expected, exit status 2, no traceback, nothing written."""

import errno

import pytest

from mbert_lib.cli import main


def _fails(capsys, argv, message):
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2 and message in err and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["bench", "pretrain", "--batch_size", "-4"],
            "argument --batch_size: expected a positive integer, got -4",
        ),
        (
            ["bench", "distill", "--repeats", "many"],
            "argument --repeats: expected a positive integer, got 'many'",
        ),
        (
            ["bench", "latency", "--json", "results/", "--models", "tiny"],
            "argument --json: expected a file to write, got the directory 'results/'",
        ),
    ],
)
def test_a_bad_flag_value_names_the_flag(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["bench", "pretrain", "--seq_length", "100000"],
            "--seq_length 100000 exceeds tiny_teacher's max_position_embeddings (512)",
        ),
        (
            ["bench", "latency", "--json", "x.json", "--models", "tiny", "--seq_length", "100000"],
            "--seq_length 100000 exceeds tiny_mobilebert's max_position_embeddings (512)",
        ),
        (
            ["bench", "distill", "--seq_length", "16", "--max_predictions_per_seq", "20"],
            "--max_predictions_per_seq (20) exceeds --seq_length (16)",
        ),
    ],
)
def test_a_benchmark_shape_the_model_cannot_take_is_refused_before_it_is_built(
    capsys, argv, message
):
    _fails(capsys, argv, message)


def test_an_experiment_file_of_random_bytes_is_named(capsys, tmp_path):
    config = tmp_path / "experiment.yaml"
    config.write_bytes(bytes(range(128, 256)) * 4)
    _fails(
        capsys,
        ["pretrain", "--config_file", str(config), "--model_dir", str(tmp_path / "run")],
        f"{config}: not a text file",
    )
    assert not (tmp_path / "run").exists()


def test_a_read_only_output_directory_is_named_without_a_traceback(capsys, monkeypatch, tmp_path):
    """What a read-only mount raises on the first write (root ignores chmod, so the error
    is raised where the command would meet it)."""
    from mbert_lib.cli import pretrain

    target = str(tmp_path / "run" / "experiment.yaml")

    def read_only(args):
        raise OSError(errno.EROFS, "Read-only file system", target)

    monkeypatch.setattr(pretrain, "run", read_only)
    err = _fails(
        capsys,
        [
            "pretrain",
            "--config_file",
            "experiments/pretrain_tiny_teacher.yaml",
            "--model_dir",
            str(tmp_path / "run"),
        ],
        f"error: {target}: Read-only file system",
    )
    assert "resume" not in err


def test_a_tpu_strategy_without_a_tpu_names_the_field():
    from mbert_lib.train.strategy import create_strategy

    with pytest.raises(
        ValueError,
        match=r"runtime.distribution_strategy=tpu: no TPU found .*"
        r"set runtime.tpu_address",
    ):
        create_strategy("tpu", tpu_address="")
