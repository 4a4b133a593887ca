"""Full-integer int8 through Google's AI Edge Quantizer, the converter's peer.

`ai-edge-quantizer` rewrites a float .tflite file. Its static recipe (`static_wi8_ai8`)
gives what the converter's `int8` precision gives: int8 weights, one scale per output
channel, and int8 activations whose ranges come from calibration examples (min/max):

    x ≈ s·(q − z),   q ∈ [−128, 127],   s = (max − min) / 255

It starts from a float file with the bounded attention mask of `inference`, for the
reason `int8` uses it: with the model's own −1e9 mask the calibrated range of the
attention scores is ~1e9 wide, s swallows every real score, and attention turns uniform.
`float_ops` keeps whole op types in float, the quantizer's equivalent of
`tflite.convert_int8_float_attention`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import tensorflow as tf

from mbert_lib.export import inference, tflite
from mbert_lib.export.representative import check_features
from mbert_lib.models import INPUT_NAMES

SIGNATURE = "serving_default"


def float_flatbuffer(
    model, seq_length: int = 128, mask_penalty: float = inference.DEFAULT_MASK_PENALTY
) -> bytes:
    """`model` as an fp32 .tflite at batch 1 with the bounded mask (scores ⊙ m − c(1 − m))."""
    inference.check_mask_penalty(mask_penalty, "mask_penalty")
    function = tflite.serving_function(model, seq_length, 1, mask_penalty)
    weights = tf.Module()
    weights.variables_list = list(model.weights)
    return tflite.make_converter(function, "fp32", None, weights).convert()


def convert_static_int8(
    model,
    calibration: Mapping[str, np.ndarray],
    seq_length: int = 128,
    float_ops: Iterable[str] = (),
    mask_penalty: float = inference.DEFAULT_MASK_PENALTY,
) -> bytes:
    """`model` as a static int8 .tflite: its bounded-mask fp32 file (`float_flatbuffer`),
    quantized by `quantize_static_int8`."""
    check_features(calibration, seq_length)
    return quantize_static_int8(
        float_flatbuffer(model, seq_length, mask_penalty), calibration, float_ops
    )


def quantize_static_int8(
    flatbuffer: bytes, calibration: Mapping[str, np.ndarray], float_ops: Iterable[str] = ()
) -> bytes:
    """A float .tflite (inputs `INPUT_NAMES`, signature `serving_default`) rewritten by
    ai-edge-quantizer's `static_wi8_ai8` recipe: int8 weights per channel, int8
    activations whose min/max the quantizer calibrates as a moving average over the
    examples (weight 0.95 on the past).

    calibration: features {name: [n, T] int32}, run one example at a time.
    float_ops: TFLite op names ("BATCH_MATMUL", "SOFTMAX", ...) left in float.
    """
    try:
        # on use: an optional client (requirements-clients.txt), like onnxruntime
        from ai_edge_quantizer import algorithm_manager, qtyping, quantizer, recipe_manager
    except ImportError as e:
        raise ImportError(
            "quantize_static_int8 needs ai-edge-quantizer: "
            "pip install -r requirements-clients.txt -c constraints.txt"
        ) from e
    n = check_features(calibration)
    recipe = recipe_manager.RecipeManager()
    recipe.add_static_config(
        regex=".*",
        operation_name=qtyping.TFLOperationName.ALL_SUPPORTED,
        activation_num_bits=8,
        weight_num_bits=8,
    )
    for op in float_ops:
        if op not in qtyping.TFLOperationName.__members__:
            raise ValueError(f"float_ops: {op!r} is not a TFLite op name the quantizer knows")
        recipe.add_quantization_config(
            regex=".*",
            operation_name=qtyping.TFLOperationName[op],
            algorithm_key=algorithm_manager.AlgorithmName.NO_QUANTIZE,
        )
    quantize = quantizer.Quantizer(flatbuffer)
    quantize.load_quantization_recipe(recipe.get_quantization_recipe())
    examples = [
        {name: np.asarray(calibration[name][i : i + 1], np.int32) for name in INPUT_NAMES}
        for i in range(n)
    ]
    ranges = quantize.calibrate({SIGNATURE: examples}, num_threads=1)
    return bytes(quantize.quantize(ranges).quantized_model)
