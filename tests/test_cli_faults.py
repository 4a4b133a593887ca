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


@pytest.fixture(scope="module")
def config_dir(tmp_path_factory):
    """A directory holding only a bert_config.json (max_position_embeddings 32): enough for
    the export commands' checks, which all come before a model is loaded."""
    from tests.finetune_fixtures import CONFIG

    directory = tmp_path_factory.mktemp("config_only")
    CONFIG.to_json_file(directory / "bert_config.json")
    return directory


def _tflite(config_dir, out, *flags):
    return [
        "export",
        "tflite",
        "--checkpoint",
        str(config_dir),
        "--precision",
        "int8",
        "--seq_length",
        "16",
        "--output",
        str(out),
        *flags,
    ]


@pytest.mark.parametrize(
    "content, message",
    [
        ("npy", "a single array (a .npy file); expected an .npz of input_word_ids, input_mask"),
        (b"PK\x03\x04 not a zip at all", "not a readable .npz (File is not a zip file)"),
        (b"", "not a readable .npz"),
        ("truncated", "not a readable .npz"),
        ("floats", "['input_word_ids'] are not integer arrays"),
        ("short", "features have seq_length 8, the model expects 16"),
    ],
)
def test_a_calibration_file_that_is_not_the_npz_asked_for_is_named(
    capsys, tmp_path, config_dir, content, message
):
    import numpy as np

    path = tmp_path / "calibration.npz"
    ids = np.ones((4, 16), np.int32)
    features = {"input_word_ids": ids, "input_mask": ids, "input_type_ids": 0 * ids}
    if content == "npy":
        path = tmp_path / "calibration.npy"
        np.save(path, ids)
    elif content in ("truncated", "floats", "short"):
        if content == "floats":
            features["input_word_ids"] = ids.astype(np.float32)
        if content == "short":
            features = {name: array[:, :8] for name, array in features.items()}
        np.savez(path, **features)
        if content == "truncated":
            path.write_bytes(path.read_bytes()[:-40])
    else:
        path.write_bytes(content)
    out = tmp_path / "model.tflite"
    _fails(capsys, _tflite(config_dir, out, "--calibration", str(path)), f"--calibration {path}: ")
    _fails(capsys, _tflite(config_dir, out, "--calibration", str(path)), message)
    assert not out.exists()


@pytest.mark.parametrize("penalty", ["nan", "inf", "-inf", "0", "-20"])
def test_a_mask_penalty_that_masks_nothing_or_makes_nan_is_refused(
    capsys, tmp_path, config_dir, penalty
):
    out = tmp_path / "model.tflite"
    _fails(
        capsys,
        _tflite(config_dir, out, "--random_calibration", f"--int8_mask_penalty={penalty}"),
        f"--int8_mask_penalty must be a finite number > 0, got {float(penalty)}; a few tens "
        "is sensible: 20 (the default) already leaves a padded key a weight of about 2e-9",
    )
    assert not out.exists()


def test_a_savedmodel_longer_than_the_positions_is_refused(capsys, tmp_path):
    from tests.finetune_fixtures import save_pretrained

    checkpoint = save_pretrained(tmp_path / "model")
    out = tmp_path / "saved"
    _fails(
        capsys,
        [
            "export",
            "savedmodel",
            "--checkpoint",
            checkpoint,
            "--export_path",
            str(out),
            "--seq_length",
            "100000",
        ],
        "--seq_length 100000 exceeds the model's max_position_embeddings (32)",
    )
    assert not out.exists() and not (tmp_path / "saved_preprocess").exists()


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_safetensors_file_is_named(capsys, tmp_path, damage):
    import json

    from safetensors.numpy import save_file

    from tests.convert_fixtures import (
        STUDENT,
        hf_config,
        hf_tensors,
        random_arrays,
        reference_shapes,
    )

    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text(json.dumps(hf_config(STUDENT)))
    weights = hf / "model.safetensors"
    if damage == "garbage":
        weights.write_bytes(b"\x00\x01 these are not weights " * 10)
    else:
        tensors = hf_tensors(random_arrays(reference_shapes(STUDENT)))
        save_file(tensors, str(weights), metadata={"format": "pt"})
        weights.write_bytes(weights.read_bytes()[:-1000])
    out = tmp_path / "tf2"
    _fails(
        capsys,
        ["convert", "hf", "--model_dir", str(hf), "--tf2_checkpoint_path", str(out)],
        f"{weights}: not a readable safetensors file (",
    )
    assert not out.exists()


def test_a_json_that_cannot_be_written_is_refused_before_the_timing(capsys, monkeypatch, tmp_path):
    """A read-only directory (root ignores chmod, so the error is raised where the check
    meets it): refused while the flags are read, before a model is converted or timed."""
    from mbert_lib.cli import _args

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(_args.tempfile, "TemporaryFile", read_only)
    target = tmp_path / "results" / "latency.json"
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "latency", "--json", str(target), "--models", "tiny"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert (
        f"argument --json: cannot write {str(target)!r}: {tmp_path} does not take files "
        "(Read-only file system)" in err
    )
    assert not (tmp_path / "results").exists()


def test_a_file_where_a_directory_goes_is_named(capsys, tmp_path):
    workdir = tmp_path / "workdir"
    workdir.write_text("a file")
    _fails(
        capsys,
        ["bench", "latency", "--json", str(tmp_path / "x.json"), "--models", "tiny"]
        + ["--workdir", str(workdir)],
        f"error: {workdir} is a file; expected a directory there",
    )
    _fails(
        capsys,
        ["bench", "latency", "--json", str(tmp_path / "x.json"), "--models", "tiny"]
        + ["--workdir", str(workdir / "inside")],
        f"error: {workdir / 'inside'}: a part of this path is a file; expected directories",
    )
    assert not (tmp_path / "x.json").exists()
