"""Conversion to TFLite (LiteRT) flatbuffers, by precision (paper section 4.6, Table 6).

Precisions, all post-training (no retraining):

    fp32          float32 weights and activations: the reference, equal to Keras.
    dynamic_int8  int8 weights (per channel), float activations; matmuls
                  quantize activations on the fly. ≈4× smaller.
    float16       float16 weights, dequantized to float32 at load: ≈2× smaller.
    int8          full integer: int8 weights and activations, activation ranges
                  calibrated on a representative set of inputs
                  (`representative.representative_dataset`); attention uses
                  the bounded mask of `inference` (int8 cannot hold -1e9).

The exported graph has a fixed shape [batch_size, seq_length] (batch 1,
seq 128 by default, as on a phone): positions, masks and shapes are then
constants the converter folds. With `dynamic_shape` both dimensions are
left open ([-1, -1] in the file's shape signature): the interpreter resizes
the inputs to any batch and any length up to max_position_embeddings
(`Interpreter.resize_tensor_input`, or a signature runner called with the
new shape). Inputs are the three int32 tensors
`input_word_ids`, `input_mask`, `input_type_ids`; outputs are
`sequence_output` [B, T, H] and `pooled_output` [B, H] for an encoder,
`logits` [B, C] for a classifier.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterable

import tensorflow as tf

from mbert_lib import atomic
from mbert_lib.compress import qat
from mbert_lib.export import inference
from mbert_lib.models import INPUT_NAMES, Classifier

PRECISIONS = ("fp32", "dynamic_int8", "float16", "int8")


@dataclasses.dataclass(frozen=True)
class Int8Options:
    """What the int8 precision needs beyond the model (the other precisions ignore it).

    representative_dataset: the calibration inputs of the activation ranges
    (`representative.representative_dataset`); mask_penalty: c of the bounded
    attention mask of `inference` (None keeps the model's -1e9 mask, which int8 cannot
    represent: attention over real tokens turns uniform).
    """

    representative_dataset: Callable[[], Iterable] | None = None
    mask_penalty: float | None = inference.DEFAULT_MASK_PENALTY


class UnsupportedPrecisionError(ValueError):
    """The converter could not produce `precision`; `ops` names the ops that block it."""

    def __init__(self, precision: str, ops: list[str], detail: str):
        self.precision = precision
        self.ops = ops
        blocking = ", ".join(ops) if ops else "no op named by the converter"
        super().__init__(
            f"cannot export precision {precision!r}: blocked by {blocking}. "
            f"Converter said: {detail}"
        )


def serving_function(
    model,
    seq_length: int = 128,
    batch_size: int = 1,
    mask_penalty: float | None = None,
    dynamic_shape: bool = False,
    probabilities: bool = False,
):
    """The inference graph as a concrete function of shape [batch_size, seq_length]
    ([None, None] with dynamic_shape).

    mask_penalty: None for the model's own forward (exact); a number c for
    the bounded attention mask of `inference.model_forward` (int8).
    probabilities: a Classifier's one output is softmax(logits) [B, C], named
    "probabilities" (what the TFLite Task Library's classifiers read), not its logits.
    """
    if probabilities and not isinstance(model, Classifier):
        raise ValueError("probabilities=True needs a Classifier; an encoder has no classes")
    shape = [None, None] if dynamic_shape else [batch_size, seq_length]
    spec = {name: tf.TensorSpec(shape, tf.int32, name=name) for name in INPUT_NAMES}

    def classifier_outputs(logits):  # [B, C]
        return (
            {"probabilities": tf.nn.softmax(logits, axis=-1)}
            if probabilities
            else {"logits": logits}
        )

    if mask_penalty is not None:

        def serve(inputs):
            outputs = inference.model_forward(model, inputs, mask_penalty)
            if isinstance(model, Classifier):
                return classifier_outputs(outputs["logits"])
            return {key: outputs[key] for key in ("sequence_output", "pooled_output")}
    elif isinstance(model, Classifier):

        def serve(inputs):
            return classifier_outputs(model(inputs, training=False)["logits"])
    else:

        def serve(inputs):
            outputs = model(inputs, training=False)
            return {
                "sequence_output": outputs["sequence_output"],  # [B, T, H]
                "pooled_output": outputs["pooled_output"],
            }  # [B, H]

    return tf.function(serve, input_signature=[spec]).get_concrete_function()


def make_converter(
    function,
    precision: str,
    representative_dataset: Callable[[], Iterable] | None = None,
    trackable=None,
) -> tf.lite.TFLiteConverter:
    """A TFLiteConverter for a concrete function, set up for `precision`."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    converter = tf.lite.TFLiteConverter.from_concrete_functions([function], trackable)
    if precision != "fp32":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if precision == "float16":
        converter.target_spec.supported_types = [tf.float16]
    if precision == "int8":
        if representative_dataset is None:
            raise ValueError(
                "precision 'int8' needs a representative_dataset to calibrate "
                "activation ranges (see mbert_lib.export.representative)"
            )
        converter.representative_dataset = representative_dataset
        # Integer kernels only: an op without one fails the conversion instead of
        # silently staying in float.
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    return converter


_OP_PATTERNS = (
    re.compile(r"'(tfl?\.[A-Za-z0-9_]+)' op"),  # 'tf.Erf' op is neither a custom op ...
    re.compile(r"\b(tf\.[A-Z][A-Za-z0-9]*)\("),  # Details: tf.Erf(tensor<...>)
    re.compile(r"op: '?([A-Z][A-Z0-9_]+)'?"),  # Quantization not yet supported for op: 'X'
)
_SELECT_OPS = re.compile(r"(?:Flex|TF Select) ops: ([A-Za-z0-9_, ]+)")  # TF Select ops: Erf, Foo


def blocking_ops(error: BaseException) -> list[str]:
    """Names of the ops a converter error blames ('tf.Erf', 'GELU', ...), sorted, unique.

    Uses the structured `errors` of a ConverterError where the converter filled
    them in, and the op names in its message otherwise.
    """
    names = set()
    for data in getattr(error, "errors", None) or []:
        name = getattr(getattr(data, "operator", None), "name", "")
        if name:
            names.add(name)
    message = str(error)
    for pattern in _OP_PATTERNS:
        names.update(pattern.findall(message))
    for match in _SELECT_OPS.findall(message):
        names.update("tf." + n.strip().removeprefix("Flex") for n in match.split(",") if n.strip())
    return sorted(names)


def _short(message: str, limit: int = 400) -> str:
    """The converter's error lines without the MLIR call-site trace."""
    kept = []
    for line in message.splitlines():
        if "error:" in line:
            line = line.rsplit("error:", 1)[1]
        elif not re.search(r"ops?: |not supported|[Qq]uantiz", line):
            continue
        line = line.strip()
        if line and line not in kept:
            kept.append(line)
    if not kept and message.strip():
        kept = [message.strip().splitlines()[0]]
    text = " / ".join(kept)
    return text if len(text) <= limit else text[:limit] + " ..."


def convert(
    model,
    precision: str,
    seq_length: int = 128,
    batch_size: int = 1,
    int8: Int8Options = Int8Options(),
    dynamic_shape: bool = False,
    probabilities: bool = False,
) -> bytes:
    """The model as a TFLite flatbuffer at `precision`.

    int8: for precision int8 only, its calibration set and bounded attention mask
    (`Int8Options`).
    probabilities: a Classifier outputs softmax(logits) (see `serving_function`).
    Raises UnsupportedPrecisionError (naming the blocking ops) when the
    converter cannot produce it.
    """
    penalty = int8.mask_penalty if precision == "int8" else None
    if penalty is not None:
        inference.check_mask_penalty(penalty, "int8_mask_penalty")
    function = serving_function(
        model, seq_length, batch_size, penalty, dynamic_shape, probabilities
    )
    # The converter saves `trackable` as a SavedModel first. A plain tf.Module
    # owning just the weights saves in a moment; the Keras model itself would
    # be re-traced layer by layer for its own SavedModel format.
    weights = tf.Module()
    weights.variables_list = list(model.weights)
    converter = make_converter(function, precision, int8.representative_dataset, weights)
    try:
        return converter.convert()
    except Exception as e:  # ConverterError, or RuntimeError from the calibrator
        raise UnsupportedPrecisionError(precision, blocking_ops(e), _short(str(e))) from e


def export_tflite(
    model,
    path: str | os.PathLike,
    precision: str,
    seq_length: int = 128,
    batch_size: int = 1,
    int8: Int8Options = Int8Options(),
    dynamic_shape: bool = False,
    probabilities: bool = False,
) -> int:
    """Converts (see `convert`) and writes `path` atomically; returns its size in bytes."""
    flatbuffer = convert(
        model, precision, seq_length, batch_size, int8, dynamic_shape, probabilities
    )
    with atomic.atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(flatbuffer)
    return len(flatbuffer)


def export_qat_tflite(model, path: str | os.PathLike, seq_length: int = 128) -> int:
    """A quantization-aware trained model (`mbert_lib.compress.qat`) as an int8 .tflite
    at `path`, atomically; returns its size in bytes. The converter's default
    optimization without a calibration set reads each range from the graph's
    fake-quantizers (tfmot's conversion of a QAT model)."""
    if not qat.is_wrapped(model):
        raise ValueError(
            f"{model.name} carries no QAT wrappers: fine-tune it with qat.enabled "
            "(mbert_lib.compress.qat.wrap_for_qat), or export it post-training (export_tflite)"
        )
    return export_tflite(model, path, "dynamic_int8", seq_length)


FLOAT_ATTENTION_OPS = ("BATCH_MATMUL", "SOFTMAX")


def convert_int8_float_attention(
    model,
    representative_dataset: Callable[[], Iterable],
    seq_length: int = 128,
    float_ops: Iterable[str] = FLOAT_ATTENTION_OPS,
    int8_mask_penalty: float = inference.DEFAULT_MASK_PENALTY,
) -> bytes:
    """`model` as the `int8` precision converts it, with the ops in `float_ops` (by
    default attention's batched products and its softmax) kept in float: the converter's
    selective quantization (`QuantizationDebugger` with `denylisted_ops`). LiteRT's
    XNNPACK delegate has no int8 kernel for those two, so a full-integer file runs them
    in the interpreter's reference kernels; kept in float, XNNPACK runs the whole graph
    (docs/compression.md). `representative_dataset` is called twice (calibration and
    the debugger's own pass)."""
    inference.check_mask_penalty(int8_mask_penalty, "int8_mask_penalty")
    function = serving_function(model, seq_length, 1, int8_mask_penalty)
    weights = tf.Module()
    weights.variables_list = list(model.weights)
    converter = make_converter(function, "int8", representative_dataset, weights)
    debugger = tf.lite.experimental.QuantizationDebugger(
        converter=converter,
        debug_dataset=representative_dataset,
        debug_options=tf.lite.experimental.QuantizationDebugOptions(denylisted_ops=list(float_ops)),
    )
    return debugger.get_nondebug_quantized_model()
