"""Quantization-aware training (QAT) with TensorFlow Model Optimization, on our layers.

Training sees the rounding the int8 model will do. Each quantized tensor x passes
through a fake-quantizer that rounds it to one of 256 levels of its range [a, b] and
returns a float:

    q(x) = a + s · round((clip(x, a, b) − a) / s),      s = (b − a) / 255

Weights take their range from their current values (symmetric, [−max|W|, max|W|]);
activations from a moving average of the ranges seen in training. The gradient passes
q as if it were the identity (the straight-through estimator), so the weights learn to
sit well on the grid. Q8BERT (Zafrir et al., 2019) trains BERT this way while it is
fine-tuned; so does the pipeline's `qat` row.

tfmot wraps each layer in a `QuantizeWrapperV2` with a `QuantizeConfig` that says which
of its tensors to fake-quantize. Its built-in configs know Keras' own layers, not ours,
and it wraps only Sequential and Functional models, so `wrap_for_qat` sets the wrappers
in place, as `pruning.wrap_kernels` does. Two configs:

* `KernelConfig` for every kernel-holding layer: the kernel and the layer's output.
* `EmbeddingConfig` for the embedding tables: without it the converter keeps them in
  float, and they are most of a small student's bytes.
* `OutputConfig` for NoNorm. NoNorm (γ ⊙ h + β) has no kernel, but its output is the
  input of the next bottleneck, Q/K/V projection or FFN. The converter gives a matmul
  int8 inputs only where the graph records their range. On a two-block student, 30 of
  the 32 matmuls ran in int8 with these three configs, 13 without NoNorm's. The two left
  in float are the attention's output projections: their input, the attention-weighted
  values, is a product inside the attention layer that no wrapper reaches (as are the
  two batched products of attention itself).

The trained model converts as tfmot's guide converts one: the default optimization and
no calibration set, the ranges read from the fake-quantizers
(`mbert_lib.export.tflite.export_qat_tflite`).
MobileBERT's NoNorm and relu are what this recipe was built and tested for; a model with
LayerNorm or gelu (the teacher's IB-BERT variant) is refused (`check_quantizable`).
"""

from __future__ import annotations

import os

import tensorflow as tf
import tensorflow_model_optimization as tfmot
import tf_keras

# The quantizers and the wrapper's class are not all in tfmot's public API; their module
# paths are stable in 0.8.
from tensorflow_model_optimization.python.core.quantization.keras import quantizers
from tensorflow_model_optimization.python.core.quantization.keras.quantize_wrapper import (
    QuantizeWrapperV2,
)

from mbert_lib.checkpoints import load_classifier, read_checkpoint
from mbert_lib.layers.attention import HeadMerge, HeadProjection
from mbert_lib.layers.nonorm import NoNorm
from mbert_lib.models import dummy_inputs

QAT_FILE = "qat.ckpt"  # the wrapped model's weights and ranges, beside a model directory


def _weight_quantizer():
    return quantizers.LastValueQuantizer(
        num_bits=8, per_axis=False, symmetric=True, narrow_range=True
    )


class ZeroPreservingQuantizer(quantizers.LastValueQuantizer):
    """tfmot's symmetric weight quantizer applied to W ⊙ M, with M = 1[W ≠ 0] fixed when
    the wrapper is built. A pruned kernel's zeros stay zeros through QAT: their gradient
    passes the mask and is 0, so Adam never moves them, and 0 sits on the symmetric
    grid. For a dense kernel M is all ones and this is tfmot's quantizer."""

    def __init__(self, kernel):
        super().__init__(num_bits=8, per_axis=False, symmetric=True, narrow_range=True)
        self.kernel = kernel

    def build(self, tensor_shape, name, layer):
        weights = super().build(tensor_shape, name, layer)
        kernel = self.kernel
        weights["zero_mask"] = layer.add_weight(
            f"{name}_zero_mask",
            shape=tensor_shape,
            initializer=lambda shape, dtype=None: tf.cast(tf.not_equal(kernel, 0), kernel.dtype),
            trainable=False,
        )
        return weights

    def __call__(self, inputs, training, weights, **kwargs):
        return super().__call__(inputs * weights["zero_mask"], training, weights, **kwargs)


def _output_quantizer():
    return quantizers.MovingAverageQuantizer(
        num_bits=8, per_axis=False, symmetric=False, narrow_range=False
    )


class KernelConfig(tfmot.quantization.keras.QuantizeConfig):
    """A kernel-holding layer (Dense, HeadProjection, HeadMerge): its kernel, symmetric
    per tensor with its zeros kept (`ZeroPreservingQuantizer`: QAT of a pruned model
    keeps its sparsity), and its output, by moving-average range."""

    def get_weights_and_quantizers(self, layer):
        return [(layer.kernel, ZeroPreservingQuantizer(layer.kernel))]

    def get_activations_and_quantizers(self, layer):
        return []

    def set_quantize_weights(self, layer, quantize_weights):
        layer.kernel = quantize_weights[0]

    def set_quantize_activations(self, layer, quantize_activations):
        pass

    def get_output_quantizers(self, layer):
        return [_output_quantizer()]

    def get_config(self):
        return {}


class EmbeddingConfig(KernelConfig):
    """An embedding table (words, positions, token types): the table itself, symmetric
    per tensor; a lookup's output keeps the table's grid, so it needs no quantizer."""

    def get_weights_and_quantizers(self, layer):
        return [(layer.embeddings, _weight_quantizer())]

    def set_quantize_weights(self, layer, quantize_weights):
        layer.embeddings = quantize_weights[0]

    def get_output_quantizers(self, layer):
        return []


class OutputConfig(KernelConfig):
    """NoNorm: its output alone (see the module docstring for why)."""

    def get_weights_and_quantizers(self, layer):
        return []

    def set_quantize_weights(self, layer, quantize_weights):
        pass


def check_quantizable(config, what: str = "the model") -> None:
    """Raises ValueError naming the config field when QAT here cannot quantize the model."""
    if config.normalization_type != "no_norm":
        raise ValueError(
            f"normalization_type of {what} is {config.normalization_type!r}: quantization-"
            "aware training here needs 'no_norm' (MobileBERT's NoNorm); LayerNorm models "
            "(the IB-BERT teacher) are not supported"
        )
    if config.hidden_act != "relu":
        raise ValueError(
            f"hidden_act of {what} is {config.hidden_act!r}: quantization-aware training "
            "here needs 'relu' (MobileBERT's); gelu models (the IB-BERT teacher) are not "
            "supported"
        )


CONFIGS = (
    ((tf_keras.layers.Dense, HeadProjection, HeadMerge), KernelConfig),
    ((tf_keras.layers.Embedding,), EmbeddingConfig),
    ((NoNorm,), OutputConfig),
)


def qat_targets(model) -> list[tuple[tf_keras.layers.Layer, str, type]]:
    """(owner, attribute, config class) of every layer QAT wraps, in model order: every
    kernel (the blocks', the embedding's projection, the pooler's, the head's), every
    embedding table and every NoNorm."""
    targets = []
    for owner in (model, *model.submodules):
        if isinstance(owner, QuantizeWrapperV2):
            continue
        for name, value in vars(owner).items():
            if name.startswith("_") or isinstance(value, QuantizeWrapperV2):
                continue
            for types, config in CONFIGS:
                if isinstance(value, types):
                    targets.append((owner, name, config))
    return targets


def wrap_for_qat(model, inputs=None) -> list:
    """Wraps, in place, each `qat_targets` layer of `model` (built) in tfmot's
    QuantizeWrapperV2 and builds the wrappers on `inputs` (default: a dummy batch).
    Calls with `training=True` update the activation ranges. Returns the wrappers."""
    check_quantizable(model.config, model.name)
    wrappers = []
    for owner, name, config in qat_targets(model):
        layer = getattr(owner, name)
        if isinstance(layer, QuantizeWrapperV2):
            raise ValueError(f"{owner.name}.{name} is already wrapped for QAT")
        wrapper = QuantizeWrapperV2(layer, config(), name=f"{layer.name}_qat")
        setattr(owner, name, wrapper)
        wrappers.append(wrapper)
    model(dummy_inputs() if inputs is None else inputs, training=False)
    return wrappers


def _wrappers(model) -> list[tuple[tf_keras.layers.Layer, str]]:
    """(owner, attribute) of every QAT wrapper set in `model`."""
    return [
        (owner, name)
        for owner in (model, *model.submodules)
        for name, value in list(vars(owner).items())
        if not name.startswith("_") and isinstance(value, QuantizeWrapperV2)
    ]


def is_wrapped(model) -> bool:
    """True if `model` carries QAT wrappers (`wrap_for_qat`)."""
    return bool(_wrappers(model))


def strip_qat(model) -> int:
    """Puts the plain layers back in place of their QAT wrappers (their float weights,
    trained with the fake-quantizers). Returns how many it unwrapped."""
    found = _wrappers(model)
    for owner, name in found:
        setattr(owner, name, getattr(owner, name).layer)
    return len(found)


def save_ranges(model, directory: str | os.PathLike) -> str:
    """Writes the wrapped `model`'s weights and quantizer ranges to directory/qat.ckpt."""
    if not is_wrapped(model):
        raise ValueError(f"{model.name} carries no QAT wrappers: nothing to save")
    return tf.train.Checkpoint(model=model).write(os.path.join(os.fspath(directory), QAT_FILE))


def load_qat_classifier(directory: str | os.PathLike):
    """The classifier of a QAT fine-tuning run's directory, wrapped again, with the
    ranges training recorded (`save_ranges`)."""
    path = os.path.join(os.fspath(directory), QAT_FILE)
    if not os.path.exists(path + ".index"):
        raise FileNotFoundError(
            f"{directory} has no {QAT_FILE}: it is not a quantization-aware fine-tuning run "
            "(set qat.enabled: true)"
        )
    model = load_classifier(directory)
    wrap_for_qat(model)
    read_checkpoint(tf.train.Checkpoint(model=model), path)
    return model


__all__ = [
    "EmbeddingConfig",
    "KernelConfig",
    "OutputConfig",
    "ZeroPreservingQuantizer",
    "check_quantizable",
    "is_wrapped",
    "load_qat_classifier",
    "qat_targets",
    "save_ranges",
    "strip_qat",
    "wrap_for_qat",
]
