"""NoNorm, MobileBERT's replacement for LayerNorm (paper section 3.3).

    NoNorm(h) = γ ⊙ h + β                       γ, β ∈ R^C, per channel

LayerNorm first standardises each token over its C channels,
    LayerNorm(h) = γ ⊙ (h − μ(h)) / sqrt(σ²(h) + ε) + β,
which needs a mean, a variance and a division per token at inference time.
NoNorm keeps only the per-channel affine map, an element-wise multiply-add;
where no residual sits between it and the preceding dense layer (the input
bottlenecks) it can even be folded into that layer's weights. That is where
the paper's Table 7 latency gain comes from. It is not a re-parameterised
LayerNorm: μ(h) and σ(h) depend on the token, γ and β do not.
"""

import tf_keras

from mbert_lib.layers.fast.layer_norm import LayerNorm

LAYER_NORM_EPSILON = 1e-12  # the original BERT / MobileBERT value


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class NoNorm(tf_keras.layers.Layer):
    """y = γ ⊙ x + β over the last axis. x: [..., C] -> y: [..., C].

    Weights are created as (gamma, beta), the order LayerNormalization uses;
    copy them by name, never by position.
    """

    def build(self, input_shape):
        channels = int(input_shape[-1])
        self.gamma = self.add_weight("gamma", shape=[channels], initializer="ones")
        self.beta = self.add_weight("beta", shape=[channels], initializer="zeros")
        super().build(input_shape)

    def call(self, x):
        return x * self.gamma + self.beta  # NoNorm(h) = γ ⊙ h + β


def make_norm(normalization_type: str, name: str) -> tf_keras.layers.Layer:
    """NoNorm for "no_norm", LayerNorm (a LayerNormalization, ε = 1e-12) for "layer_norm"."""
    if normalization_type == "no_norm":
        return NoNorm(name=name)
    if normalization_type == "layer_norm":
        return LayerNorm(epsilon=LAYER_NORM_EPSILON, name=name)
    raise ValueError(
        f"normalization_type must be 'no_norm' or 'layer_norm', got {normalization_type!r}"
    )
