"""A fine-tuned classifier leaves as a Hugging Face MobileBertForSequenceClassification directory
and as a serving SavedModel; both predict what the project's Classifier predicts.

The Hugging Face weights are checked with the numpy reference forward pass under
transformers' naming rule (tests/convert_fixtures.py), the SavedModel's tokenization
with the `tokenizers` library. Two classifiers: SST-2 (two labels, one sentence) and
STS-B (a regression score of a sentence pair)."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file

from mbert_lib.checkpoints import save_model_dir
from mbert_lib.cli import main
from mbert_lib.export.classifier_labels import classifier_labels
from mbert_lib.models import build_pretrainer
from tests.classifier_fixtures import PAIRS, POOLED, SENTENCES, packed_ids, save_classifier
from tests.convert_fixtures import hf_name
from tests.finetune_fixtures import CONFIG
from tests.keras_to_tf1 import tf1_arrays_from_pretrainer
from tests.numpy_reference import encoder_forward, softmax


@pytest.fixture(scope="module")
def classifiers(tmp_path_factory):
    root = tmp_path_factory.mktemp("classifiers")
    return {
        "sst2": (save_classifier(root / "sst2", "sst2", 2, 1), root / "sst2"),
        "stsb": (save_classifier(root / "stsb", "stsb", 1, 2), root / "stsb"),
    }


def _logits(model, ids):
    return model(ids, training=False)["logits"].numpy()


@pytest.mark.parametrize("task", ["sst2", "stsb"])
def test_hf_classifier_directory_predicts_as_the_classifier(classifiers, tmp_path, task):
    model, directory = classifiers[task]
    out = tmp_path / "hf"
    assert main(["export", "hf", "--checkpoint", str(directory), "--export_dir", str(out)]) == 0
    assert sorted(os.listdir(out)) == [
        "config.json",
        "model.safetensors",
        "tokenizer_config.json",
        "vocab.txt",
    ]
    values = json.loads((out / "config.json").read_text())
    assert values["architectures"] == ["MobileBertForSequenceClassification"]
    if task == "sst2":
        assert values["id2label"] == {"0": "negative", "1": "positive"}
        assert values["label2id"] == {"negative": 0, "positive": 1}
        assert values["problem_type"] == "single_label_classification"
    else:
        assert values["num_labels"] == 1 and values["problem_type"] == "regression"

    # The weights, read back under transformers' names, through the numpy reference.
    tensors = load_file(str(out / "model.safetensors"))
    names = {hf_name(k): k for k in tf1_arrays_from_pretrainer(build_pretrainer(POOLED))}
    arrays = {}
    for (hf, transpose), tf1 in names.items():
        if hf in tensors:
            arrays[tf1] = tensors[hf].T if transpose else tensors[hf]
    assert set(tensors) - {hf for hf, _ in names} == {"classifier.weight", "classifier.bias"}
    assert not [
        hf for hf, _ in names if hf not in tensors and not hf.startswith("cls.")
    ]  # the encoder is whole
    assert {k: values[k] for k in POOLED.to_dict()} == POOLED.to_dict()
    ids = packed_ids(out / "vocab.txt", SENTENCES, PAIRS if task == "stsb" else None)
    pooled = encoder_forward(
        arrays, POOLED, ids["input_word_ids"], ids["input_mask"], ids["input_type_ids"]
    )["pooled_output"]
    reference = pooled @ tensors["classifier.weight"].T + tensors["classifier.bias"]
    np.testing.assert_allclose(_logits(model, ids), reference, rtol=1e-4, atol=1e-4)


def test_savedmodel_of_a_classifier_serves_strings_andpacked_ids(classifiers, tmp_path):
    model, directory = classifiers["sst2"]
    out = tmp_path / "served"
    assert (
        main(["export", "savedmodel", "--checkpoint", str(directory), "--export_path", str(out)])
        == 0
    )
    assert not (tmp_path / "served_preprocess").exists()  # one SavedModel
    os.rename(directory / "vocab.txt", tmp_path / "vocab.txt")  # it must carry its vocabulary
    try:
        served = tf.saved_model.load(str(out))
        got = served.signatures["serving_default"](text=tf.constant(SENTENCES))
    finally:
        os.rename(tmp_path / "vocab.txt", directory / "vocab.txt")
    ids = packed_ids(directory / "vocab.txt", SENTENCES)
    expected = _logits(model, ids)
    np.testing.assert_allclose(got["logits"].numpy(), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        got["probabilities"].numpy(), softmax(expected.astype(np.float64)), rtol=1e-5, atol=1e-6
    )
    assert [s.decode() for s in got["label"].numpy()] == [
        ("negative", "positive")[i] for i in expected.argmax(-1)
    ]
    by_ids = served.signatures["serve_token_ids"](**{k: tf.constant(v) for k, v in ids.items()})
    np.testing.assert_allclose(by_ids["logits"].numpy(), expected, rtol=1e-5, atol=1e-5)
    assert [s.decode() for s in served.labels.numpy()] == ["negative", "positive"]


def test_savedmodel_of_a_pair_regression_takes_two_texts(classifiers, tmp_path):
    model, directory = classifiers["stsb"]
    out = tmp_path / "served"
    assert (
        main(["export", "savedmodel", "--checkpoint", str(directory), "--export_path", str(out)])
        == 0
    )
    served = tf.saved_model.load(str(out))
    got = served.signatures["serving_default"](
        text_a=tf.constant(SENTENCES), text_b=tf.constant(PAIRS)
    )
    assert set(got) == {"logits", "score"}
    expected = _logits(model, packed_ids(directory / "vocab.txt", SENTENCES, PAIRS))
    np.testing.assert_allclose(got["score"].numpy(), expected[:, 0], rtol=1e-5, atol=1e-5)


def test_labels_that_do_not_match_the_task_are_refused(tmp_path, capsys):
    directory = tmp_path / "three"
    save_classifier(directory, "sst2", 3, 3)
    with pytest.raises(ValueError, match=r"3 output\(s\).*task 'sst2', which has 2"):
        classifier_labels(directory, 3)
    for command in (
        ["export", "hf", "--checkpoint", str(directory), "--export_dir", str(tmp_path / "hf")],
        [
            "export",
            "savedmodel",
            "--checkpoint",
            str(directory),
            "--export_path",
            str(tmp_path / "sm"),
        ],
    ):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert str(directory) in err and "task 'sst2'" in err, err
    assert not (tmp_path / "hf").exists() and not (tmp_path / "sm").exists()
    assert os.listdir(tmp_path) == ["three"]  # nothing half-written


def test_an_encoder_directory_and_an_existing_output_are_refused(classifiers, tmp_path, capsys):
    from mbert_lib.models import build_encoder

    encoder_dir = tmp_path / "encoder"
    save_model_dir(build_encoder(CONFIG), encoder_dir)
    assert (
        main(
            ["export", "hf", "--checkpoint", str(encoder_dir), "--export_dir", str(tmp_path / "hf")]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert str(encoder_dir) in err and "holds an encoder" in err and "classifier" in err, err
    existing = tmp_path / "taken"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine")
    _, directory = classifiers["sst2"]
    assert (
        main(
            ["export", "savedmodel", "--checkpoint", str(directory), "--export_path", str(existing)]
        )
        == 2
    )
    assert "already exists" in capsys.readouterr().err
    assert os.listdir(existing) == ["keep.txt"]
