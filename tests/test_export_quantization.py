"""The numpy quantization rules against what the TFLite converter actually stores."""

import numpy as np
import pytest
import tensorflow as tf

import mbert_lib  # noqa: F401
from mbert_lib.export import quantization as quant


def _dense_tflite(kernel: np.ndarray, representative=None) -> bytes:
    """x [1, in] @ kernel [in, out] converted with Optimize.DEFAULT: dynamic-range int8,
    or full int8 when `representative` (a callable giving batches) calibrates it."""
    variable = tf.Variable(kernel)

    @tf.function(input_signature=[tf.TensorSpec([1, kernel.shape[0]], tf.float32)])
    def dense(x):
        return tf.matmul(x, variable)  # [1, out]

    owner = tf.Module()
    owner.variable = variable
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [dense.get_concrete_function()], owner
    )
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if representative is not None:
        converter.representative_dataset = representative
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    return converter.convert()


@pytest.fixture(scope="module")
def dense_kernel_and_file():
    """A [64, 32] kernel (one channel 10x larger) and its dynamic-range .tflite bytes."""
    rng = np.random.default_rng(0)
    kernel = rng.normal(size=(64, 32)).astype(np.float32)
    kernel[:, 3] *= 10.0
    return kernel, _dense_tflite(kernel)


def test_weights_are_what_the_converter_stores(dense_kernel_and_file):
    kernel, flatbuffer = dense_kernel_and_file
    (stored,) = quant.int8_tensors(flatbuffer)
    q, scale = quant.quantize_weights(kernel)  # per output channel of [in, out]
    assert stored["shape"] == (32, 64) and stored["axis"] == 0  # stored transposed
    assert np.array_equal(stored["q"], q.T)
    np.testing.assert_allclose(stored["scales"], scale, rtol=1e-6)
    assert not stored["zero_points"].any(), "weights are symmetric"


def test_weight_rounding_error_is_at_most_half_a_step_per_channel(dense_kernel_and_file):
    kernel, _ = dense_kernel_and_file
    q, scale = quant.quantize_weights(kernel)
    error = np.abs(quant.dequantize(q, scale) - kernel)  # [64, 32]
    assert np.all(error <= scale / 2 + 1e-7)
    assert np.array_equal(np.max(np.abs(q), axis=0), np.full(32, 127))
    assert scale[3] > 5 * np.median(scale), "the large channel gets its own, coarser step"


def test_a_zero_channel_is_exact():
    w = np.zeros((4, 2), np.float32)
    w[:, 1] = [1.0, -2.0, 0.5, 0.0]
    q, scale = quant.quantize_weights(w)
    assert scale[0] == 1.0 and not q[:, 0].any()
    assert np.allclose(quant.dequantize(q, scale)[:, 1], w[:, 1], atol=2.0 / 127 / 2)


def test_activation_range_holds_zero_exactly():
    scale, zero = quant.activation_params(-1.0, 3.0)
    assert scale == pytest.approx(4.0 / 255) and zero == -64
    assert quant.fake_quantize(np.array([0.0]), -1.0, 3.0)[0] == 0.0
    scale, zero = quant.activation_params(2.0, 5.0)  # widened to [0, 5]
    assert scale == pytest.approx(5.0 / 255) and zero == -128
    x = np.linspace(-1.0, 3.0, 101)
    assert np.max(np.abs(quant.fake_quantize(x, -1.0, 3.0) - x)) <= 4.0 / 255 / 2 + 1e-6


def test_a_minus_1e9_mask_collapses_the_scores_to_one_level():
    scores = np.linspace(-5.0, 10.0, 50)  # real attention scores
    bounded = quant.fake_quantize(scores, -5.0 - 20.0, 10.0)  # mask penalty 20
    collapsed = quant.fake_quantize(scores, -1e9, 10.0)  # the model's -1e9 mask
    assert len(np.unique(collapsed)) == 1
    assert len(np.unique(bounded)) > 40


def test_a_full_integer_file_gives_its_weights_and_activations(dense_kernel_and_file, capfd):
    """Full int8 (calibrated activations): the kernel is readable too (XNNPACK, when it
    delegates the graph, frees the constants it packs), and the reading prints nothing."""
    kernel, _ = dense_kernel_and_file
    rng = np.random.default_rng(1)
    flatbuffer = _dense_tflite(
        kernel, lambda: ([rng.normal(size=(1, 64)).astype(np.float32)] for _ in range(8))
    )
    capfd.readouterr()
    stored = {t["shape"]: t for t in quant.int8_tensors(flatbuffer)}
    assert capfd.readouterr().err == ""
    q, scale = quant.quantize_weights(kernel)
    assert np.array_equal(stored[(32, 64)]["q"], q.T)  # the kernel, [out, in]
    assert (1, 64) in stored and stored[(1, 64)]["scales"].size == 1  # the input activation
