"""Where an int8 file loses the signal: every block's output against the same graph in float.

A classifier of L blocks is converted with L + 1 outputs, `block_0` … `block_{L−1}` (the
hidden state after each block, [B, T, H]) and `logits` [B, C]. The extra outputs read
tensors the graph computes anyway, but the converter can no longer fuse an op across
them, so this file's logits can differ from the deployed file's by a few int8 steps
(measure the deployed file's logits too). The reference is the same forward in float,
with the same attention mask:

    e_k = ‖ŷ_k − y_k‖_F / ‖y_k‖_F        over every example, position and feature

An error that grows evenly from block to block is rounding carried forward; a jump at one
block is that block's own quantization. `agreement` is the share of examples whose
predicted class the int8 file keeps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import numpy as np
import tensorflow as tf

from mbert_lib.export import inference, tflite
from mbert_lib.export.interpreter import TFLiteModel
from mbert_lib.models import INPUT_NAMES, Classifier


def block_outputs(model: Classifier, inputs, mask_penalty: float | None = None) -> dict:
    """{"block_k": [B, T, H] for each block, "logits": [B, C]}: the model's own forward
    (mask_penalty None) or the bounded-mask one of `inference`."""
    if not isinstance(model, Classifier):
        raise ValueError(f"block_outputs needs a Classifier, got {type(model).__name__}")
    if mask_penalty is None:
        outputs = model.encoder(inputs, training=False)
    else:
        outputs = inference.encoder_forward(model.encoder, inputs, mask_penalty)
    blocks = {f"block_{k}": x for k, x in enumerate(outputs["encoder_outputs"])}
    return {**blocks, "logits": model.head(outputs["pooled_output"], training=False)}


def convert_with_block_outputs(
    model: Classifier,
    precision: str,
    seq_length: int = 128,
    representative_dataset: Callable[[], Iterable] | None = None,
    mask_penalty: float | None = None,
) -> bytes:
    """`model` at `precision` (`tflite.PRECISIONS`; a QAT-wrapped model at "dynamic_int8",
    as `export_qat_tflite` converts it) with the outputs of `block_outputs`, batch 1."""
    spec = {name: tf.TensorSpec([1, seq_length], tf.int32, name=name) for name in INPUT_NAMES}
    function = tf.function(
        lambda inputs: block_outputs(model, inputs, mask_penalty), input_signature=[spec]
    ).get_concrete_function()
    weights = tf.Module()
    weights.variables_list = list(model.weights)
    return tflite.make_converter(function, precision, representative_dataset, weights).convert()


def relative_errors(
    reference: Mapping[str, np.ndarray], got: Mapping[str, np.ndarray]
) -> dict[str, float]:
    """{output: ‖got − reference‖_F / ‖reference‖_F} over the outputs both hold."""
    return {
        name: float(np.linalg.norm(got[name] - reference[name]) / np.linalg.norm(reference[name]))
        for name in reference
        if name in got
    }


def layer_errors(
    float_model: Classifier,
    flatbuffer: bytes,
    features: Mapping[str, np.ndarray],
    mask_penalty: float | None = None,
    batch_size: int = 32,
) -> dict:
    """The int8 file's error per block against `float_model`'s float forward on `features`
    ({name: [n, T]}): {"relative_error": {output: e}, "agreement": share of equal argmax}."""
    n = len(features[INPUT_NAMES[0]])
    reference = {}
    for start in range(0, n, batch_size):
        batch = {k: v[start : start + batch_size] for k, v in features.items()}
        for name, value in block_outputs(float_model, batch, mask_penalty).items():
            reference.setdefault(name, []).append(value.numpy())
    reference = {name: np.concatenate(parts) for name, parts in reference.items()}
    got = TFLiteModel(flatbuffer, num_threads=1).predict(features)
    agreement = np.mean(np.argmax(got["logits"], -1) == np.argmax(reference["logits"], -1))
    return {"relative_error": relative_errors(reference, got), "agreement": float(agreement)}
