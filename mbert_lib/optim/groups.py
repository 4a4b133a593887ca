"""Per-variable learning rates: several optimizers, each over its own variables, in one step.

Progressive transfer trains the layers below the current one at a reduced
learning rate (×0.1 in the original code). Scaling their gradients by 0.1
would not do it: Adam and LAMB normalise the update by the gradient's own
running RMS (m̂ / √v̂), so an update is invariant to scaling the gradient.
The rate itself must differ, which is what this wrapper provides: one
optimizer (with its own schedule) per group of variables.

Clipping by global norm is done here, once, over the gradients of all
groups together (BERT's `clip_by_global_norm`); the wrapped optimizers must
not clip again (create them with `global_clipnorm=None`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import tensorflow as tf


class GroupedOptimizer(tf.Module):
    """Routes each variable's gradient to the optimizer of its group.

    Usage: `opt = GroupedOptimizer([full, reduced], global_clipnorm=1.0)`, then
    `opt.build([full_vars, reduced_vars])`, then `opt.apply_gradients(zip(g, v))`
    as with one optimizer. `learning_rate` and `iterations` are the first
    group's. Checkpoint it like an optimizer: it tracks its optimizers.
    """

    def __init__(
        self,
        optimizers: Sequence,
        global_clipnorm: float | None = None,
        name: str = "grouped_optimizer",
    ):
        super().__init__(name=name)
        if not optimizers:
            raise ValueError("GroupedOptimizer needs at least one optimizer")
        for opt in optimizers:
            if getattr(opt, "global_clipnorm", None) or getattr(opt, "clipnorm", None):
                raise ValueError(
                    f"optimizer {opt.name} clips its gradients itself; create it "
                    "with global_clipnorm=None (the group clips them together)"
                )
        self.optimizers = list(optimizers)
        self.global_clipnorm = global_clipnorm
        object.__setattr__(self, "_group_of", None)  # {variable ref: group index}, untracked

    def build(self, variable_lists: Sequence[Sequence[tf.Variable]]) -> None:
        """Creates each optimizer's slots for its variables; a variable may be in one group only."""
        if len(variable_lists) != len(self.optimizers):
            raise ValueError(
                f"got {len(variable_lists)} variable lists for {len(self.optimizers)} optimizers"
            )
        group_of = {}
        for index, (optimizer, variables) in enumerate(zip(self.optimizers, variable_lists)):
            for v in variables:
                if v.ref() in group_of:
                    raise ValueError(
                        f"variable {v.name} is in groups {group_of[v.ref()]} and {index}"
                    )
                group_of[v.ref()] = index
            optimizer.build(list(variables))
        object.__setattr__(self, "_group_of", group_of)

    @property
    def learning_rate(self):
        return self.optimizers[0].learning_rate

    @property
    def iterations(self):
        return self.optimizers[0].iterations

    def apply_gradients(self, grads_and_vars: Iterable, skip_gradients_aggregation: bool = False):
        if self._group_of is None:
            raise ValueError(
                "call GroupedOptimizer.build(variable_lists) before applying gradients"
            )
        pairs = list(grads_and_vars)
        grads = [g for g, _ in pairs]
        if self.global_clipnorm:
            grads, _ = tf.clip_by_global_norm(grads, self.global_clipnorm)
        per_group = [[] for _ in self.optimizers]
        for g, (_, v) in zip(grads, pairs):
            if v.ref() not in self._group_of:
                raise ValueError(f"variable {v.name} is in no group of this optimizer")
            per_group[self._group_of[v.ref()]].append((g, v))
        for optimizer, group in zip(self.optimizers, per_group):
            if group:
                optimizer.apply_gradients(
                    group, skip_gradients_aggregation=skip_gradients_aggregation
                )
