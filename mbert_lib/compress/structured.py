"""Structured pruning: whole FFN units out, so that the dense shapes shrink.

A feed-forward network is a sum over its I units; unit j is column j of W_1 (with b_1[j])
and row j of W_2:

    FFN(h) = W_2ᵀ act(W_1ᵀ h + b_1) + b_2 = Σ_j W_2[j, :] · act(W_1[:, j]·h + b_1[j]) + b_2

Taking unit j out removes one term of the sum and shrinks W_1 to [w, I − 1] and W_2 to
[I − 1, w]: unlike magnitude pruning's zeros, the matrices a runtime multiplies get
smaller, and so does the time. A unit's score bounds what it can add for an input of
unit norm (relu and gelu satisfy |act(a)| ≤ |a|):

    score_j = (‖W_1[:, j]‖₂ + |b_1[j]|) · ‖W_2[j, :]‖₂

Each FFN keeps its own highest-scoring units. The config has one `intermediate_size`,
so every FFN of every block keeps the same number of them. tfmot prunes weights, not
units (its 2:4 structured sparsity keeps the shapes), so this is written here.
"""

from __future__ import annotations

import numpy as np

from mbert_lib.layers.ffn import FeedForward
from mbert_lib.models import dummy_inputs


def unit_scores(ffn: FeedForward) -> np.ndarray:
    """[I] the score of each unit of a built FeedForward (the formula above)."""
    w1 = ffn.intermediate.kernel.numpy()  # [w, I]
    b1 = ffn.intermediate.bias.numpy()  # [I]
    w2 = ffn.output_dense.kernel.numpy()  # [I, w]
    return (np.linalg.norm(w1, axis=0) + np.abs(b1)) * np.linalg.norm(w2, axis=1)


def kept_units(ffn: FeedForward, keep: int) -> np.ndarray:
    """The indices of the `keep` highest-scoring units, in their original order."""
    return np.sort(np.argsort(-unit_scores(ffn), kind="stable")[:keep])


def units_to_keep(intermediate_size: int, fraction: float) -> int:
    """I − round(fraction · I); raises ValueError unless 0 <= fraction < 1 keeps a unit."""
    if isinstance(fraction, bool) or not isinstance(fraction, int | float):
        raise ValueError(f"fraction of FFN units must be a number in [0, 1), got {fraction!r}")
    keep = intermediate_size - int(round(fraction * intermediate_size))
    if not 0 <= fraction < 1 or keep < 1:
        raise ValueError(
            f"fraction of FFN units must be in [0, 1) and keep at least one of "
            f"{intermediate_size}, got {fraction!r}"
        )
    return keep


def feed_forwards(model) -> list[FeedForward]:
    """Every FeedForward of `model`, in model order."""
    return [m for m in model.submodules if isinstance(m, FeedForward)]


def prune_ffn_units(model, fraction: float, build):
    """A copy of `model` (built) whose every FFN keeps its best 1 − `fraction` of units.

    build: config -> an unbuilt model of the same kind (e.g. `build_encoder`). Every
    weight outside the FFNs' two dense layers is copied as it is; those two are sliced to
    the kept units. Returns the new model; its `config.intermediate_size` is the units
    kept."""
    config = model.config
    keep = units_to_keep(config.intermediate_size, fraction)
    pruned = build(config.replace(intermediate_size=keep))
    pruned(dummy_inputs(), training=False)
    old_ffns, new_ffns = feed_forwards(model), feed_forwards(pruned)
    sliced = {
        v.ref()
        for f in new_ffns
        for v in (f.intermediate.kernel, f.intermediate.bias, f.output_dense.kernel)
    }
    if len(model.weights) != len(pruned.weights):
        raise ValueError(f"{model.name} and its pruned copy do not have the same weights")
    for old, new in zip(model.weights, pruned.weights, strict=True):
        if new.ref() not in sliced:
            new.assign(old)
    for old, new in zip(old_ffns, new_ffns, strict=True):
        units = kept_units(old, keep)
        new.intermediate.kernel.assign(old.intermediate.kernel.numpy()[:, units])
        new.intermediate.bias.assign(old.intermediate.bias.numpy()[units])
        new.output_dense.kernel.assign(old.output_dense.kernel.numpy()[units, :])
    return pruned


__all__ = ["feed_forwards", "kept_units", "prune_ffn_units", "unit_scores", "units_to_keep"]
