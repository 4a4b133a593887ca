"""`python -m mbert_lib export tflite`: checkpoint + config in, a .tflite that matches Keras out."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import mbert_lib  # noqa: F401
from mbert_lib import build_classifier, get_preset
from mbert_lib.cli import main
from mbert_lib.export.interpreter import TFLiteModel
from mbert_lib.export.representative import random_features

T = 16
CONFIG = get_preset("tiny_student").replace(num_hidden_layers=2, vocab_size=96)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A classifier checkpoint (directory) and its bert_config.json."""
    root = tmp_path_factory.mktemp("cli")
    tf_keras.utils.set_random_seed(5)
    classifier = build_classifier(CONFIG, num_classes=2, dropout_rate=0.0)
    tf.train.Checkpoint(model=classifier).write(str(root / "ckpt" / "ckpt-1"))
    (root / "ckpt" / "checkpoint").write_text(
        'model_checkpoint_path: "ckpt-1"\nall_model_checkpoint_paths: "ckpt-1"\n'
    )
    CONFIG.to_json_file(root / "bert_config.json")
    return classifier, root


def _export(root, *extra):
    return main(
        [
            "export",
            "tflite",
            "--checkpoint",
            str(root / "ckpt"),
            "--config",
            str(root / "bert_config.json"),
            "--seq_length",
            str(T),
            *extra,
        ]
    )


@pytest.mark.parametrize("model,key", [("classifier", "logits"), ("encoder", "pooled_output")])
def test_fp32_export_matches_the_checkpointed_keras_model(saved, model, key, capsys):
    classifier, root = saved
    out = root / f"{model}.tflite"
    assert _export(root, "--precision", "fp32", "--model", model, "--output", str(out)) == 0
    assert f"wrote {out}: {model}, fp32" in capsys.readouterr().out
    features = random_features(3, T, CONFIG.vocab_size, seed=9)
    keras = classifier if model == "classifier" else classifier.encoder
    np.testing.assert_allclose(
        TFLiteModel(out).predict(features)[key],
        keras(features, training=False)[key].numpy(),
        atol=1e-4,
    )


def test_int8_from_a_calibration_file(saved, tmp_path):
    _, root = saved
    np.savez(tmp_path / "calib.npz", **random_features(8, T, CONFIG.vocab_size, seed=2))
    out = tmp_path / "int8.tflite"
    assert (
        _export(
            root,
            "--precision",
            "int8",
            "--model",
            "classifier",
            "--calibration",
            str(tmp_path / "calib.npz"),
            "--output",
            str(out),
        )
        == 0
    )
    logits = TFLiteModel(out).predict(random_features(2, T, CONFIG.vocab_size))["logits"]
    assert logits.shape == (2, 2) and np.all(np.isfinite(logits))


def test_int8_needs_calibration(saved, tmp_path, capsys):
    _, root = saved
    assert _export(root, "--precision", "int8", "--output", str(tmp_path / "x.tflite")) == 2
    assert "needs --calibration" in capsys.readouterr().err
    assert not (tmp_path / "x.tflite").exists()


def test_calibration_of_the_wrong_length_is_refused(saved, tmp_path, capsys):
    _, root = saved
    np.savez(tmp_path / "calib.npz", **random_features(4, T + 1, CONFIG.vocab_size))
    assert (
        _export(
            root,
            "--precision",
            "int8",
            "--calibration",
            str(tmp_path / "calib.npz"),
            "--output",
            str(tmp_path / "x.tflite"),
        )
        == 2
    )
    assert "seq_length 17, the model expects 16" in capsys.readouterr().err


def test_config_that_does_not_match_the_checkpoint(saved, tmp_path, capsys):
    _, root = saved
    CONFIG.replace(intermediate_size=64).to_json_file(tmp_path / "other.json")
    code = main(
        [
            "export",
            "tflite",
            "--checkpoint",
            str(root / "ckpt"),
            "--config",
            str(tmp_path / "other.json"),
            "--precision",
            "fp32",
            "--output",
            str(tmp_path / "x.tflite"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "ffns/0/intermediate/kernel  found [32, 128], expected [32, 64]" in err
    assert not (tmp_path / "x.tflite").exists()


def test_seq_length_beyond_the_position_table(saved, tmp_path, capsys):
    _, root = saved
    assert (
        _export(
            root,
            "--seq_length",
            "600",
            "--precision",
            "fp32",
            "--output",
            str(tmp_path / "x.tflite"),
        )
        == 2
    )
    assert "exceeds max_position_embeddings = 512" in capsys.readouterr().err


def test_an_existing_file_a_directory_and_a_needless_calibration_are_refused(
    saved, tmp_path, capsys
):
    _, root = saved
    taken = tmp_path / "taken.tflite"
    taken.write_bytes(b"mine")
    assert _export(root, "--precision", "fp32", "--output", str(taken)) == 2
    assert "already exists (use --overwrite)" in capsys.readouterr().err
    assert taken.read_bytes() == b"mine"
    assert _export(root, "--precision", "fp32", "--output", str(tmp_path)) == 2
    assert "is a directory; expected a .tflite file path" in capsys.readouterr().err
    assert (
        _export(
            root,
            "--precision",
            "fp32",
            "--random_calibration",
            "--output",
            str(tmp_path / "x.tflite"),
        )
        == 2
    )
    assert "are for --precision int8" in capsys.readouterr().err
    assert not (tmp_path / "x.tflite").exists()
