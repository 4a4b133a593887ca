"""The distillation train step against a straightforward second implementation.

The reference re-writes, inside this file, what the step computes: the
attention the textbook way (one einsum per product, 1/sqrt(d) applied to the
scores), the FMT / AT / PD losses from their formulas, and LAMB with global-norm
clipping in numpy (float64). It reuses only the models' unchanged sublayers
(embedding, dense layers, norms, FFNs, heads). Two steps of `make_train_step`
must reproduce the reference's loss, gradient norm and updated variables to
float32 round-off, for a layer-wise stage (lower layers at a reduced rate)
and for the PD stage.
"""

import math

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from mbert_lib.config import get_preset
from mbert_lib.distill.objective import DistillationObjective
from mbert_lib.distill.plan import plan_stages, stage_variables
from mbert_lib.distill.step import stage_step
from mbert_lib.experiment import LearningRateSection, OptimizerSection
from mbert_lib.experiment.distill import (
    DistillationSection,
    LayerWiseSection,
    PretrainDistillSection,
)
from mbert_lib.models import build_pretrainer
from tests.train_fixtures import VOCAB, tiny_batches

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

LAYERS, LR = 2, 1e-2
NO_DROPOUT = dict(
    vocab_size=VOCAB,
    num_hidden_layers=LAYERS,
    max_position_embeddings=32,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)
DISTILLATION = DistillationSection(
    strategy="progressive",
    layer_wise=LayerWiseSection(learning_rate=LearningRateSection(peak=LR, end=LR)),
    pretrain=PretrainDistillSection(learning_rate=LearningRateSection(peak=LR, end=LR)),
)


# ----------------------------------------------------------- reference forward
def _attention(att, qk, v, mask):
    """softmax(Q Kᵀ / sqrt(d) + M) V W_O, einsum per product. -> ([B, T, O], [B, N, T, S])."""
    q, k, value = att.query(qk), att.key(qk), att.value(v)  # [B, T, N, d]
    scores = tf.einsum("BTNd,BSNd->BNTS", q, k) / math.sqrt(att.head_size)
    scores += (1.0 - tf.cast(mask, tf.float32))[:, None, None, :] * -1e9
    probs = tf.nn.softmax(scores, axis=-1)
    return att.attention_output(tf.einsum("BNTS,BSNd->BTNd", probs, value)), probs


def _block(block, x, mask):
    a = block.bottleneck_input_norm(block.bottleneck_input(x))  # [B, T, h]
    qk, v = (
        (block.bottleneck_attention_norm(block.bottleneck_attention(x)), x)
        if block.key_query_shared_bottleneck
        else (x, x)
    )
    attended, probs = _attention(block.attention, qk, v, mask)
    u = block.attention_norm(attended + a)
    for ffn in block.ffns:
        u = ffn.norm(ffn.output_dense(ffn.intermediate(u)) + u)
    return block.bottleneck_output_norm(block.bottleneck_output(u) + x), probs  # [B, T, H]


def _forward(model, batch, num_layers):
    """(hidden states, attention probabilities, MLM logits, NSP logits) of a Pretrainer."""
    encoder = model.encoder
    x = encoder.embedding(batch["input_word_ids"], batch["input_type_ids"])
    hidden, probs = [], []
    for block in encoder.blocks[:num_layers]:
        x, p = _block(block, x, batch["input_mask"])
        hidden.append(x)
        probs.append(p)
    mlm = model.masked_lm(x, encoder.embedding_table, batch["masked_lm_positions"])
    pooled = x[:, 0] if encoder.pooler is None else encoder.pooler(x[:, 0])
    return hidden, probs, mlm, model.next_sentence(pooled)


# ------------------------------------------------------------ reference losses
def _layer_norm(x):
    mean, var = tf.nn.moments(x, [-1], keepdims=True)
    return (x - mean) / tf.sqrt(var + 1e-6)


def _reference_loss(teacher, student, stage, batch):
    w = tf.cast(batch["input_mask"], tf.float32)  # [B, T]
    tokens = tf.reduce_sum(w)
    depth = LAYERS if stage.use_pd else max(stage.transfer_layers) + 1
    t_hidden, t_probs, t_mlm, _ = _forward(teacher, batch, depth)
    s_hidden, s_probs, s_mlm, s_nsp = _forward(student, batch, depth)
    loss = 0.0
    for layer in stage.transfer_layers:
        t, s = t_hidden[layer], s_hidden[layer]  # [B, T, H]
        mse = tf.reduce_mean(tf.square(_layer_norm(t) - _layer_norm(s)), -1)
        mean = tf.square(tf.reduce_mean(t, -1) - tf.reduce_mean(s, -1))
        var = tf.abs(tf.math.reduce_variance(t, -1) - tf.math.reduce_variance(s, -1))
        loss += tf.reduce_sum((100.0 * mse + 5000.0 * mean + 5.0 * var) * w) / tokens
        a_t, a_s = t_probs[layer], s_probs[layer]  # [B, N, T, T]
        kl = tf.reduce_sum(tf.math.xlogy(a_t, a_t) - tf.math.xlogy(a_t, a_s), -1)
        loss += tf.reduce_sum(kl * w[:, None, :]) / (tokens * a_t.shape[1])
    if stage.use_pd:
        weights = batch["masked_lm_weights"]  # [B, P]
        log_p = tf.nn.log_softmax(s_mlm)  # [B, P, V]
        ce = -tf.reduce_sum(tf.one_hot(batch["masked_lm_ids"], VOCAB) * log_p, -1)
        kd = -tf.reduce_sum(tf.nn.softmax(t_mlm) * log_p, -1)
        loss += tf.reduce_sum((0.5 * ce + 0.5 * kd) * weights) / tf.reduce_sum(weights)
        nsp = -tf.reduce_sum(
            tf.one_hot(batch["next_sentence_labels"], 2) * tf.nn.log_softmax(s_nsp), -1
        )
        loss += tf.reduce_mean(nsp)
    return loss


# -------------------------------------------------------------- reference LAMB
# LAMB's defaults (mbert_lib.optim.Lamb) and the experiment's global_clipnorm.
WD, B1, B2, EPS, CLIP = 0.01, 0.9, 0.999, 1e-6, 1.0


def _numpy_lamb_step(xs, grads, ms, vs, lrs, decay, adapt, t):
    """One clipped LAMB step (t = 1, 2, ...) of every variable; updates xs, ms, vs in place."""
    wd, b1, b2, eps, clip = WD, B1, B2, EPS, CLIP
    norm = math.sqrt(sum(float(np.sum(g * g)) for g in grads))
    for i, g in enumerate(grads):
        g = g * clip / max(norm, clip)
        ms[i] = b1 * ms[i] + (1 - b1) * g
        vs[i] = b2 * vs[i] + (1 - b2) * g * g
        u = (ms[i] / (1 - b1**t)) / (np.sqrt(vs[i] / (1 - b2**t)) + eps)
        if decay[i]:
            u = u + wd * xs[i]
        w_norm, u_norm = np.linalg.norm(xs[i]), np.linalg.norm(u)
        ratio = w_norm / u_norm if adapt[i] and w_norm > 0 and u_norm > 0 else 1.0
        xs[i] = xs[i] - lrs[i] * ratio * u
    return norm


@pytest.mark.parametrize("stage_index", [LAYERS - 1, LAYERS], ids=["layer_wise_last", "pd"])
def test_two_steps_match_the_reference(stage_index):
    tf_keras.utils.set_random_seed(3)
    teacher = build_pretrainer(get_preset("tiny_teacher").replace(**NO_DROPOUT))
    teacher.trainable = False
    student = build_pretrainer(get_preset("tiny_student").replace(**NO_DROPOUT))
    stage = plan_stages(DISTILLATION, LAYERS)[stage_index]
    groups = stage_variables(student, stage)
    variables = [v for vs in groups.values() for v in vs]
    objective = DistillationObjective(
        teacher, student, stage, range(LAYERS), DISTILLATION.layer_wise, DISTILLATION.pretrain
    )
    built = stage_step(objective, groups, OptimizerSection())  # the trainer's own step
    step, optimizer = built.train_step, built.optimizer
    assert built.variables == variables
    batches = list(tiny_batches(num_examples=16))  # two batches
    lamb = optimizer.optimizers[0]
    lrs = [LR * rate for rate, vs in groups.items() for _ in vs]
    decay = [lamb.uses_weight_decay(v) for v in variables]
    adapt = [lamb.uses_layer_adaptation(v) for v in variables]
    xs = [v.numpy().astype(np.float64) for v in variables]
    ms, vs = [np.zeros_like(x) for x in xs], [np.zeros_like(x) for x in xs]
    iterator = iter(tiny_batches(num_examples=16))  # the same batches, from tf.data
    for t, batch in enumerate(batches, start=1):
        with tf.GradientTape() as tape:
            want_loss = _reference_loss(teacher, student, stage, batch)
        want_grads = [
            tf.convert_to_tensor(g).numpy().astype(np.float64)
            for g in tape.gradient(want_loss, variables)
        ]
        before = [x.copy() for x in xs]
        want_norm = _numpy_lamb_step(xs, want_grads, ms, vs, lrs, decay, adapt, t)
        out = step(iterator)
        np.testing.assert_allclose(float(out["loss"]), float(want_loss), rtol=2e-5)
        np.testing.assert_allclose(float(out["grad_norm"]), want_norm, rtol=1e-4)
        for v, x, x0 in zip(variables, xs, before):
            # The float32 step against the float64 one, to 0.1 % of the variable's largest
            # update (measured: at most 0.02 %). Adam moves every element by about the
            # rate, however small the weight, so a weight near zero cannot be held to a
            # tolerance relative to itself (seen: a LayerNorm beta of 8e-4 off by 1.1e-6
            # after a step of 1e-2, on a 2-core Xeon with AVX-512).
            step_size = np.abs(x - x0).max()
            np.testing.assert_allclose(
                v.numpy(), x, rtol=1e-4, atol=max(1e-6, 1e-3 * step_size), err_msg=v.name
            )
