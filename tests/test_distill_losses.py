"""Distillation losses against direct numpy computations of the paper's equations."""

import numpy as np
import pytest
import tensorflow as tf

from mbert_lib.distill.losses import (
    FmtWeights,
    attention_transfer,
    feature_map_transfer,
    masked_lm_cross_entropy,
    pretraining_distillation,
)

RNG = np.random.default_rng(7)


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _masked_probs(b, n, t, mask):
    scores = RNG.normal(size=(b, n, t, t)) + np.where(mask[:, None, None, :] > 0, 0, -1e9)
    return _softmax(scores)


@pytest.fixture
def features():
    b, t, h = 3, 7, 16
    teacher = RNG.normal(1.0, 2.0, (b, t, h))
    student = RNG.normal(-0.5, 0.7, (b, t, h))
    mask = np.array([[1] * 7, [1] * 4 + [0] * 3, [1] * 2 + [0] * 5])
    return teacher, student, mask


def test_fmt_terms_match_numpy_over_real_tokens(features):
    teacher, student, mask = features
    out = feature_map_transfer(
        tf.constant(teacher, tf.float32),
        tf.constant(student, tf.float32),
        mask,
        FmtWeights(mse=2.0, mean=3.0, var=4.0),
        epsilon=0.0,
    )
    real = mask.astype(bool)
    t, s = teacher[real], student[real]  # [real tokens, H]

    def ln(x):
        return (x - x.mean(-1, keepdims=True)) / x.std(-1, keepdims=True)

    mse = np.mean((ln(t) - ln(s)) ** 2)
    mean = np.mean((t.mean(-1) - s.mean(-1)) ** 2)
    var = np.mean(np.abs(t.var(-1) - s.var(-1)))
    np.testing.assert_allclose(out["fmt_mse"], mse, rtol=1e-5)
    np.testing.assert_allclose(out["fmt_mean"], mean, rtol=1e-5)
    np.testing.assert_allclose(out["fmt_var"], var, rtol=1e-5)
    np.testing.assert_allclose(out["fmt"], 2 * mse + 3 * mean + 4 * var, rtol=1e-5)
    np.testing.assert_allclose(out["fmt_paper_mse"], np.mean((t - s) ** 2), rtol=1e-5)
    with_paper = feature_map_transfer(
        tf.constant(teacher, tf.float32),
        tf.constant(student, tf.float32),
        mask,
        FmtWeights(mse=2.0, mean=3.0, var=4.0, paper=5.0),
        epsilon=0.0,
    )
    np.testing.assert_allclose(
        with_paper["fmt"], 2 * mse + 3 * mean + 4 * var + 5 * np.mean((t - s) ** 2), rtol=1e-5
    )


def test_fmt_ignores_padding_content(features):
    teacher, student, mask = features
    noisy = student.copy()
    noisy[mask == 0] += 100.0
    t = tf.constant(teacher, tf.float32)
    a = feature_map_transfer(t, tf.constant(student, tf.float32), mask)
    b = feature_map_transfer(t, tf.constant(noisy, tf.float32), mask)
    np.testing.assert_allclose(a["fmt"], b["fmt"], rtol=1e-6)


def test_paper_mse_decomposes_into_the_three_terms(features):
    teacher, student, _ = features
    out = feature_map_transfer(
        tf.constant(teacher, tf.float32), tf.constant(student, tf.float32), epsilon=0.0
    )
    # Per token: MSE = (μT−μS)² + (σT−σS)² + σT·σS·MSE(LN T, LN S).
    sd_t, sd_s = teacher.std(-1), student.std(-1)
    mse_norm = np.mean(
        (
            (teacher - teacher.mean(-1, keepdims=True)) / sd_t[..., None]
            - (student - student.mean(-1, keepdims=True)) / sd_s[..., None]
        )
        ** 2,
        -1,
    )
    per_token = (
        (teacher.mean(-1) - student.mean(-1)) ** 2 + (sd_t - sd_s) ** 2 + sd_t * sd_s * mse_norm
    )
    np.testing.assert_allclose(out["fmt_paper_mse"], per_token.mean(), rtol=1e-5)


def test_fmt_is_zero_for_identical_features_and_gradient_only_reaches_student(features):
    teacher, _, mask = features
    t = tf.Variable(teacher, dtype=tf.float32)
    s = tf.Variable(teacher, dtype=tf.float32)
    with tf.GradientTape() as tape:
        out = feature_map_transfer(t, s, mask)
    np.testing.assert_allclose(out["fmt"], 0.0, atol=1e-5)
    grads = tape.gradient(out["fmt"], [t, s])
    assert grads[0] is None


def test_fmt_rejects_different_widths():
    with pytest.raises(ValueError, match="inter-block"):
        feature_map_transfer(tf.zeros([1, 2, 8]), tf.zeros([1, 2, 4]))


def test_attention_transfer_is_kl_over_real_queries():
    b, n, t = 2, 3, 6
    mask = np.array([[1] * 6, [1] * 3 + [0] * 3])
    a_t, a_s = _masked_probs(b, n, t, mask), _masked_probs(b, n, t, mask)
    got = attention_transfer(tf.constant(a_t, tf.float32), tf.constant(a_s, tf.float32), mask)
    kl = []
    for i in range(b):
        for h in range(n):
            for q in range(t):
                if mask[i, q]:
                    p, r = a_t[i, h, q], a_s[i, h, q]
                    keep = p > 0
                    kl.append(np.sum(p[keep] * np.log(p[keep] / r[keep])))
    np.testing.assert_allclose(got, np.mean(kl), rtol=1e-4)
    assert np.isfinite(got)


def test_attention_transfer_applies_no_softmax():
    # Identical probabilities: KL is 0. A second softmax (tf-models) would not give 0
    # against the raw probabilities, and the double-softmaxed maps are nearly uniform.
    mask = np.ones((1, 5))
    a = _masked_probs(1, 2, 5, mask)
    np.testing.assert_allclose(
        attention_transfer(tf.constant(a), tf.constant(a), mask), 0.0, atol=1e-6
    )
    double = _softmax(a)
    assert attention_transfer(tf.constant(a), tf.constant(double), mask) > 1e-2


def test_attention_transfer_gradient_is_finite_with_masked_keys():
    mask = np.array([[1, 1, 1, 0, 0]])
    a_t = tf.constant(_masked_probs(1, 2, 5, mask), tf.float32)
    logits = tf.Variable(RNG.normal(size=(1, 2, 5, 5)), dtype=tf.float32)
    with tf.GradientTape() as tape:
        a_s = tf.nn.softmax(logits + tf.where(mask[:, None, None, :] > 0, 0.0, -1e9))
        loss = attention_transfer(a_t, a_s, mask)
    assert np.all(np.isfinite(tape.gradient(loss, logits).numpy()))


def test_attention_transfer_gradient_is_the_closed_form_through_softmax():
    # With A^S = softmax(z), ∂KL(A^T ‖ A^S)/∂z = A^S − A^T per row (Σ A^T = 1), so
    # ∂L_AT/∂z_bnt = w_bt (A^S − A^T) / (N · count): a check of the hand-written gradient.
    b, n, t = 2, 3, 6
    mask = np.array([[1] * 6, [1] * 4 + [0] * 2])
    a_t = _masked_probs(b, n, t, mask)
    z = RNG.normal(size=(b, n, t, t)) + np.where(mask[:, None, None, :] > 0, 0, -1e9)
    logits = tf.Variable(z, dtype=tf.float32)
    with tf.GradientTape() as tape:
        loss = attention_transfer(
            tf.constant(a_t, tf.float32), tf.nn.softmax(logits), mask, token_count=7.0
        )
    expected = (mask[:, None, :, None] * (_softmax(z) - a_t)) / (n * 7.0)
    np.testing.assert_allclose(tape.gradient(loss, logits), expected, atol=1e-7)


def test_pd_matches_numpy_and_tf_models_mixed_labels():
    b, p, v = 2, 4, 11
    s_logits, t_logits = RNG.normal(size=(b, p, v)), RNG.normal(size=(b, p, v))
    ids = RNG.integers(0, v, (b, p))
    weights = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], np.float32)
    nsp_logits, nsp_labels = RNG.normal(size=(b, 2)), np.array([0, 1])
    alpha = 0.3
    out = pretraining_distillation(
        s_logits, t_logits, ids, weights, nsp_logits, nsp_labels, alpha=alpha
    )
    log_p = np.log(_softmax(s_logits))
    onehot = np.eye(v)[ids]
    ce = lambda target: np.sum(-(target * log_p).sum(-1) * weights) / weights.sum()  # noqa: E731
    mlm, kd = ce(onehot), ce(_softmax(t_logits))
    nsp = np.mean(-np.log(_softmax(nsp_logits))[np.arange(b), nsp_labels])
    np.testing.assert_allclose(out["mlm"], mlm, rtol=1e-5)
    np.testing.assert_allclose(out["kd"], kd, rtol=1e-5)
    np.testing.assert_allclose(out["nsp"], nsp, rtol=1e-5)
    np.testing.assert_allclose(out["loss"], alpha * mlm + (1 - alpha) * kd + nsp, rtol=1e-5)
    # tf-models: one cross-entropy against alpha·one_hot + (1 − alpha)·softmax(teacher).
    mixed = ce(alpha * onehot + (1 - alpha) * _softmax(t_logits))
    np.testing.assert_allclose(out["loss"] - out["nsp"], mixed, rtol=1e-5)


def test_pd_temperature_scales_kd():
    s, t = RNG.normal(size=(1, 2, 5)), RNG.normal(size=(1, 2, 5))
    ids, w = np.array([[1, 2]]), np.ones((1, 2), np.float32)
    tau = 2.0
    out = pretraining_distillation(s, t, ids, w, alpha=0.0, temperature=tau)
    expected = np.mean(-(_softmax(t / tau) * np.log(_softmax(s / tau))).sum(-1)) * tau**2
    np.testing.assert_allclose(out["loss"], expected, rtol=1e-5)


@pytest.mark.parametrize(
    "kwargs, field", [({"alpha": 1.5}, "alpha"), ({"temperature": 0.0}, "temperature")]
)
def test_pd_rejects_bad_settings(kwargs, field):
    z = np.zeros((1, 1, 3))
    with pytest.raises(ValueError, match=field):
        pretraining_distillation(z, z, np.zeros((1, 1), int), np.ones((1, 1)), **kwargs)


def test_masked_lm_cross_entropy_ids_equal_one_hot():
    logits = RNG.normal(size=(2, 3, 6))
    ids = RNG.integers(0, 6, (2, 3))
    w = np.array([[1, 0, 1], [1, 1, 1]], np.float32)
    a = masked_lm_cross_entropy(logits, tf.constant(ids), w)
    b = masked_lm_cross_entropy(logits, tf.constant(np.eye(6)[ids]), w)
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_shares_with_global_counts_sum_to_the_whole_batch_loss(features):
    # Two "replicas" each see part of the batch; dividing by the global counts
    # makes their losses sum to the one-device loss (which a mean of means would not).
    teacher, student, mask = features
    t, s = tf.constant(teacher, tf.float32), tf.constant(student, tf.float32)
    a_t = tf.constant(_masked_probs(3, 2, 7, mask), tf.float32)
    a_s = tf.constant(_masked_probs(3, 2, 7, mask), tf.float32)
    tokens = mask.sum()
    whole_fmt = feature_map_transfer(t, s, mask)["fmt"]
    whole_at = attention_transfer(a_t, a_s, mask)
    parts = [slice(0, 1), slice(1, 3)]
    fmt = sum(feature_map_transfer(t[p], s[p], mask[p], token_count=tokens)["fmt"] for p in parts)
    at = sum(attention_transfer(a_t[p], a_s[p], mask[p], token_count=tokens) for p in parts)
    np.testing.assert_allclose(fmt, whole_fmt, rtol=1e-5)
    np.testing.assert_allclose(at, whole_at, rtol=1e-5)

    s_logits, t_logits = RNG.normal(size=(3, 4, 9)), RNG.normal(size=(3, 4, 9))
    ids, nsp, labels = RNG.integers(0, 9, (3, 4)), RNG.normal(size=(3, 2)), np.array([0, 1, 1])
    w = np.array([[1, 1, 1, 1], [1, 0, 0, 0], [1, 1, 0, 0]], np.float32)
    whole = pretraining_distillation(s_logits, t_logits, ids, w, nsp, labels)["loss"]
    shares = sum(
        pretraining_distillation(
            s_logits[p],
            t_logits[p],
            ids[p],
            w[p],
            nsp[p],
            labels[p],
            counts={"mlm_weight": w.sum(), "examples": 3},
        )["loss"]
        for p in parts
    )
    np.testing.assert_allclose(shares, whole, rtol=1e-5)


def test_pd_without_teacher_is_mlm_plus_nsp_and_needs_alpha_one():
    s = RNG.normal(size=(1, 2, 5))
    ids, w = np.array([[1, 2]]), np.ones((1, 2), np.float32)
    out = pretraining_distillation(s, None, ids, w, alpha=1.0)
    np.testing.assert_allclose(out["loss"], masked_lm_cross_entropy(s, ids, w), rtol=1e-6)
    assert "kd" not in out
    with pytest.raises(ValueError, match="teacher's MLM logits"):
        pretraining_distillation(s, None, ids, w, alpha=0.5)
