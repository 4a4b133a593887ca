"""TFLite export at every precision: fp32 equals Keras, quantized variants stay close."""

import numpy as np
import pytest
import tf_keras

import mbert_lib  # noqa: F401
from mbert_lib import build_classifier, build_encoder, get_preset
from mbert_lib.export import tflite
from mbert_lib.export.interpreter import TFLiteModel
from mbert_lib.export.representative import random_features, representative_dataset
from mbert_lib.layers.fast.layer_norm import xla_layer_norm

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

T = 16
CONFIG = get_preset("tiny_student").replace(num_hidden_layers=2, vocab_size=128)
TEACHER = get_preset("tiny_teacher").replace(num_hidden_layers=2, vocab_size=128)
FEATURES = random_features(6, T, CONFIG.vocab_size, seed=3)  # padded, two segments
CALIBRATION = random_features(32, T, CONFIG.vocab_size, seed=4)


def _perturb_norms(model, seed=0):
    """NoNorm/LayerNorm start at γ = 1, β = 0; move them so folding them is actually tested."""
    rng = np.random.default_rng(seed)
    for w in model.weights:
        if w.name.endswith(("gamma:0", "beta:0")):
            base = 1.0 if w.name.endswith("gamma:0") else 0.0
            w.assign(base + 0.3 * rng.standard_normal(w.shape).astype(np.float32))


def _models():
    tf_keras.utils.set_random_seed(0)
    encoder = build_encoder(CONFIG)
    _perturb_norms(encoder, 1)
    classifier = build_classifier(CONFIG, num_classes=3, dropout_rate=0.0)
    _perturb_norms(classifier, 2)
    classifier.head.dense.kernel.assign(classifier.head.dense.kernel * 50.0)  # logits ~ O(1)
    teacher = build_classifier(TEACHER, num_classes=2, dropout_rate=0.0)
    _perturb_norms(teacher, 3)  # every LayerNorm with its own γ, β, as after training
    teacher.head.dense.kernel.assign(teacher.head.dense.kernel * 50.0)
    return {
        "encoder": (encoder, "sequence_output"),
        "classifier": (classifier, "logits"),
        "teacher": (teacher, "logits"),
    }


# The teacher's LayerNorms as a full run builds them, each with its XLA formula (fast mode
# would build them unfused), so that the conversion of those formulas is what is tested.
with xla_layer_norm(True):
    MODELS = _models()


@pytest.fixture(scope="module")
def exported():
    """{(model, precision): flatbuffer}, converted once for the module."""
    out = {}
    for name in ("encoder", "classifier"):
        for precision in tflite.PRECISIONS:
            out[name, precision] = tflite.convert(
                MODELS[name][0],
                precision,
                T,
                int8=tflite.Int8Options(representative_dataset(CALIBRATION)),
            )
    return out


def _compare(exported, name, precision):
    model, key = MODELS[name]
    reference = model(FEATURES, training=False)[key].numpy()
    got = TFLiteModel(exported[name, precision], num_threads=1).predict(FEATURES)[key]
    assert got.shape == reference.shape
    return np.max(np.abs(got - reference)), np.max(np.abs(reference))


@pytest.mark.parametrize("name", ["encoder", "classifier"])
def test_fp32_equals_keras(exported, name):
    error, scale = _compare(exported, name, "fp32")
    assert scale > 0.1  # outputs are not trivially small
    assert error < 1e-4


@pytest.mark.parametrize("name", ["encoder", "classifier"])
@pytest.mark.parametrize("precision,relative", [("float16", 5e-3), ("dynamic_int8", 0.1)])
def test_weight_quantized_variants_stay_close(exported, name, precision, relative):
    error, scale = _compare(exported, name, precision)
    assert 0 < error < relative * scale  # quantized (not bit-equal), but close


@pytest.mark.parametrize("name", ["encoder", "classifier"])
def test_full_int8_runs_and_is_integer(exported, name):
    model = TFLiteModel(exported[name, "int8"])
    details = {t["index"]: t for t in model.interpreter.get_tensor_details()}
    fc_inputs = [
        details[op["inputs"][0]]["dtype"]
        for op in model.interpreter._get_ops_details()
        if op["op_name"] == "FULLY_CONNECTED"
    ]
    assert fc_inputs and all(d == np.int8 for d in fc_inputs)  # activations really int8
    error, scale = _compare(exported, name, "int8")
    assert np.isfinite(error)


def test_sizes_shrink_as_expected(exported):
    size = {p: len(exported["encoder", p]) for p in tflite.PRECISIONS}
    assert 1.7 < size["fp32"] / size["float16"] < 2.1
    assert size["fp32"] / size["dynamic_int8"] > 2.5  # 4x on weights, less on tiny models
    assert size["fp32"] / size["int8"] > 2.5


def test_layer_norm_gelu_teacher_exports_at_fp32():
    """Ten LayerNorms with different (γ, β): a formula shared by all of them converts to
    a graph that uses one layer's weights everywhere (logits off by far more than 1e-4)."""
    exported = {("teacher", "fp32"): tflite.convert(MODELS["teacher"][0], "fp32", T)}
    error, scale = _compare(exported, "teacher", "fp32")
    assert scale > 0.1
    assert error < 1e-4


def test_exported_signature(exported):
    encoder = TFLiteModel(exported["encoder", "fp32"])
    assert (encoder.batch_size, encoder.seq_length) == (1, T)
    assert encoder.output_names == ["pooled_output", "sequence_output"]
    assert TFLiteModel(exported["classifier", "fp32"]).output_names == ["logits"]
    with pytest.raises(ValueError, match="seq_length 8, the model expects 16"):
        encoder.predict(random_features(1, 8, CONFIG.vocab_size))


def test_int8_without_calibration_and_unknown_precision_are_refused():
    model = MODELS["encoder"][0]
    with pytest.raises(ValueError, match="needs a representative_dataset"):
        tflite.convert(model, "int8", T)
    with pytest.raises(ValueError, match="precision must be one of"):
        tflite.convert(model, "int4", T)


@pytest.mark.parametrize("precision", ["fp32", "dynamic_int8"])
def test_dynamic_shape_resizes_to_any_batch_and_length(precision):
    """[-1, -1] in the file: the same model runs batch 1 × 16, 3 × 9 and 2 × 23 tokens."""
    model, key = MODELS["classifier"]
    flat = tflite.convert(model, precision, T, dynamic_shape=True)
    runner = TFLiteModel(flat, num_threads=1)
    assert runner.input_shape == (None, None)
    tolerance = 1e-4 if precision == "fp32" else 0.1 * np.max(np.abs(model(FEATURES)[key]))
    for batch, length in ((1, T), (3, 9), (2, 23)):
        features = random_features(batch, length, CONFIG.vocab_size, seed=batch)
        got = runner(features)[key]
        np.testing.assert_allclose(
            got, model(features, training=False)[key].numpy(), atol=tolerance, rtol=0
        )
    assert runner.predict(random_features(8, 9, CONFIG.vocab_size), batch_size=4)[key].shape == (
        8,
        3,
    )
    with pytest.raises(ValueError, match="not a multiple of the exported batch size 4"):
        runner.predict(random_features(6, 9, CONFIG.vocab_size), batch_size=4)


def test_a_fixed_shape_model_names_its_shape_and_the_option():
    runner = TFLiteModel(tflite.convert(MODELS["encoder"][0], "fp32", T))
    with pytest.raises(ValueError, match=r"exported for \[1, 16\]; export it with --dynamic_shape"):
        runner(random_features(2, T, CONFIG.vocab_size))
