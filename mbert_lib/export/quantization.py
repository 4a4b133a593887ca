"""The arithmetic of 8-bit post-training quantization, in numpy (paper section 4.6, Table 6).

TFLite stores a quantized tensor as integers q and recovers real values as

    x̂ = s · (q − z)                      (affine quantization)

with a scale s > 0 and a zero point z per tensor, or per output channel for
weights. Weights are quantized symmetrically (z = 0) to q ∈ [−127, 127] with
s = max|W[:, j]| / 127 per output channel j; activations (full-integer int8
only) asymmetrically to q ∈ [−128, 127] over the range [a, b] the calibration
set produced, s = (b − a) / 255. Rounding to the nearest level errs by at
most s / 2 inside the range; a range stretched by one huge value (an
attention mask of −1e9) makes s so large that every ordinary value falls on
the same level. These functions reproduce the rules so a notebook can show
both effects on real weights; the converter itself does the exporting
(`mbert_lib.export.tflite`).
"""

from __future__ import annotations

import os

import numpy as np

INT8_MIN, INT8_MAX = -128, 127


def _round(x: np.ndarray) -> np.ndarray:
    """Round half away from zero (std::round, as TFLite's quantizer), not numpy's half-to-even."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def quantize_weights(w: np.ndarray, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per output channel: (q int8 like w, scale [w.shape[axis]]).

    `axis` is the output-channel axis (the last one of a Keras Dense kernel
    [in, out]). A channel of zeros gets scale 1 (q = 0 represents it exactly).
    """
    w = np.asarray(w, np.float32)
    axis = axis % w.ndim
    others = tuple(i for i in range(w.ndim) if i != axis)
    scale = np.max(np.abs(w), axis=others) / INT8_MAX  # [C]
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(_round(w / scale.reshape(shape)), -INT8_MAX, INT8_MAX)  # x̂ = s·q, z = 0
    return q.astype(np.int8), scale


def dequantize(q: np.ndarray, scale: np.ndarray, zero_point=0, axis: int = -1) -> np.ndarray:
    """x̂ = s · (q − z), with s (and z) per channel along `axis` or scalars."""
    q = np.asarray(q, np.float32)
    scale, zero_point = np.asarray(scale, np.float32), np.asarray(zero_point, np.float32)
    if scale.ndim:
        shape = [1] * q.ndim
        shape[axis % q.ndim] = -1
        scale = scale.reshape(shape)
        zero_point = zero_point.reshape(shape) if zero_point.ndim else zero_point
    return scale * (q - zero_point)


def activation_params(low: float, high: float) -> tuple[float, int]:
    """(scale, zero_point) of asymmetric int8 over the calibrated range [low, high].

    The range is widened to hold 0 (so that zero padding is exact), as TFLite does.
    """
    low, high = min(float(low), 0.0), max(float(high), 0.0)
    scale = (high - low) / (INT8_MAX - INT8_MIN) if high > low else 1.0
    zero_point = int(np.clip(_round(INT8_MIN - low / scale), INT8_MIN, INT8_MAX))
    return scale, zero_point


def quantize_activations(x: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """q = clip(round(x / s) + z) as int8."""
    q = _round(np.asarray(x, np.float64) / scale) + zero_point
    return np.clip(q, INT8_MIN, INT8_MAX).astype(np.int8)


def fake_quantize(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """x through int8 and back with the range [low, high]: what an int8 tensor can hold of x."""
    scale, zero_point = activation_params(low, high)
    return dequantize(quantize_activations(x, scale, zero_point), scale, zero_point)


def int8_tensors(model: str | os.PathLike | bytes) -> list[dict]:
    """The int8 tensors stored in a .tflite file (path or bytes), as the converter wrote them.

    Each: name, shape, q (the int8 values), scales and zero_points (one per
    channel along `axis`, or one each). For a dynamic-range model these are
    the weights (a Dense kernel [in, out] is stored transposed, [out, in],
    axis 0); for a full-integer model, activations too.
    """
    # on use: LiteRT's runtime loads when a model runs, after TensorFlow's
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    # Without XNNPACK: the delegate packs the constant tensors it takes and frees their
    # data (get_tensor then fails with "Tensor data is null" on a full-integer model),
    # and it announces itself on stderr.
    source = (
        {"model_content": bytes(model)}
        if isinstance(model, (bytes, bytearray))
        else {"model_path": os.fspath(model)}
    )
    interpreter = Interpreter(
        **source, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    )
    interpreter.allocate_tensors()
    out = []
    for detail in interpreter.get_tensor_details():
        if detail["dtype"] != np.int8:
            continue
        params = detail["quantization_parameters"]
        if not len(params["scales"]):  # a kernel's runtime scratch tensor, not in the file
            continue
        out.append(
            {
                "name": detail["name"],
                "shape": tuple(int(s) for s in detail["shape"]),
                "q": np.array(interpreter.get_tensor(detail["index"])),
                "scales": np.array(params["scales"]),
                "zero_points": np.array(params["zero_points"]),
                "axis": int(params["quantized_dimension"]),
            }
        )
    return out
