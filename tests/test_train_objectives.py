"""MLM + NSP loss and held-out metrics against numpy; the synthetic batches' contract."""

import math

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import mbert_lib
from mbert_lib.train.objectives import BATCH_KEYS, PretrainingObjective, model_inputs
from mbert_lib.train.synthetic import CLS, MASK, PAD, SEP
from tests.train_fixtures import BATCH, PREDICTIONS, SEQ, VOCAB, tiny_batches, tiny_config


def np_cross_entropy(logits, labels):
    logits = logits.astype(np.float64)
    log_z = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) + logits.max(-1)
    return log_z - np.take_along_axis(logits, labels[..., None], -1)[..., 0]


@pytest.fixture(scope="module")
def model_and_batch():
    tf_keras.utils.set_random_seed(0)
    model = mbert_lib.build_pretrainer(tiny_config())
    batch = next(iter(tiny_batches()))
    # Uneven predictions per example: drop the 2nd and 3rd slots of the last rows.
    weights = batch["masked_lm_weights"].numpy()
    weights[BATCH // 2 :, 1:] = 0.0
    batch = {**batch, "masked_lm_weights": tf.constant(weights)}
    return model, batch


def test_loss_is_weighted_mlm_mean_plus_nsp_mean(model_and_batch):
    model, batch = model_and_batch
    out = model(model_inputs(batch), training=False)
    mlm_ce = np_cross_entropy(out["mlm_logits"].numpy(), batch["masked_lm_ids"].numpy())
    w = batch["masked_lm_weights"].numpy()
    want_mlm = (mlm_ce * w).sum() / w.sum()
    want_nsp = np_cross_entropy(
        out["nsp_logits"].numpy(), batch["next_sentence_labels"].numpy()
    ).mean()
    objective = PretrainingObjective(model)
    loss, metrics = objective.loss(batch, objective.denominators(batch), training=False)
    assert float(metrics["mlm_loss"]) == pytest.approx(want_mlm, rel=1e-5)
    assert float(metrics["nsp_loss"]) == pytest.approx(want_nsp, rel=1e-5)
    assert float(loss) == pytest.approx(want_mlm + want_nsp, rel=1e-5)
    # A per-slot mean (counting padded slots) would give a different number.
    assert abs((mlm_ce * w).mean() - want_mlm) > 1e-3


def test_replica_shares_sum_to_the_global_loss(model_and_batch):
    """Split the batch as two replicas would: shares with global denominators add up."""
    model, batch = model_and_batch
    objective = PretrainingObjective(model)
    full, _ = objective.loss(batch, objective.denominators(batch), training=False)
    halves = [
        {k: v[: BATCH // 2] for k, v in batch.items()},
        {k: v[BATCH // 2 :] for k, v in batch.items()},
    ]
    local = [objective.denominators(h) for h in halves]
    total = {k: local[0][k] + local[1][k] for k in local[0]}
    shares = [float(objective.loss(h, total, training=False)[0]) for h in halves]
    assert sum(shares) == pytest.approx(float(full), rel=1e-5)
    # Averaging per-replica means instead is wrong when predictions are uneven.
    means = [float(objective.loss(h, d, training=False)[0]) for h, d in zip(halves, local)]
    assert abs(np.mean(means) - float(full)) > 1e-4


def test_eval_metrics_against_numpy(model_and_batch):
    model, batch = model_and_batch
    objective = PretrainingObjective(model)
    sums = {k: float(v) for k, v in objective.eval_sums(batch).items()}
    metrics = objective.eval_metrics(sums)
    out = model(model_inputs(batch), training=False)
    mlm_logits, ids = out["mlm_logits"].numpy(), batch["masked_lm_ids"].numpy()
    w = batch["masked_lm_weights"].numpy()
    want_acc = ((mlm_logits.argmax(-1) == ids) * w).sum() / w.sum()
    want_loss = (np_cross_entropy(mlm_logits, ids) * w).sum() / w.sum()
    nsp = out["nsp_logits"].numpy()
    labels = batch["next_sentence_labels"].numpy()
    assert metrics["mlm_accuracy"] == pytest.approx(want_acc)
    assert metrics["mlm_loss"] == pytest.approx(want_loss, rel=1e-5)
    assert metrics["perplexity"] == pytest.approx(math.exp(want_loss), rel=1e-5)
    assert metrics["nsp_accuracy"] == pytest.approx((nsp.argmax(-1) == labels).mean())
    assert metrics["predictions"] == w.sum() and metrics["examples"] == BATCH
    with pytest.raises(ValueError, match="no masked predictions"):
        objective.eval_metrics({**sums, "mlm_weight": 0.0})


def test_synthetic_batches_follow_the_contract_and_the_seed():
    spec = tiny_batches().element_spec
    assert set(spec) == set(BATCH_KEYS)
    for key, s in spec.items():
        want = [BATCH] + (
            []
            if key == "next_sentence_labels"
            else [SEQ]
            if key.startswith("input")
            else [PREDICTIONS]
        )
        assert s.shape.as_list() == want, key
        assert s.dtype == (tf.float32 if key == "masked_lm_weights" else tf.int32), key
    first = [{k: v.numpy() for k, v in b.items()} for b in tiny_batches(32, seed=3)]
    again = [{k: v.numpy() for k, v in b.items()} for b in tiny_batches(32, seed=3)]
    other = [{k: v.numpy() for k, v in b.items()} for b in tiny_batches(32, seed=4)]
    for a, b in zip(first, again):
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    assert not np.array_equal(first[0]["input_word_ids"], other[0]["input_word_ids"])


def test_synthetic_examples_are_what_the_docstring_says():
    b = {k: v.numpy() for k, v in next(iter(tiny_batches(64, batch_size=64))).items()}
    ids, mask = b["input_word_ids"], b["input_mask"]
    labels = b["next_sentence_labels"]
    assert 0.3 < labels.mean() < 0.7
    for row in range(64):
        length = mask[row].sum()
        assert ids[row, 0] == CLS and ids[row, length - 1] == SEP
        assert (ids[row, length:] == PAD).all()
        n = int(b["masked_lm_weights"][row].sum())
        positions = b["masked_lm_positions"][row, :n]
        assert (ids[row, positions] == MASK).all()
        restored = ids[row].copy()
        restored[positions] = b["masked_lm_ids"][row, :n]
        words = restored[(restored >= 4) & (mask[row] == 1)]
        seps = np.flatnonzero(restored[:length] == SEP)
        a, bb = restored[1 : seps[0]], restored[seps[0] + 1 : seps[1]]
        assert (np.diff(a) % (VOCAB - 4) == 1).all()  # counting within A
        assert (np.diff(bb) % (VOCAB - 4) == 1).all()  # and within B
        continues = (bb[0] - a[-1]) % (VOCAB - 4) == 1
        assert continues or labels[row] == 1  # label 0 => B continues A
        assert len(words) == length - 3
