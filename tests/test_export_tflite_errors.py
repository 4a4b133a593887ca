"""A precision the converter cannot produce fails with the names of the blocking ops."""

import pytest
import tensorflow as tf
import tf_keras

import mbert_lib  # noqa: F401
from mbert_lib.export import tflite


class ErfEncoder(tf_keras.Model):
    """An "encoder" whose output needs tf.math.erf, an op with no TFLite builtin kernel."""

    def __init__(self):
        super().__init__()
        self.scale = tf.Variable(0.5)

    def call(self, inputs, training=None):
        x = tf.cast(inputs["input_word_ids"], tf.float32) * self.scale  # [B, T]
        y = tf.math.erf(x)[..., tf.newaxis]  # [B, T, 1]
        return {"sequence_output": y, "pooled_output": y[:, 0]}


def test_real_converter_error_names_the_op():
    with pytest.raises(tflite.UnsupportedPrecisionError) as info:
        tflite.convert(ErfEncoder(), "fp32", seq_length=4)
    error = info.value
    assert error.precision == "fp32"
    assert error.ops == ["tf.Erf"]
    message = str(error)
    assert message.startswith("cannot export precision 'fp32': blocked by tf.Erf.")
    assert "note: called from" not in message  # the MLIR call-site trace is cut
    assert len(message) < 700


@pytest.mark.parametrize(
    "message,ops",
    [
        ("Quantization not yet supported for op: 'GELU'", ["GELU"]),
        (
            "loc(\"x\"): error: 'tfl.batch_matmul' op operand #0 must be tensor of 32-bit float",
            ["tfl.batch_matmul"],
        ),
        (
            "Some ops are not supported by the native TFLite runtime\n"
            "TF Select ops: Erf, FlexCumsum\n"
            "Details:\n\ttf.Erf(tensor<1x8xf32>) -> (tensor<1x8xf32>)",
            ["tf.Cumsum", "tf.Erf"],
        ),
        ("something else went wrong", []),
    ],
)
def test_blocking_ops_parses_converter_messages(message, ops):
    assert tflite.blocking_ops(RuntimeError(message)) == ops


def test_error_without_op_names_says_so():
    error = tflite.UnsupportedPrecisionError("int8", [], "calibration failed")
    assert "blocked by no op named by the converter" in str(error)
    assert "calibration failed" in str(error)
