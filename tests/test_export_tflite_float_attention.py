"""Post-training int8 with attention in float (`convert_int8_float_attention`): the named
ops stay float, every other matmul runs on int8, and the logits stay near Keras'."""

import numpy as np
import pytest
import tf_keras

from mbert_lib import build_classifier, get_preset
from mbert_lib.export import tflite
from mbert_lib.export.interpreter import TFLiteModel
from mbert_lib.export.representative import random_features, representative_dataset

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

T = 16
CONFIG = get_preset("tiny_student").replace(num_hidden_layers=2, vocab_size=128)
FEATURES = random_features(8, T, CONFIG.vocab_size, seed=5)
CALIBRATION = random_features(32, T, CONFIG.vocab_size, seed=6)


@pytest.fixture(scope="module")
def classifier():
    tf_keras.utils.set_random_seed(0)
    model = build_classifier(CONFIG, num_classes=3, dropout_rate=0.0)
    model.head.dense.kernel.assign(model.head.dense.kernel * 50.0)  # logits ~ O(1)
    return model


def _input_types(model: TFLiteModel) -> dict[str, set[str]]:
    """{op name: the dtypes of its first input} over the file's ops."""
    tensors = {t["index"]: t for t in model.interpreter.get_tensor_details()}
    found: dict[str, set[str]] = {}
    for op in model.interpreter._get_ops_details():
        if op["inputs"].size and op["inputs"][0] >= 0:
            dtype = tensors[op["inputs"][0]]["dtype"].__name__
            found.setdefault(op["op_name"], set()).add(dtype)
    return found


def test_attention_stays_float_and_every_other_matmul_is_int8(classifier):
    flatbuffer = tflite.convert_int8_float_attention(
        classifier, representative_dataset(CALIBRATION), T
    )
    model = TFLiteModel(flatbuffer, num_threads=1)
    types = _input_types(model)
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
    types = _input_types(TFLiteModel(flatbuffer))
    assert types["BATCH_MATMUL"] == {"int8"} and types["FULLY_CONNECTED"] == {"int8"}
