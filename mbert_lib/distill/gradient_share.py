"""How much of a layer-wise step's gradient comes from each loss term, per variable.

A layer-wise stage minimises FMT_ℓ + w_AT · AT_ℓ. The gradient of the sum is the
sum of the terms' gradients, g = g_FMT + g_AT, and global clipping scales all of
it by c = min(1, clipnorm / ‖g‖) over every trained variable. LAMB then turns
each variable's (clipped) gradient into the direction m̂ / (sqrt(v̂) + ε): a term
whose part of g is small on a variable barely turns that direction, however
large the step. So the question for attention transfer is the share

    share_AT(W) = ‖g_AT(W)‖ / (‖g_FMT(W)‖ + ‖g_AT(W)‖)

on the variables that make the attention scores (the query / key projections and
the bottleneck that feeds them). Clipping multiplies both parts by the same c, so
the shares are the same before and after it; the norms after clipping are c ×
the ones before.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import tensorflow as tf

from mbert_lib.distill.objective import DistillationObjective
from mbert_lib.distill.plan import stage_variables

SCORE_PARTS = ("bottleneck_attention", "attention/query", "attention/key")


def score_variables(student, layer: int) -> list:
    """Block `layer`'s variables that the attention scores depend on directly."""
    block = student.encoder.blocks[layer]
    return [v for v in block.trainable_variables if any(p in v.name for p in SCORE_PARTS)]


def term_gradients(objective: DistillationObjective, batch, variables) -> dict:
    """{"fmt": [g per variable], "at": [...]} of one layer-wise stage's two terms,
    weighted as in its loss (w_AT · AT); the student in training mode."""
    stage = objective.stage
    if not stage.layer_wise or stage.use_pd:
        raise ValueError(f"stage {stage.name}: term gradients need a layer-wise stage without PD")
    tokens = tf.reduce_sum(tf.cast(batch["input_mask"], tf.float32))
    with tf.GradientTape(persistent=True) as tape:
        teacher, student = objective._forward(batch, training=True)
        terms = objective._layer_terms(teacher, student, batch["input_mask"], tokens)
        fmt = tf.add_n([terms[f"layer_{k}/fmt"] for k in stage.transfer_layers])
        at = objective.attention_weight * tf.add_n(
            [terms[f"layer_{k}/at"] for k in stage.transfer_layers]
        )
    out = {
        name: [
            tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
            for v, g in zip(variables, tape.gradient(loss, variables))
        ]
        for name, loss in (("fmt", fmt), ("at", at))
    }
    del tape
    return out


def gradient_shares(objective: DistillationObjective, batch, clipnorm: float = 1.0) -> pd.DataFrame:
    """Per score variable of the stage's layer: ‖g_FMT‖, ‖g_AT‖ before and after global
    clipping (over every variable the stage trains) and AT's share (module docstring)."""
    trained = [v for vs in stage_variables(objective.student, objective.stage).values() for v in vs]
    grads = term_gradients(objective, batch, trained)
    total = np.sqrt(
        sum(float(tf.reduce_sum(tf.square(a + b))) for a, b in zip(grads["fmt"], grads["at"]))
    )
    scale = min(1.0, clipnorm / total) if total > 0 else 1.0
    wanted = {
        v.ref()
        for k in objective.stage.transfer_layers
        for v in score_variables(objective.student, k)
    }
    rows = []
    for v, g_fmt, g_at in zip(trained, grads["fmt"], grads["at"]):
        if v.ref() not in wanted:
            continue
        n_fmt, n_at = float(tf.norm(g_fmt)), float(tf.norm(g_at))
        rows.append(
            {
                "variable": v.name,
                "|g_FMT|": n_fmt,
                "|g_AT|": n_at,
                "|g_FMT| clipped": scale * n_fmt,
                "|g_AT| clipped": scale * n_at,
                "AT share": n_at / (n_fmt + n_at) if n_fmt + n_at > 0 else float("nan"),
            }
        )
    frame = pd.DataFrame(rows).set_index("variable")
    frame.attrs.update({"global_norm": total, "clip_scale": scale})
    return frame
