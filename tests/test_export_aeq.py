"""Static int8 through ai-edge-quantizer (`mbert_lib.export.aeq`): every matmul on int8,
`float_ops` kept float, logits near Keras' once the int8 output is dequantized, and the
mask penalty setting the int8 step of attention's scores."""

import sys

import numpy as np
import pytest

from mbert_lib.export import aeq
from mbert_lib.export.interpreter import TFLiteModel
from tests.int8_fixtures import CALIBRATION, CONFIG, FEATURES, T, input_types, tiny_classifier

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it
classifier = pytest.fixture(scope="module")(tiny_classifier)
pytest.importorskip("ai_edge_quantizer")


def _error(classifier, flatbuffer) -> tuple[float, float]:
    """(max |logits − Keras'|, max |Keras' logits|) over FEATURES."""
    reference = classifier(FEATURES, training=False)["logits"].numpy()
    got = TFLiteModel(flatbuffer, num_threads=1).predict(FEATURES)["logits"]
    assert got.dtype == np.float32  # the int8 output, dequantized
    return float(np.max(np.abs(got - reference))), float(np.max(np.abs(reference)))


def test_every_matmul_runs_on_int8_and_the_logits_follow_keras(classifier):
    flatbuffer = aeq.convert_static_int8(classifier, CALIBRATION, T)
    model = TFLiteModel(flatbuffer)
    types = input_types(model)
    assert types["BATCH_MATMUL"] == {"int8"} and types["FULLY_CONNECTED"] == {"int8"}, types
    assert "logits" in model.output_quantization  # the file ends in int8
    error, scale = _error(classifier, flatbuffer)
    assert scale > 0.1 and error < 0.2 * scale


def test_float_ops_stay_float(classifier):
    flatbuffer = aeq.convert_static_int8(classifier, CALIBRATION, T, ("BATCH_MATMUL", "SOFTMAX"))
    types = input_types(TFLiteModel(flatbuffer))
    assert types["BATCH_MATMUL"] == {"float32"} and types["SOFTMAX"] == {"float32"}, types
    assert types["FULLY_CONNECTED"] == {"int8"}
    error, scale = _error(classifier, flatbuffer)
    assert error < 0.2 * scale


def _softmax_input_scales(flatbuffer) -> list[float]:
    model = TFLiteModel(flatbuffer)
    tensors = {t["index"]: t for t in model.interpreter.get_tensor_details()}
    ops = model.interpreter._get_ops_details()
    return [tensors[op["inputs"][0]]["quantization"][0] for op in ops if op["op_name"] == "SOFTMAX"]


def test_the_mask_penalty_sets_the_attention_scores_int8_step(classifier):
    """The calibration set has padding, so the scores' range reaches −c: the int8 step s of
    softmax's input is ≈ range/255. The quantizer keeps a moving average of each example's
    min (weight 0.95 on the past), so the range is c times that average of "this example
    has padding". With c = 1e6 the step is thousands and every real score rounds to one
    level; with the bounded mask it stays below 1."""
    bounded = _softmax_input_scales(aeq.convert_static_int8(classifier, CALIBRATION, T))
    huge = _softmax_input_scales(
        aeq.convert_static_int8(classifier, CALIBRATION, T, mask_penalty=1e6)
    )
    assert len(bounded) == len(huge) == CONFIG.num_hidden_layers
    assert all(s < 1.0 for s in bounded), bounded
    padded = CALIBRATION["input_mask"].min(axis=1) == 0
    assert 0 < padded.mean() < 1
    average = float(padded[0])
    for p in padded[1:]:
        average = 0.95 * average + 0.05 * p
    assert huge == pytest.approx([average * 1e6 / 255] * len(huge), rel=0.01)


def test_bad_float_op_is_named(classifier):
    with pytest.raises(ValueError, match="float_ops: 'BATCHMATMUL'"):
        aeq.convert_static_int8(classifier, CALIBRATION, T, ("BATCHMATMUL",))


def test_a_missing_quantizer_names_the_package(classifier, monkeypatch):
    monkeypatch.setitem(sys.modules, "ai_edge_quantizer", None)  # import fails as if absent
    with pytest.raises(ImportError, match="needs ai-edge-quantizer: pip install -r"):
        aeq.convert_static_int8(classifier, CALIBRATION, T)
