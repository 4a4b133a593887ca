"""Magnitude pruning with TensorFlow Model Optimization (tfmot), on our subclassed models.

Magnitude pruning keeps, in each pruned kernel W, the entries of largest magnitude and
zeroes the fraction s of smallest ones, while fine-tuning goes on:

    M_ij = 1[|W_ij| ≥ τ_s(W)],   W ← W ⊙ M          τ_s(W): the s-quantile of |W|

with s raised along tfmot's polynomial decay schedule from s_0 at step t_0 to s_f at t_1
(the masks are recomputed every `frequency` steps in between):

    s(t) = s_f + (s_0 − s_f) · (1 − (t − t_0) / (t_1 − t_0))³

tfmot computes the masks and the schedule (`prune_low_magnitude`, `PolynomialDecay`). It
wraps Sequential and Functional models whole, not subclassed ones like ours, so
`wrap_kernels` wraps, in place, each kernel-holding layer of the encoder's blocks: the
bottlenecks, the attention projections and the FFNs. The embeddings, the norms, the pooler
and the classifier head stay dense, as in the usual recipe for BERT. `strip` puts the
plain layers back, with their zeros. `prune_once` applies the masks once, untrained, to one
block or to all: the probe of a sensitivity scan. Fine-tuning prunes through
`prune.sparsity` of its experiment (mbert_lib.experiment.finetune.PruneSection).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow_model_optimization as tfmot
import tf_keras

# The wrapper's class is not in tfmot's public API; its module path is stable in 0.8.
from tensorflow_model_optimization.python.core.sparsity.keras.pruning_wrapper import (
    PruneLowMagnitude,
)

from mbert_lib.experiment import check_sparsity
from mbert_lib.layers.attention import HeadMerge, HeadProjection, MultiHeadAttention
from mbert_lib.layers.fast.dense import Dense
from mbert_lib.layers.ffn import FeedForward
from mbert_lib.layers.transformer import MobileBertTransformer
from mbert_lib.models import dummy_inputs

# Layers whose sublayers are pruned, and the sublayer types pruned in them.
OWNERS = (MobileBertTransformer, MultiHeadAttention, FeedForward)
KERNELS = (Dense, HeadProjection, HeadMerge)


@dataclasses.dataclass(frozen=True)
class Schedule:
    """tfmot's PolynomialDecay from `initial` at step `begin` to `final` at step `end`,
    the masks updated every `frequency` steps."""

    final: float
    begin: int = 0
    end: int = 1000
    initial: float = 0.0
    frequency: int = 100

    def __post_init__(self):
        check_sparsity(self.final, "final sparsity")
        check_sparsity(self.initial, "initial sparsity")
        if not 0 <= self.begin < self.end:
            raise ValueError(f"need 0 <= begin < end, got begin {self.begin}, end {self.end}")
        if self.frequency < 1:
            raise ValueError(f"frequency must be >= 1, got {self.frequency}")

    @classmethod
    def over(cls, prune, train_steps: int) -> Schedule:
        """The schedule of a fine-tuning experiment's `prune` section over a run of
        `train_steps` steps (its fractions of the run become steps)."""
        begin = int(round(prune.begin_fraction * train_steps))
        end = max(begin + 1, int(round(prune.end_fraction * train_steps)))
        return cls(final=prune.sparsity, begin=begin, end=end, frequency=prune.frequency)

    def tfmot(self) -> tfmot.sparsity.keras.PolynomialDecay:
        return tfmot.sparsity.keras.PolynomialDecay(
            self.initial, self.final, self.begin, self.end, frequency=self.frequency
        )

    def sparsity_at(self, step: int) -> float:
        """s(step): the closed form above (for checks and plots)."""
        t = min(max(step, self.begin), self.end)
        left = 1 - (t - self.begin) / (self.end - self.begin)
        return self.final + (self.initial - self.final) * left**3


class _Kernel(tf_keras.layers.Wrapper):
    """A kernel-holding layer as tfmot wants it: its one prunable weight is the kernel."""

    def call(self, inputs):
        return self.layer(inputs)

    def get_prunable_weights(self):
        return [self.layer.kernel]


def encoder_blocks(model) -> list:
    """The transformer blocks of an encoder, or of a classifier's or pre-training model's
    encoder, in order."""
    encoder = getattr(model, "encoder", model)
    if not hasattr(encoder, "blocks"):
        raise ValueError(f"{model.name} has no encoder blocks to prune")
    return list(encoder.blocks)


def pruning_targets(model, block: int | None = None) -> list[tuple[tf_keras.layers.Layer, str]]:
    """(owner, attribute) of every kernel-holding layer inside the encoder's blocks (or
    of its pruning wrapper once wrapped), in model order; only block `block`'s if given."""
    if block is None:
        scope = model
    else:
        blocks = encoder_blocks(model)
        if not isinstance(block, int) or not 0 <= block < len(blocks):
            raise ValueError(f"block must be an index in [0, {len(blocks)}), got {block!r}")
        scope = blocks[block]
    targets = []
    for owner in (scope, *scope.submodules):
        if not isinstance(owner, OWNERS):
            continue
        for name, value in vars(owner).items():
            if not name.startswith("_") and isinstance(value, (*KERNELS, PruneLowMagnitude)):
                targets.append((owner, name))
    return targets


def wrap_kernels(model, schedule: Schedule, inputs=None, block: int | None = None) -> list:
    """Wraps each pruning target of `model` (built; only block `block`'s if given) in
    tfmot's PruneLowMagnitude, in place; builds the wrappers on `inputs` (default: a dummy
    batch) and sets their step to 0. Returns the wrappers. Train with `training=True`:
    each such call advances the step and applies the masks."""
    wrappers = []
    for owner, name in pruning_targets(model, block):
        layer = getattr(owner, name)
        if isinstance(layer, PruneLowMagnitude):
            raise ValueError(f"{owner.name}.{name} is already wrapped for pruning")
        wrapped = tfmot.sparsity.keras.prune_low_magnitude(
            _Kernel(layer, name=f"{layer.name}_kernel"), pruning_schedule=schedule.tfmot()
        )
        setattr(owner, name, wrapped)
        wrappers.append(wrapped)
    if not wrappers:
        raise ValueError(f"{model.name} has no layer to prune (no transformer block found)")
    model(dummy_inputs() if inputs is None else inputs, training=False)
    for wrapper in wrappers:
        wrapper.pruning_step.assign(0)
    return wrappers


def strip(model) -> int:
    """Applies each wrapper's mask to its kernel one last time and puts the plain layer
    back in its place. Returns how many layers it unwrapped."""
    unwrapped = 0
    for owner, name in pruning_targets(model):
        wrapper = getattr(owner, name)
        if isinstance(wrapper, PruneLowMagnitude):
            wrapper.pruning_obj.weight_mask_op()
            setattr(owner, name, wrapper.layer.layer)
            unwrapped += 1
    return unwrapped


def prune_once(model, sparsity: float, block: int | None = None, inputs=None) -> None:
    """One-shot magnitude pruning, in place and without training: tfmot's masks at
    `sparsity`, computed once and applied, for block `block`'s kernels (every block's when
    None). The probe of a sensitivity scan."""
    check_sparsity(sparsity)
    schedule = Schedule(final=sparsity, initial=sparsity, begin=0, end=1, frequency=1)
    wrap_kernels(model, schedule, inputs, block)
    model(dummy_inputs() if inputs is None else inputs, training=True)  # step 1: the masks
    strip(model)


def _kernels(model):
    """The kernel variable of each pruning target, wrapped or not."""
    for owner, name in pruning_targets(model):
        layer = getattr(owner, name)
        yield layer.layer.layer.kernel if isinstance(layer, PruneLowMagnitude) else layer.kernel


def kernel_sparsity(model) -> dict[str, float]:
    """{kernel's variable name: fraction of exact zeros} over the pruning targets."""
    return {kernel.name: float(np.mean(kernel.numpy() == 0)) for kernel in _kernels(model)}


def overall_sparsity(model) -> float:
    """The fraction of zeros over all pruned kernels together."""
    values = [kernel.numpy() for kernel in _kernels(model)]
    return sum(int(np.sum(v == 0)) for v in values) / sum(v.size for v in values)


def magnitude_mask(kernel: np.ndarray, sparsity: float) -> np.ndarray:
    """The mask magnitude pruning gives `kernel` at `sparsity`, in NumPy: 1 where |W| is
    above the `sparsity`-quantile of |W| (an independent check of tfmot's)."""
    k = int(round(sparsity * kernel.size))
    if k == 0:
        return np.ones_like(kernel)
    threshold = np.sort(np.abs(kernel).ravel())[k - 1]
    return (np.abs(kernel) > threshold).astype(kernel.dtype)


__all__ = [
    "Schedule",
    "encoder_blocks",
    "kernel_sparsity",
    "magnitude_mask",
    "overall_sparsity",
    "prune_once",
    "pruning_targets",
    "strip",
    "wrap_kernels",
]
