"""Hugging Face <-> TF2: safetensors directories in the google/mobilebert-uncased layout,
built here from random arrays by transformers' naming rule, checked against numpy_reference."""

import json
import os

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file
from tokenizers import BertWordPieceTokenizer

from mbert_lib import get_preset
from mbert_lib.cli import main
from mbert_lib.config import PRESETS
from mbert_lib.convert import CheckpointMismatchError, convert_hf, load_pretrainer
from mbert_lib.convert.hf import hf_unrepresentable
from mbert_lib.convert.names import name_map
from mbert_lib.data import load_tokenizer
from tests.convert_fixtures import (
    STUDENT,
    TEACHER,
    assert_matches_reference,
    hf_config,
    hf_tensors,
    inputs,
    model_outputs,
    random_arrays,
    reference_shapes,
)

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "cafe",
    "the",
    "re",
    "##sume",
    "##s",
    "are",
    "na",
    "##ive",
    "!",
    "?",
    ",",
    ".",
    "model",
    "##ed",
    "un",
    "##known",
]
SENTENCES = ["Café résumés are NAÏVE?", "The models, unknown!", "zzz qqq.", "re-sumes"]


def _hf_dir(path, config, tensors, config_values=None):
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(config_values or hf_config(config)))
    save_file(tensors, str(path / "model.safetensors"), metadata={"format": "pt"})
    return path


@pytest.mark.parametrize("config", [STUDENT, TEACHER], ids=["student", "teacher"])
def test_hf_directory_matches_numpy_reference(tmp_path, config):
    arrays = random_arrays(reference_shapes(config), seed=7)
    model_dir = _hf_dir(tmp_path / "hf", config, hf_tensors(arrays))
    out = tmp_path / "tf2"
    assert (
        main(["convert", "hf", "--model_dir", str(model_dir), "--tf2_checkpoint_path", str(out)])
        == 0
    )
    model = load_pretrainer(out)
    assert model.config == config
    assert_matches_reference(model, arrays, config)
    report = json.loads((out / "conversion.json").read_text())
    assert "transformers_version" in " ".join(report["notes"])  # HF-only keys are reported


def test_tied_decoder_copies_and_buffers_are_skipped_and_listed(tmp_path):
    arrays = random_arrays(reference_shapes(STUDENT), seed=8)
    tensors = hf_tensors(arrays)
    tensors["cls.predictions.decoder.weight"] = tensors[
        "mobilebert.embeddings.word_embeddings.weight"
    ]
    tensors["cls.predictions.decoder.bias"] = tensors["cls.predictions.bias"]
    tensors["mobilebert.embeddings.position_ids"] = np.arange(64, dtype=np.int64)[None]
    report = convert_hf(_hf_dir(tmp_path / "hf", STUDENT, tensors), tmp_path / "tf2")
    assert sorted(report.skipped) == [
        "cls.predictions.decoder.bias",
        "cls.predictions.decoder.weight",
        "mobilebert.embeddings.position_ids",
    ]
    assert_matches_reference(load_pretrainer(tmp_path / "tf2"), arrays, STUDENT)


def test_token_table_read_from_its_tied_copy(tmp_path):
    arrays = random_arrays(reference_shapes(STUDENT), seed=9)
    tensors = hf_tensors(arrays)
    tensors["cls.predictions.decoder.weight"] = tensors.pop(
        "mobilebert.embeddings.word_embeddings.weight"
    )
    report = convert_hf(_hf_dir(tmp_path / "hf", STUDENT, tensors), tmp_path / "tf2")
    assert any("tied copy" in n for n in report.notes)
    assert_matches_reference(load_pretrainer(tmp_path / "tf2"), arrays, STUDENT)


def test_tied_copy_that_differs_is_refused(tmp_path):
    tensors = hf_tensors(random_arrays(reference_shapes(STUDENT)))
    tensors["cls.predictions.decoder.bias"] = tensors["cls.predictions.bias"] + 1.0
    with pytest.raises(ValueError, match="cls.predictions.decoder.bias"):
        convert_hf(_hf_dir(tmp_path / "hf", STUDENT, tensors), tmp_path / "tf2")
    assert not (tmp_path / "tf2").exists()


def test_missing_renamed_and_misshaped_are_all_listed(tmp_path):
    tensors = hf_tensors(random_arrays(reference_shapes(TEACHER)))
    removed = "mobilebert.encoder.layer.1.attention.output.LayerNorm.weight"
    renamed = "mobilebert.encoder.layer.0.bottleneck.input.dense.bias"
    misshaped = "cls.seq_relationship.weight"
    del tensors[removed]
    tensors["mobilebert.encoder.layer.0.bottleneck.inputs.dense.bias"] = tensors.pop(renamed)
    tensors[misshaped] = np.ascontiguousarray(tensors[misshaped].T)
    with pytest.raises(CheckpointMismatchError) as info:
        convert_hf(_hf_dir(tmp_path / "hf", TEACHER, tensors), tmp_path / "tf2")
    err = info.value
    assert set(err.missing) == {removed, renamed}
    assert set(err.unexpected) == {"mobilebert.encoder.layer.0.bottleneck.inputs.dense.bias"}
    assert set(err.misshaped) == {misshaped}
    assert not (tmp_path / "tf2").exists()


@pytest.mark.parametrize(
    "change, message",
    [
        ({"layer_norm_eps": 1e-5}, "layer_norm_eps"),
        ({"model_type": "bert"}, "model_type"),
        ({"true_hidden_size": 64}, "true_hidden_size"),
        ({"normalization_type": "batch_norm"}, "normalization_type"),
    ],
)
def test_bad_hf_config_is_named(tmp_path, change, message):
    tensors = hf_tensors(random_arrays(reference_shapes(STUDENT)))
    model_dir = _hf_dir(tmp_path / "hf", STUDENT, tensors, {**hf_config(STUDENT), **change})
    with pytest.raises(ValueError, match=message):
        convert_hf(model_dir, tmp_path / "tf2")


def test_export_hf_then_import_is_exact(tmp_path):
    """TF2 -> export hf -> import hf -> TF2: the same tensors, bit for bit, the same outputs."""
    arrays = random_arrays(reference_shapes(STUDENT), seed=11)
    first = tmp_path / "first"
    convert_hf(_hf_dir(tmp_path / "hf_in", STUDENT, hf_tensors(arrays)), first)

    vocab = tmp_path / "vocab.txt"
    vocab.write_text(
        "\n".join(VOCAB + [f"w{i}" for i in range(STUDENT.vocab_size - len(VOCAB))]) + "\n"
    )
    exported = tmp_path / "hf_out"
    assert (
        main(
            [
                "export",
                "hf",
                "--checkpoint",
                str(first),
                "--export_dir",
                str(exported),
                "--vocab_file",
                str(vocab),
            ]
        )
        == 0
    )
    assert sorted(os.listdir(exported)) == [
        "config.json",
        "model.safetensors",
        "tokenizer_config.json",
        "vocab.txt",
    ]
    tokenizer_config = json.loads((exported / "tokenizer_config.json").read_text())
    assert tokenizer_config["model_max_length"] == STUDENT.max_position_embeddings
    assert tokenizer_config["do_lower_case"] is True
    assert [tokenizer_config[f"{k}_token"] for k in ("unk", "sep", "pad", "cls", "mask")] == [
        "[UNK]",
        "[SEP]",
        "[PAD]",
        "[CLS]",
        "[MASK]",
    ]
    written = load_file(str(exported / "model.safetensors"))
    expected = hf_tensors(arrays)
    assert set(written) == set(expected)
    for k in expected:
        np.testing.assert_array_equal(written[k], expected[k], err_msg=k)
    hf_values = json.loads((exported / "config.json").read_text())
    assert hf_values["model_type"] == "mobilebert"
    assert hf_values["true_hidden_size"] == STUDENT.intra_bottleneck_size
    assert hf_values["classifier_activation"] is False

    second = tmp_path / "second"
    assert (
        main(["convert", "hf", "--model_dir", str(exported), "--tf2_checkpoint_path", str(second)])
        == 0
    )
    assert (second / "vocab.txt").read_text() == vocab.read_text()  # the tokenizer came along
    reference = BertWordPieceTokenizer(str(exported / "vocab.txt"), lowercase=True)
    for text in SENTENCES:
        assert (
            load_tokenizer(second).encode(text)
            == reference.encode(text, add_special_tokens=False).ids
        ), text
    word_ids, mask, type_ids, positions = inputs(STUDENT)
    a = model_outputs(load_pretrainer(first), word_ids, mask, type_ids, positions)
    b = model_outputs(load_pretrainer(second), word_ids, mask, type_ids, positions)
    for key in ("sequence_output", "pooled_output", "mlm_logits", "nsp_logits"):
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def _transformers_query_weight_shape(config):
    """transformers' MobileBertSelfAttention.query: nn.Linear(true_hidden_size, N·d) with
    true_hidden_size = intra_bottleneck_size under a bottleneck, else hidden_size ([out, in])."""
    true_hidden = config.intra_bottleneck_size if config.use_bottleneck else config.hidden_size
    heads = config.num_attention_heads
    return (heads * (true_hidden // heads), true_hidden)


@pytest.mark.parametrize("name", sorted(PRESETS) + ["teacher_with_shared_qk"])
def test_representable_exactly_when_the_query_kernel_has_transformers_shape(name):
    config = (
        get_preset("tiny_teacher").replace(key_query_shared_bottleneck=True)
        if name == "teacher_with_shared_qk"
        else get_preset(name)
    )
    ours = next(
        e.hf_shape
        for e in name_map(config)
        if e.hf == "mobilebert.encoder.layer.0.attention.self.query.weight"
    )
    assert (not hf_unrepresentable(config)) == (ours == _transformers_query_weight_shape(config))


def test_the_teachers_are_refused_and_nothing_is_written(tmp_path, capsys):
    assert hf_unrepresentable(get_preset("ibbert_large"))
    arrays = random_arrays(reference_shapes(TEACHER), seed=12)
    checkpoint = tmp_path / "teacher"
    convert_hf(_hf_dir(tmp_path / "hf_in", TEACHER, hf_tensors(arrays)), checkpoint)
    exported = tmp_path / "hf_out"
    assert (
        main(["export", "hf", "--checkpoint", str(checkpoint), "--export_dir", str(exported)]) == 2
    )
    message = capsys.readouterr().err
    assert "cannot represent" in message and "export savedmodel" in message
    assert not exported.exists()
