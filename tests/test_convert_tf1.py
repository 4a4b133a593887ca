"""TF1 -> TF2 conversion: real TF1-format checkpoints (tf.compat.v1 Saver, released names)
converted and compared with the independent numpy forward pass on the same arrays."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from mbert_lib.cli import main
from mbert_lib.config import MobileBertConfig
from mbert_lib.convert import CheckpointMismatchError, load_encoder, load_pretrainer
from tests.convert_fixtures import (
    STUDENT,
    TEACHER,
    assert_matches_reference,
    bookkeeping,
    inputs,
    model_outputs,
    random_arrays,
    reference_shapes,
    write_tf1,
)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _checkpoint(tmp_path, config, extra=None, seed=0):
    arrays = random_arrays(reference_shapes(config), seed)
    config_file = str(tmp_path / "bert_config.json")
    config.to_json_file(config_file)
    prefix = write_tf1({**arrays, **(extra or {})}, str(tmp_path / "tf1" / "model.ckpt"))
    return arrays, config_file, prefix


def test_student_via_command_line_matches_numpy_reference(tmp_path):
    """FakeLayerNorm student through `python -m mbert_lib convert tf1` (a subprocess)."""
    arrays, config_file, prefix = _checkpoint(tmp_path, STUDENT)
    slots = bookkeeping(arrays)
    # The released student has classifier_activation false: a pooler in the file is unused.
    pooler = {
        "bert/pooler/dense/kernel": np.zeros((128, 128), np.float32),
        "bert/pooler/dense/bias": np.zeros((128,), np.float32),
    }
    prefix = write_tf1({**arrays, **slots, **pooler}, str(tmp_path / "tf1b" / "model.ckpt"))
    out = tmp_path / "tf2"
    env = {**os.environ, "PYTHONPATH": REPO}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mbert_lib",
            "convert",
            "tf1",
            "--bert_config_file",
            config_file,
            "--tf1_checkpoint_path",
            prefix,
            "--tf2_checkpoint_path",
            str(out),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    for name in slots:
        assert name in result.stdout
    assert "bert/pooler/dense/kernel" in result.stdout

    report = json.loads((out / "conversion.json").read_text())
    assert sorted(report["skipped"]) == sorted(slots)
    assert sorted(report["unused"]) == sorted(pooler)
    assert report["converted"] == len(arrays)
    assert MobileBertConfig.from_json_file(out / "bert_config.json") == STUDENT
    assert_matches_reference(load_pretrainer(out), arrays, STUDENT)


@pytest.mark.parametrize("use_model_prefix", [False, True])
def test_teacher_layer_norm_checkpoint_matches_numpy_reference(tmp_path, use_model_prefix):
    """LayerNorm teacher with a pooler (classifier_activation), NSP head kept."""
    arrays, config_file, prefix = _checkpoint(tmp_path, TEACHER, seed=3)
    out = tmp_path / "tf2"
    argv = [
        "convert",
        "tf1",
        "--bert_config_file",
        config_file,
        "--tf1_checkpoint_path",
        prefix,
        "--tf2_checkpoint_path",
        str(out),
    ] + (["--use_model_prefix"] if use_model_prefix else [])
    assert main(argv) == 0
    keys = [k for k, _ in tf.train.list_variables(str(out / "model.ckpt"))]
    model_keys = [k for k in keys if k.endswith("VARIABLE_VALUE") and "save_counter" not in k]
    assert all(k.startswith("model/") == use_model_prefix for k in model_keys)
    assert any("next_sentence/dense/kernel" in k for k in model_keys)
    assert any("encoder/pooler/kernel" in k for k in model_keys)
    assert_matches_reference(load_pretrainer(out), arrays, TEACHER)


def test_load_encoder_reads_only_the_encoder(tmp_path):
    arrays, config_file, prefix = _checkpoint(tmp_path, STUDENT, seed=5)
    out = tmp_path / "tf2"
    assert (
        main(
            [
                "convert",
                "tf1",
                "--bert_config_file",
                config_file,
                "--tf1_checkpoint_path",
                prefix,
                "--tf2_checkpoint_path",
                str(out),
            ]
        )
        == 0
    )
    encoder = load_encoder(out)
    word_ids, mask, type_ids, positions = inputs(STUDENT)
    full = model_outputs(load_pretrainer(out), word_ids, mask, type_ids, positions)
    alone = encoder({"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": type_ids})
    np.testing.assert_array_equal(alone["sequence_output"].numpy(), full["sequence_output"])


def test_removed_renamed_and_misshaped_variables_are_all_listed_and_nothing_written(tmp_path):
    arrays = random_arrays(reference_shapes(STUDENT))
    removed = "bert/encoder/layer_1/ffn_layer_2/output/FakeLayerNorm/beta"
    renamed = "bert/encoder/layer_0/attention/self/key/kernel"
    misshaped = "cls/predictions/extra_output_weights"
    broken = dict(arrays)
    del broken[removed]
    broken["bert/encoder/layer_0/attention/self/kee/kernel"] = broken.pop(renamed)
    broken[misshaped] = broken[misshaped][:, :-1]
    config_file = str(tmp_path / "bert_config.json")
    STUDENT.to_json_file(config_file)
    prefix = write_tf1(broken, str(tmp_path / "tf1" / "model.ckpt"))
    out = tmp_path / "out" / "tf2"

    from mbert_lib.convert import convert_tf1_checkpoint

    with pytest.raises(CheckpointMismatchError) as info:
        convert_tf1_checkpoint(config_file, prefix, out)
    err = info.value
    assert set(err.missing) == {removed, renamed}
    assert set(err.unexpected) == {"bert/encoder/layer_0/attention/self/kee/kernel"}
    assert set(err.misshaped) == {misshaped}
    for name in (removed, renamed, misshaped, "kee/kernel"):
        assert name in str(err)
    assert not out.exists()
    assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []


def test_existing_output_is_refused_and_left_alone(tmp_path, capsys):
    arrays, config_file, prefix = _checkpoint(tmp_path, STUDENT)
    out = tmp_path / "tf2"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert (
        main(
            [
                "convert",
                "tf1",
                "--bert_config_file",
                config_file,
                "--tf1_checkpoint_path",
                prefix,
                "--tf2_checkpoint_path",
                str(out),
            ]
        )
        == 2
    )
    assert "already exists" in capsys.readouterr().err
    assert os.listdir(out) == ["keep.txt"]


def test_loading_with_a_config_that_does_not_fit_fails_clearly(tmp_path):
    arrays, config_file, prefix = _checkpoint(tmp_path, STUDENT)
    out = tmp_path / "tf2"
    assert (
        main(
            [
                "convert",
                "tf1",
                "--bert_config_file",
                config_file,
                "--tf1_checkpoint_path",
                prefix,
                "--tf2_checkpoint_path",
                str(out),
            ]
        )
        == 0
    )
    other = STUDENT.replace(intra_bottleneck_size=64)
    with pytest.raises(ValueError, match="intra_bottleneck_size"):
        load_pretrainer(out, other)  # disagrees with the stored bert_config.json
    other.to_json_file(out / "bert_config.json")
    with pytest.raises(CheckpointMismatchError) as info:
        load_pretrainer(out)  # the stored config no longer fits the weights
    assert "encoder/blocks/0/bottleneck_input/kernel" in info.value.misshaped
    assert "found [128, 32], expected [128, 64]" in str(info.value)


def test_wrong_normalization_type_is_named(tmp_path):
    """A student checkpoint read with a LayerNorm config: the FakeLayerNorm names are listed."""
    arrays, _, prefix = _checkpoint(tmp_path, STUDENT)
    from mbert_lib.convert import read_tf1_checkpoint

    with pytest.raises(CheckpointMismatchError, match="normalization_type"):
        read_tf1_checkpoint(prefix, STUDENT.replace(normalization_type="layer_norm"))


def test_overwrite_replaces_the_output_and_leaves_no_temporary_directories(tmp_path):
    _, config_file, prefix = _checkpoint(tmp_path, STUDENT)
    out = tmp_path / "out" / "tf2"
    out.mkdir(parents=True)
    (out / "stale.txt").write_text("old")
    assert (
        main(
            [
                "convert",
                "tf1",
                "--bert_config_file",
                config_file,
                "--tf1_checkpoint_path",
                prefix,
                "--tf2_checkpoint_path",
                str(out),
                "--overwrite",
            ]
        )
        == 0
    )
    assert "stale.txt" not in os.listdir(out) and "bert_config.json" in os.listdir(out)
    assert os.listdir(tmp_path / "out") == ["tf2"]


def test_a_config_without_the_fields_that_set_the_shapes_is_refused(tmp_path):
    """Missing fields would silently take BERT-base's defaults (hidden 768, vocab 30522)
    and fail later with a page of shape mismatches; the file and the fields are named."""
    from mbert_lib.convert.tf1 import convert_tf1_checkpoint

    values = json.loads(STUDENT.to_json_string())
    del values["hidden_size"], values["vocab_size"]
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(values))
    with pytest.raises(ValueError, match=r"bert_config.json lacks \['vocab_size', 'hidden_size'\]"):
        convert_tf1_checkpoint(path, tmp_path / "nowhere", tmp_path / "out")
    assert not (tmp_path / "out").exists()
