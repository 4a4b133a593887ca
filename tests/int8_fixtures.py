"""A tiny classifier and its inputs for the int8 conversion tests (the converter's selective
int8, ai-edge-quantizer, per-block errors), and a reader of which ops run on int8."""

import tf_keras

from mbert_lib import build_classifier, get_preset
from mbert_lib.export.interpreter import TFLiteModel
from mbert_lib.export.representative import random_features

T = 16
CONFIG = get_preset("tiny_student").replace(num_hidden_layers=2, vocab_size=128)
FEATURES = random_features(8, T, CONFIG.vocab_size, seed=5)  # padded, like real inputs
CALIBRATION = random_features(32, T, CONFIG.vocab_size, seed=6)


def tiny_classifier():
    """Two blocks, three classes, no dropout; the head scaled so that logits are ~O(1).
    A test module makes it its fixture: `classifier = pytest.fixture(scope="module")(...)`."""
    tf_keras.utils.set_random_seed(0)
    model = build_classifier(CONFIG, num_classes=3, dropout_rate=0.0)
    model.head.dense.kernel.assign(model.head.dense.kernel * 50.0)
    return model


def input_types(model: TFLiteModel) -> dict[str, set[str]]:
    """{op name: the dtypes of its first input} over the file's ops."""
    tensors = {t["index"]: t for t in model.interpreter.get_tensor_details()}
    found: dict[str, set[str]] = {}
    for op in model.interpreter._get_ops_details():
        if op["inputs"].size and op["inputs"][0] >= 0:
            found.setdefault(op["op_name"], set()).add(tensors[op["inputs"][0]]["dtype"].__name__)
    return found
