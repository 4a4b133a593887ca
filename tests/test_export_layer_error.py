"""Per-block error of an int8 file (`mbert_lib.export.layer_error`): the fp32 file matches
Keras block by block, the int8 file's error is measured against a NumPy norm, and its
logits stay within a few int8 steps of the plain conversion's."""

import numpy as np
import pytest

from mbert_lib import build_encoder
from mbert_lib.export import layer_error, tflite
from mbert_lib.export.interpreter import TFLiteModel
from mbert_lib.export.representative import representative_dataset
from tests.int8_fixtures import CALIBRATION, CONFIG, FEATURES, T, tiny_classifier

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it
classifier = pytest.fixture(scope="module")(tiny_classifier)


def test_fp32_file_matches_keras_block_by_block(classifier):
    flatbuffer = layer_error.convert_with_block_outputs(classifier, "fp32", T)
    result = layer_error.layer_errors(classifier, flatbuffer, FEATURES)
    assert sorted(result["relative_error"]) == ["block_0", "block_1", "logits"]
    assert all(e < 1e-5 for e in result["relative_error"].values()), result
    assert result["agreement"] == 1.0


def test_int8_errors_are_the_frobenius_ratio_and_the_logits_are_the_deployed_ones(classifier):
    c = 20.0
    flatbuffer = layer_error.convert_with_block_outputs(
        classifier, "int8", T, representative_dataset(CALIBRATION), mask_penalty=c
    )
    got = TFLiteModel(flatbuffer).predict(FEATURES)
    deployed = tflite.convert(
        classifier, "int8", T, 1, tflite.Int8Options(representative_dataset(CALIBRATION), c)
    )
    # outputs in the middle change how the converter fuses the ops beside them: a few
    # int8 steps of the logits, no more
    deployed_logits = TFLiteModel(deployed).predict(FEATURES)["logits"]
    assert np.max(np.abs(got["logits"] - deployed_logits)) < 0.05 * np.max(np.abs(deployed_logits))
    result = layer_error.layer_errors(classifier, flatbuffer, FEATURES, mask_penalty=c)
    reference = classifier.encoder(FEATURES, training=False)["encoder_outputs"][1].numpy()
    want = np.sqrt(np.sum((got["block_1"] - reference) ** 2) / np.sum(reference**2))
    assert result["relative_error"]["block_1"] == pytest.approx(want, rel=1e-3)
    assert 0 < result["relative_error"]["block_1"] < 0.5


def test_relative_errors_in_closed_form():
    reference = {"a": np.ones((2, 3)), "b": np.arange(4.0)}
    got = {"a": 1.1 * np.ones((2, 3)), "b": np.arange(4.0), "extra": np.zeros(1)}
    assert layer_error.relative_errors(reference, got) == pytest.approx({"a": 0.1, "b": 0.0})


def test_an_encoder_is_refused():
    with pytest.raises(ValueError, match="needs a Classifier, got MobileBertEncoder"):
        layer_error.block_outputs(build_encoder(CONFIG, T), FEATURES)
