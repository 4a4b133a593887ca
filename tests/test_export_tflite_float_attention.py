"""Post-training int8 with attention in float (`convert_int8_float_attention`): the named
ops stay float, every other matmul runs on int8, and the logits stay near Keras'."""

import numpy as np
import pytest

from mbert_lib.export import tflite
from mbert_lib.export.interpreter import TFLiteModel
from mbert_lib.export.representative import representative_dataset
from tests.int8_fixtures import CALIBRATION, FEATURES, T, input_types, tiny_classifier

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it
classifier = pytest.fixture(scope="module")(tiny_classifier)


def test_attention_stays_float_and_every_other_matmul_is_int8(classifier):
    flatbuffer = tflite.convert_int8_float_attention(
        classifier, representative_dataset(CALIBRATION), T
    )
    model = TFLiteModel(flatbuffer, num_threads=1)
    types = input_types(model)
    assert types["BATCH_MATMUL"] == {"float32"} and types["SOFTMAX"] == {"float32"}
    assert types["FULLY_CONNECTED"] == {"int8"}, types
    reference = classifier(FEATURES, training=False)["logits"].numpy()
    got = model.predict(FEATURES)["logits"]
    scale = np.max(np.abs(reference))
    assert scale > 0.1 and np.max(np.abs(got - reference)) < 0.2 * scale


def test_with_no_float_ops_it_is_the_full_integer_conversion(classifier):
    flatbuffer = tflite.convert_int8_float_attention(
        classifier, representative_dataset(CALIBRATION), T, float_ops=()
    )
    types = input_types(TFLiteModel(flatbuffer))
    assert types["BATCH_MATMUL"] == {"int8"} and types["FULLY_CONNECTED"] == {"int8"}
