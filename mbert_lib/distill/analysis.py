"""Looking inside a transfer: per-layer transfer losses, feature statistics, attention maps
and their sharpness, the FMT decomposition, weight norms across training snapshots, and the
stage-by-stage loss curves of a distillation run.

Shapes: B batch, T tokens, H inter-block width, N heads, L layers. `batch` is
a dict with at least input_word_ids / input_mask / input_type_ids [B, T].
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import tensorflow as tf

from mbert_lib.distill.losses import FmtWeights, attention_transfer, feature_map_transfer
from mbert_lib.models import INPUT_NAMES
from mbert_lib.optim.schedules import WarmupPolynomialDecay
from mbert_lib.train.progress import read_scalars


def encode(pretrainer_or_encoder, batch) -> dict:
    """encoder_outputs [L, B, T, H] and attention_scores [L, B, N, T, T] (inference mode), numpy."""
    encoder = getattr(pretrainer_or_encoder, "encoder", pretrainer_or_encoder)
    out = encoder({k: batch[k] for k in INPUT_NAMES if k in batch}, training=False)
    return {
        "encoder_outputs": np.stack([x.numpy() for x in out["encoder_outputs"]]),
        "attention_scores": np.stack([a.numpy() for a in out["attention_scores"]]),
    }


def transfer_losses(
    teacher_out: dict, student_out: dict, mask, layer_map, weights: FmtWeights = FmtWeights()
) -> pd.DataFrame:
    """Per student layer l: FMT terms and AT against teacher layer layer_map[l] (losses module)."""
    rows = []
    for layer, t in enumerate(layer_map):
        fmt = feature_map_transfer(
            tf.constant(teacher_out["encoder_outputs"][t]),
            tf.constant(student_out["encoder_outputs"][layer]),
            mask,
            weights,
        )
        at = attention_transfer(
            tf.constant(teacher_out["attention_scores"][t]),
            tf.constant(student_out["attention_scores"][layer]),
            mask,
        )
        rows.append(
            {
                "layer": layer,
                "teacher_layer": t,
                **{k: float(v) for k, v in fmt.items()},
                "at": float(at),
            }
        )
    return pd.DataFrame(rows).set_index("layer")


def feature_statistics(outputs: dict, mask) -> pd.DataFrame:
    """Per layer: the mean over real tokens of the per-token mean μ_t and std σ_t (over H)."""
    mask = np.asarray(mask, bool)  # [B, T]
    rows = []
    for layer, h in enumerate(outputs["encoder_outputs"]):  # [B, T, H]
        real = h[mask]  # [tokens, H]
        rows.append(
            {"layer": layer, "mean": float(real.mean(-1).mean()), "std": float(real.std(-1).mean())}
        )
    return pd.DataFrame(rows).set_index("layer")


def attention_sharpness(attention_scores, mask) -> pd.Series:
    """Per layer: the mean over batch, heads and real query rows of the largest attention
    probability in the row (1/T for uniform rows, 1 for one-hot rows).

    attention_scores [L, B, N, T, T] (probabilities), mask [B, T].
    """
    mask = np.asarray(mask, bool)  # [B, T]
    rows = np.asarray(attention_scores).max(-1)  # [L, B, N, T]
    weights = np.broadcast_to(mask[None, :, None, :], rows.shape)
    values = (rows * weights).sum((1, 2, 3)) / weights.sum((1, 2, 3))  # [L]
    return pd.Series(values, index=pd.RangeIndex(len(values), name="layer"))


def fmt_decomposition(teacher, student, mask) -> dict:
    """The paper's MSE and its exact split, averaged over real tokens ([B, T, H] inputs):

        MSE(H^T_t, H^S_t) = (μ^T_t − μ^S_t)² + (σ^T_t − σ^S_t)²
                            + σ^T_t σ^S_t · MSE(LN(H^T_t), LN(H^S_t))

    with LN the parameter-free standardisation (ε = 0). Returns the four
    averages, their sum and the largest per-token |MSE − sum|.
    """
    mask = np.asarray(mask, bool)
    t = np.asarray(teacher, np.float64)[mask]  # [tokens, H]
    s = np.asarray(student, np.float64)[mask]
    mu_t, mu_s, sd_t, sd_s = t.mean(-1), s.mean(-1), t.std(-1), s.std(-1)
    ln_t = (t - mu_t[:, None]) / sd_t[:, None]
    ln_s = (s - mu_s[:, None]) / sd_s[:, None]
    mse = ((t - s) ** 2).mean(-1)
    parts = {
        "mean_term": (mu_t - mu_s) ** 2,
        "std_term": (sd_t - sd_s) ** 2,
        "shape_term": sd_t * sd_s * ((ln_t - ln_s) ** 2).mean(-1),
    }
    total = sum(parts.values())
    return {
        "paper_mse": float(mse.mean()),
        **{k: float(v.mean()) for k, v in parts.items()},
        "sum_of_terms": float(total.mean()),
        "max_abs_error": float(np.abs(mse - total).max()),
    }


def stage_curves(model_dir: str | os.PathLike, split: str = "train") -> pd.DataFrame:
    """Every scalar a distillation run logged, stage by stage, in long format.

    Columns: stage ("00_layer_0", ...), step (within the stage), global_step
    (counting all stages before), metric, value.
    """
    root = os.path.join(os.fspath(model_dir), "tensorboard")
    if not os.path.isdir(root):
        raise FileNotFoundError(f"{root}: no TensorBoard logs (is {model_dir} a distillation run?)")
    frames, offset = [], 0
    for stage in sorted(d for d in os.listdir(root) if d[:2].isdigit()):
        directory = os.path.join(root, stage, split)
        if not os.path.isdir(directory):
            continue
        last = 0
        for metric, (steps, values) in read_scalars(directory).items():
            frames.append(
                pd.DataFrame(
                    {
                        "stage": stage,
                        "step": steps,
                        "global_step": [offset + s for s in steps],
                        "metric": metric,
                        "value": values,
                    }
                )
            )
            last = max(last, max(steps))
        offset += last
    if not frames:
        raise FileNotFoundError(f"{root}: no {split} scalars in any stage")
    return pd.concat(frames, ignore_index=True)


def attention_kl_per_head(teacher_probs, student_probs, mask) -> np.ndarray:
    """KL(A^T ‖ A^S) per head [N], averaged over the real query tokens of one example.

    teacher_probs / student_probs: [N, T, T]; mask [T].
    """
    return np.array(
        [
            float(
                attention_transfer(
                    tf.constant(teacher_probs[None, h : h + 1]),
                    tf.constant(student_probs[None, h : h + 1]),
                    np.asarray(mask)[None],
                )
            )
            for h in range(teacher_probs.shape[0])
        ]
    )


DISTANCES = ("js", "tv", "kl")
KL_FLOOR = 1e-9


def attention_distance(teacher_probs, student_probs, mask, kind: str = "js") -> float:
    """Mean over heads and real query rows of a distance between two attention maps.

    teacher_probs / student_probs: [B, N, T, T] (rows: distributions over keys); mask [B, T].

        js   Jensen-Shannon divergence ½ KL(p ‖ m) + ½ KL(q ‖ m), m = (p + q) / 2, in nats:
             finite and at most ln 2 ≈ 0.693 whatever the zeros
        tv   total variation ½ Σ_j |p_j − q_j|, in [0, 1]: the probability mass the two put
             on different keys
        kl   KL(p ‖ q), what attention transfer minimises (eq. 2); infinite where the student
             gives a key the teacher attends to zero probability, so q is floored at 1e-9
             (a float32 softmax underflows to exactly 0 once a row's scores span ~100)
    """
    p = np.asarray(teacher_probs, np.float64)
    q = np.asarray(student_probs, np.float64)
    real = np.broadcast_to(np.asarray(mask, bool)[:, None, :], p.shape[:3])  # [B, N, T]

    def kl(a, b):  # Σ_j a_j log(a_j / b_j), 0 log 0 = 0
        return (a * (np.log(np.where(a > 0, a, 1.0)) - np.log(np.where(a > 0, b, 1.0)))).sum(-1)

    if kind == "js":
        m = (p + q) / 2
        per_row = 0.5 * kl(p, m) + 0.5 * kl(q, m)
    elif kind == "tv":
        per_row = 0.5 * np.abs(p - q).sum(-1)
    elif kind == "kl":
        per_row = kl(p, np.maximum(q, KL_FLOOR))
    else:
        raise ValueError(f"attention distance must be one of {DISTANCES}, got {kind!r}")
    return float(per_row[real].mean())


def block_variable(model, layer: int, part: str) -> np.ndarray:
    """The value of block `layer`'s variable `part` (e.g. "attention/query/kernel") in a
    Pretrainer or encoder; KeyError naming the path when there is not exactly one."""
    encoder = getattr(model, "encoder", model)
    suffix = f"/layer_{layer}/{part}"
    found = [v for v in encoder.weights if v.name.split(":")[0].endswith(suffix)]
    if len(found) != 1:
        raise KeyError(f"expected one variable ending in {suffix!r}, found {len(found)}")
    return found[0].numpy()


def weight_norms(models, parts, layers) -> pd.DataFrame:
    """‖W‖ (Frobenius) of block variables across training snapshots.

    models: {label: Pretrainer or encoder}; parts: variable paths inside a block,
    e.g. "attention/query/kernel"; layers: block indices. Returns a frame with
    index (layer, part) and one column per label.
    """
    rows = {}
    for label, model in models.items():
        for layer in layers:
            for part in parts:
                rows.setdefault((layer, part), {})[label] = float(
                    np.linalg.norm(block_variable(model, layer, part))
                )
    frame = pd.DataFrame(rows).T
    frame.index.names = ["layer", "part"]
    return frame


def learning_rate_budget(stages, num_layers: int) -> pd.DataFrame:
    """Σ_t η_t each student block receives, split by what the loss contains.

    For block i and a stage with schedule η_t (mbert_lib.optim.WarmupPolynomialDecay,
    decaying over the stage's steps unless set) and rate multiplier r_i (0 when the
    stage does not train block i), the stage adds r_i · Σ_t η_t to column
    "layer-wise" when its loss has FMT / AT terms, and to "PD only" otherwise. With
    LAMB, e^(Σ η) bounds how much a stage can grow a weight matrix (notebook 05).
    Returns a frame with index block (0..num_layers-1).
    """

    budget = np.zeros((num_layers, 2))
    for stage in stages:
        lr = stage.learning_rate
        schedule = WarmupPolynomialDecay(
            lr.peak, lr.decay_steps or stage.train_steps, lr.warmup_steps, lr.end, lr.power
        )
        total = float(tf.reduce_sum(schedule(tf.range(stage.train_steps))))
        column = 0 if stage.layer_wise else 1
        for block in range(num_layers):
            budget[block, column] += stage.rates.get(f"block_{block}", 0.0) * total
    return pd.DataFrame(
        budget, columns=["layer-wise", "PD only"], index=pd.RangeIndex(num_layers, name="block")
    )
