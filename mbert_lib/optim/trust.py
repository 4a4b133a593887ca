"""What one LAMB update would do to each variable: norms and trust ratios, without applying it.

`lamb_step_report(optimizer, grads, variables)` clips the gradients as
`apply_gradients` would (global norm), then asks `Lamb.direction` for each
variable's update u_t and trust ratio ‖x_t‖ / ‖u_t‖ (see `mbert_lib.optim.lamb`).
Nothing is assigned: the optimizer's moments and iteration count and the
variables stay as they are, so a report can be taken in the middle of a run.

Per variable, with η_t the learning rate of the next update:

    step_norm     = η_t · ratio · ‖u_t‖    how far the variable moves
    relative_step = step_norm / ‖x_t‖      = η_t for every layer-adapted variable:
                                           LAMB's point is that each "layer"
                                           moves by the same fraction of its norm
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd
import tensorflow as tf
import tf_keras

from mbert_lib.optim.lamb import Lamb, variable_name


def lamb_step_report(
    optimizer: Lamb, grads: Sequence[tf.Tensor], variables: Sequence[tf.Variable]
) -> pd.DataFrame:
    """One row per variable: variable, size, weight_norm, update_norm, trust_ratio,
    decayed, adapted, learning_rate, step_norm, relative_step.

    The optimizer must be built for `variables` (`optimizer.build(variables)`).
    """
    if not isinstance(optimizer, Lamb):
        raise ValueError(
            f"lamb_step_report needs a mbert_lib.optim.Lamb, got {type(optimizer).__name__}"
        )
    variables = list(variables)
    if len(grads) != len(variables):
        raise ValueError(f"got {len(grads)} gradients for {len(variables)} variables")
    missing = [v.name for v, g in zip(variables, grads) if g is None]
    if missing:
        raise ValueError(f"no gradient for {missing}")
    grads = optimizer._clip_gradients([tf.convert_to_tensor(g) for g in grads])
    lr = next_learning_rate(optimizer)
    rows = []
    for gradient, variable in zip(grads, variables):
        _, _, update, ratio = optimizer.direction(gradient, variable)
        weight_norm = float(tf.norm(variable))
        update_norm = float(tf.norm(update))
        ratio = float(ratio)
        step_norm = lr * ratio * update_norm
        rows.append(
            {
                "variable": variable_name(variable),
                "size": int(np.prod(variable.shape)),
                "weight_norm": weight_norm,
                "update_norm": update_norm,
                "trust_ratio": ratio,
                "decayed": optimizer.uses_weight_decay(variable),
                "adapted": optimizer.uses_layer_adaptation(variable),
                "learning_rate": lr,
                "step_norm": step_norm,
                "relative_step": step_norm / weight_norm if weight_norm > 0 else float("nan"),
            }
        )
    return pd.DataFrame(rows)


def next_learning_rate(optimizer) -> float:
    """η of the next update. (`optimizer.learning_rate` is the rate of the *last*
    update when it follows a schedule: tf_keras refreshes it inside apply_gradients.)"""
    schedule = optimizer._learning_rate
    if isinstance(schedule, tf_keras.optimizers.schedules.LearningRateSchedule):
        return float(schedule(optimizer.iterations))
    return float(optimizer.learning_rate)


def short_variable_name(name: str) -> str:
    """A pretrainer variable name without the model prefixes, for figure labels:
    'pretrainer/mobile_bert_encoder/layer_0/attention/query/kernel' ->
    'layer_0/attention/query/kernel', 'pretrainer/cls_predictions/output_bias' ->
    'cls_predictions/output_bias'."""
    return re.sub(r"^(pretrainer/)?(mobile_bert_encoder/)?|:\d+$", "", name)
