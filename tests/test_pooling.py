"""classifier_pooling: what the sentence head reads ([CLS] or the mean of the real tokens)."""

import dataclasses
import json

import numpy as np
import pytest

from mbert_lib.checkpoints import load_config, load_model, write_model_files
from mbert_lib.config import MobileBertConfig
from mbert_lib.convert.hf import hf_unrepresentable
from mbert_lib.experiment.finetune import FinetuneModelSection
from mbert_lib.export import inference
from mbert_lib.models import build_classifier, build_encoder
from tests.helpers import random_inputs, randomize_affine_weights, small_config

MEAN = small_config("mobilebert_tiny", classifier_pooling="mean")


def _masked_mean(sequence: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """[B, H]: each row's average over its real tokens, by a loop over rows."""
    return np.stack([sequence[b, mask[b] == 1].mean(axis=0) for b in range(len(sequence))])


@pytest.mark.parametrize("activation", [False, True])
def test_mean_pooling_is_the_average_of_the_real_tokens(activation):
    encoder = build_encoder(MEAN.replace(classifier_activation=activation))
    randomize_affine_weights(encoder)
    inputs = random_inputs(MEAN, batch=3, pads=(0, 3, 6))
    out = encoder(inputs)
    mean = _masked_mean(out["sequence_output"].numpy(), inputs["input_mask"])
    if activation:  # tanh(W·v + b), the pooler's Dense, applied by hand
        kernel, bias = (w.numpy() for w in encoder.pooler.weights)
        mean = np.tanh(mean @ kernel + bias)
    np.testing.assert_allclose(out["pooled_output"].numpy(), mean, rtol=1e-5, atol=1e-6)


def test_first_pooling_reads_cls_and_ignores_the_other_tokens():
    config = MEAN.replace(classifier_pooling="first", classifier_activation=False)
    encoder = build_encoder(config)
    out = encoder(random_inputs(config))
    np.testing.assert_array_equal(out["pooled_output"].numpy(), out["sequence_output"][:, 0])


def test_the_export_forward_pools_as_the_model_does():
    """The TFLite serving graph (export/inference.py) is a second code path of the encoder."""
    classifier = build_classifier(MEAN, num_classes=2)
    randomize_affine_weights(classifier)
    inputs = random_inputs(MEAN, batch=2, pads=(0, 4))
    expected = classifier(inputs)["logits"].numpy()
    got = inference.model_forward(classifier, inputs, mask_penalty=1e9)["logits"].numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_a_saved_classifier_keeps_its_pooling(tmp_path):
    classifier = build_classifier(MEAN, num_classes=3)
    randomize_affine_weights(classifier)
    write_model_files(classifier, tmp_path)
    stored = json.loads((tmp_path / "bert_config.json").read_text())
    assert stored["classifier_pooling"] == "mean"
    restored = load_model(tmp_path, "classifier")
    assert restored.config.classifier_pooling == "mean"
    inputs = random_inputs(MEAN, pads=(0, 5))
    np.testing.assert_allclose(
        restored(inputs)["logits"].numpy(), classifier(inputs)["logits"].numpy(), atol=1e-6
    )


def test_released_configs_read_and_write_unchanged():
    """The default is left out of bert_config.json; files without the key read as "first"."""
    config = MEAN.replace(classifier_pooling="first")
    assert "classifier_pooling" not in config.to_dict()
    assert MobileBertConfig.from_dict(config.to_dict()) == config


def test_an_encoder_config_may_differ_from_its_checkpoint_in_pooling_only(tmp_path):
    encoder = build_encoder(MEAN.replace(classifier_pooling="first"))
    write_model_files(encoder, tmp_path)
    assert load_config(tmp_path, MEAN).classifier_pooling == "mean"
    with pytest.raises(ValueError, match="hidden_act='gelu' vs 'relu'"):
        load_config(tmp_path, MEAN.replace(hidden_act="gelu"))


def test_bad_pooling_is_refused_with_the_field_named():
    with pytest.raises(ValueError, match="classifier_pooling must be one of .*'max'"):
        MEAN.replace(classifier_pooling="max")
    with pytest.raises(ValueError, match="model.pooling must be one of .*'cls'"):
        FinetuneModelSection(pooling="cls")


def test_mean_pooling_cannot_skip_the_last_blocks_positions():
    encoder = build_encoder(MEAN)
    inputs = random_inputs(MEAN)
    with pytest.raises(ValueError, match="output_positions needs classifier_pooling 'first'"):
        encoder(inputs, output_positions=np.array([[1, 2], [3, 4]], np.int32))


def test_transformers_cannot_hold_mean_pooling():
    """Its pooler reads [CLS]: `export hf` refuses instead of writing a model that differs."""
    assert any("classifier_pooling 'mean'" in r for r in hf_unrepresentable(MEAN))
    first = dataclasses.replace(MEAN, classifier_pooling="first")
    assert not any("pooling" in r for r in hf_unrepresentable(first))
