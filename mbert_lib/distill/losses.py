"""Knowledge-transfer losses of MobileBERT (paper section 3.5).

Shapes: B batch, T tokens, H inter-block width, N heads, P masked
predictions, V vocabulary. `mask` is the input mask [B, T] (1 = real token);
every mean over tokens runs over real tokens only (tf-models averages over
padding too, which lets the amount of padding change the loss).

Feature-map transfer (FMT), layer l, per token t with H-dim features:

    L_FMT = 1/(T·H) Σ_t Σ_n (H^T_{t,n} − H^S_{t,n})²                      (paper eq. 1)

In practice (tf-models, the released code) it is trained as three terms
that pull apart the shape, the level and the spread of the features:

    L_FMT ≈ w_mse · mean_t MSE(LN(H^T_t), LN(H^S_t))       LN: parameter-free LayerNorm
          + w_mean · mean_t (μ^S_t − μ^T_t)²               μ: mean over channels
          + w_var  · mean_t |σ²^S_t − σ²^T_t|               σ²: variance over channels

with tf-models' weights 100 / 5000 / 5. The paper's plain MSE decomposes
exactly as (μ^T−μ^S)² + (σ^T−σ^S)² + σ^T σ^S · MSE(LN(H^T), LN(H^S)) per
token (ε = 0), which `feature_map_transfer` reports as `fmt_paper_mse` and
adds to the loss with weight w_paper (0 by default, as tf-models).

Attention transfer (AT), layer l, per head a and query token t:

    L_AT = 1/(T·N) Σ_t Σ_a KL(A^T_{t,a} ‖ A^S_{t,a})                       (paper eq. 2)

on attention *probabilities*: mbert_lib's encoders return post-softmax
probabilities, so no softmax is applied here (tf-models applies one to
probabilities a second time).

Pre-training distillation (PD):

    L_PD = α · L_MLM + (1 − α) · L_KD + L_NSP                              (paper eq. 3)

L_KD is the cross-entropy of the student's MLM distribution against the
teacher's, softmax(z^T / τ), scaled by τ² (τ = 1: the paper). With τ = 1 this
equals tf-models' single cross-entropy against the mixed labels
α · one_hot + (1 − α) · softmax(z^T).

Distributed training: every mean above divides a sum over the batch by a
count (real tokens, real predictions, examples). Under a tf.distribute
strategy each replica sees part of the batch; pass the *global* counts
(`token_count`, `prediction_count`, `example_count`, summed over replicas)
and each replica returns its exact share of the global-batch loss: the
shares sum to the one-device loss. Left as None, the local count is used.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import tensorflow as tf

from mbert_lib.experiment.distill import LayerWiseSection

_SCHEMA = LayerWiseSection()  # the one home of the weights' defaults


@dataclasses.dataclass(frozen=True)
class FmtWeights:
    """Weights of the three practical FMT terms and of the paper's plain MSE of eq. 1.

    The defaults are the experiment schema's (`LayerWiseSection`): tf-models' 100, 5000
    and 5, and 0 for the paper's MSE, which tf-models' loss does not have.
    """

    mse: float = _SCHEMA.fmt_mse_weight
    mean: float = _SCHEMA.fmt_mean_weight
    var: float = _SCHEMA.fmt_var_weight
    paper: float = _SCHEMA.fmt_paper_mse_weight

    @classmethod
    def of(cls, layer_wise: LayerWiseSection) -> FmtWeights:
        """The weights an experiment's `distillation.layer_wise` section sets."""
        return cls(
            layer_wise.fmt_mse_weight,
            layer_wise.fmt_mean_weight,
            layer_wise.fmt_var_weight,
            layer_wise.fmt_paper_mse_weight,
        )


def _token_weights(mask, like):
    """[B, T] float weights of real tokens; all ones when mask is None."""
    if mask is None:
        return tf.ones(tf.shape(like)[:2], tf.float32)
    return tf.cast(mask, tf.float32)


def _masked_mean(values, weights, count=None):
    """Σ w·v / Σ w over [B, T] (or [B, N, T] with weights broadcast); Σ w·v / count if given."""
    weights = tf.broadcast_to(weights, tf.shape(values))
    total = tf.reduce_sum(values * weights)
    if count is not None:
        return total / tf.maximum(tf.cast(count, tf.float32), 1.0)
    return tf.math.divide_no_nan(total, tf.reduce_sum(weights))


def _standardize(x, epsilon):
    """Parameter-free LayerNorm over channels. x: [B, T, H] -> [B, T, H]."""
    mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
    return (x - mean) * tf.math.rsqrt(var + epsilon)


def feature_map_transfer(
    teacher,
    student,
    mask=None,
    weights: FmtWeights = FmtWeights(),
    epsilon: float = 1e-6,
    token_count=None,
) -> dict[str, tf.Tensor]:
    """FMT between one teacher and one student layer output, both [B, T, H].

    Returns {"fmt": weighted total, "fmt_mse", "fmt_mean", "fmt_var" (unweighted
    terms), "fmt_paper_mse" (the paper's plain MSE, for monitoring)}. Means run
    over real tokens, divided by `token_count` when given (the global count).
    """
    teacher = tf.cast(tf.stop_gradient(teacher), tf.float32)
    student = tf.cast(student, tf.float32)
    if teacher.shape[-1] != student.shape[-1]:
        raise ValueError(
            f"feature widths differ: teacher {teacher.shape[-1]}, student "
            f"{student.shape[-1]}; FMT needs equal inter-block sizes H"
        )
    w = _token_weights(mask, student)
    mu_t, var_t = tf.nn.moments(teacher, axes=[-1])  # [B, T]
    mu_s, var_s = tf.nn.moments(student, axes=[-1])  # [B, T]
    mse_norm = tf.reduce_mean(
        tf.square(_standardize(teacher, epsilon) - _standardize(student, epsilon)), -1
    )
    n = token_count
    terms = {
        "fmt_mse": _masked_mean(mse_norm, w, n),  # shape term
        "fmt_mean": _masked_mean(tf.square(mu_s - mu_t), w, n),  # level term
        "fmt_var": _masked_mean(tf.abs(var_s - var_t), w, n),  # spread term
        "fmt_paper_mse": _masked_mean(tf.reduce_mean(tf.square(teacher - student), -1), w, n),
    }
    terms["fmt"] = (
        weights.mse * terms["fmt_mse"]
        + weights.mean * terms["fmt_mean"]
        + weights.var * terms["fmt_var"]
        + weights.paper * terms["fmt_paper_mse"]
    )
    return terms


def attention_transfer(teacher_probs, student_probs, mask=None, token_count=None) -> tf.Tensor:
    """Mean KL(A^T ‖ A^S) over heads and real query tokens; probs [B, N, T, T].

    With `token_count` (global real tokens), the sum is divided by N · token_count.
    """
    a_t = tf.cast(tf.stop_gradient(teacher_probs), tf.float32)
    a_s = tf.cast(student_probs, tf.float32)
    if a_t.shape[1] != a_s.shape[1]:
        raise ValueError(
            f"attention heads differ: teacher {a_t.shape[1]}, student "
            f"{a_s.shape[1]}; AT needs the same number of heads N"
        )
    # xlogy(0, 0) = 0: masked keys have probability 0 in both distributions.
    # KL = Σ_s A^T log A^T − Σ_s A^T log A^S, each sum taken over keys first.
    kl = tf.reduce_sum(tf.math.xlogy(a_t, a_t), -1) - tf.reduce_sum(
        tf.math.xlogy(a_t, a_s), -1
    )  # [B, N, T]
    w = _token_weights(mask, a_t[:, 0])[:, tf.newaxis, :]  # [B, 1, T]
    count = None if token_count is None else tf.cast(token_count, tf.float32) * a_t.shape[1]
    return _masked_mean(kl, w, count)


def _cross_entropy(log_probs, target_probs_or_ids) -> tf.Tensor:
    """−log q[y] for ids [B, P], or −Σ_v p_v log q_v for a distribution [B, P, V]; [B, P]."""
    targets = tf.convert_to_tensor(target_probs_or_ids)
    if targets.shape.rank == 2:
        return -tf.gather(log_probs, tf.cast(targets, tf.int32), batch_dims=2)
    return -tf.reduce_sum(tf.cast(targets, tf.float32) * log_probs, -1)


def masked_lm_cross_entropy(
    logits, target_probs_or_ids, weights, prediction_count=None
) -> tf.Tensor:
    """Weighted mean cross-entropy over masked positions.

    logits [B, P, V]; targets: ids [B, P] or a distribution [B, P, V];
    weights [B, P] (0 on unused prediction slots). The weighted sum is divided
    by `prediction_count` when given (the global Σ weights), else by Σ weights.
    """
    log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
    return _masked_mean(
        _cross_entropy(log_probs, target_probs_or_ids),
        tf.cast(weights, tf.float32),
        prediction_count,
    )


def pretraining_distillation(
    student_mlm_logits,
    teacher_mlm_logits,
    masked_lm_ids,
    masked_lm_weights,
    student_nsp_logits=None,
    next_sentence_labels=None,
    alpha: float = 0.5,
    temperature: float = 1.0,
    counts: Mapping | None = None,
) -> dict[str, tf.Tensor]:
    """PD loss: α·MLM + (1−α)·KD (+ NSP when labels are given).

    MLM logits [B, P, V], ids/weights [B, P], NSP logits [B, 2], labels [B].
    `teacher_mlm_logits` may be None when α = 1 (no teacher term). Global
    counts {"mlm_weight": Σ weights, "examples": B}, summed over replicas (an
    objective's denominators), replace the local ones when given.
    """
    prediction_count = None if counts is None else counts["mlm_weight"]
    example_count = None if counts is None else counts["examples"]
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha (distill_ground_truth_ratio) must be in [0, 1], got {alpha}")
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    student_logits = tf.cast(student_mlm_logits, tf.float32)
    log_q = tf.nn.log_softmax(student_logits, -1)  # [B, P, V]
    weights = tf.cast(masked_lm_weights, tf.float32)
    mlm = _masked_mean(_cross_entropy(log_q, masked_lm_ids), weights, prediction_count)
    out = {"mlm": mlm, "loss": alpha * mlm}
    if teacher_mlm_logits is not None:
        teacher_logits = tf.cast(tf.stop_gradient(teacher_mlm_logits), tf.float32)
        if temperature != 1.0:  # at τ = 1 MLM and KD share log q (one softmax less)
            teacher_logits = teacher_logits / temperature
            log_q = tf.nn.log_softmax(student_logits / temperature, -1)
        teacher_probs = tf.nn.softmax(teacher_logits, -1)  # [B, P, V]
        out["kd"] = (
            _masked_mean(_cross_entropy(log_q, teacher_probs), weights, prediction_count)
            * temperature**2
        )
        out["loss"] += (1.0 - alpha) * out["kd"]
    elif alpha < 1.0:
        raise ValueError(f"alpha = {alpha} < 1 needs the teacher's MLM logits")
    if next_sentence_labels is not None:
        nsp = tf.nn.sparse_softmax_cross_entropy_with_logits(
            tf.cast(next_sentence_labels, tf.int32), tf.cast(student_nsp_logits, tf.float32)
        )
        count = tf.cast(tf.shape(nsp)[0] if example_count is None else example_count, tf.float32)
        out["nsp"] = tf.reduce_sum(nsp) / count
        out["loss"] += out["nsp"]
    return out
