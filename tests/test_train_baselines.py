"""Unigram MLM and majority-class NSP baselines against hand counts and a second code path."""

import math

import numpy as np
import pytest
import tensorflow as tf

from mbert_lib.train.baselines import nsp_majority_baseline, target_counts, unigram_mlm_baseline
from mbert_lib.train.objectives import masked_lm_terms


def examples(ids, weights):
    return {
        "masked_lm_ids": np.array(ids, np.int32),
        "masked_lm_weights": np.array(weights, np.float32),
    }


TRAIN = examples([[5, 5, 7, 0], [5, 9, 7, 3]], [[1, 1, 1, 0], [1, 1, 1, 1]])
HELD = examples([[5, 7, 7], [2, 0, 0]], [[1, 1, 1], [1, 0, 0]])  # targets 5, 7, 7, 2


def test_target_counts_skip_padding_slots():
    counts = target_counts(TRAIN, vocab_size=10)
    want = np.zeros(10, np.int64)
    for token, n in {5: 3, 7: 2, 9: 1, 3: 1}.items():
        want[token] = n
    np.testing.assert_array_equal(counts, want)  # the padded slot's id 0 is not counted


def test_unigram_baseline_by_hand():
    counts = target_counts(TRAIN, 10)  # N = 7 targets, V = 10
    result = unigram_mlm_baseline(counts, HELD, smoothing=1.0)
    assert result["predicted_id"] == 5 and result["predictions"] == 4
    assert result["mlm_accuracy"] == pytest.approx(1 / 4)  # only the first target is a 5

    def p(c):  # add-one smoothing
        return (c + 1) / (7 + 10)

    want = -(math.log(p(3)) + 2 * math.log(p(2)) + math.log(p(0))) / 4
    assert result["mlm_loss"] == pytest.approx(want)
    assert result["perplexity"] == pytest.approx(math.exp(want))


def test_unigram_baseline_equals_a_model_that_outputs_log_unigram_logits():
    rng = np.random.default_rng(0)
    V = 50
    counts = rng.integers(0, 30, V)
    held = examples(rng.integers(0, V, (6, 4)), (rng.random((6, 4)) < 0.7).astype(np.float32))
    result = unigram_mlm_baseline(counts, held, smoothing=0.5)
    log_p = np.log((counts + 0.5) / (counts.sum() + 0.5 * V)).astype(np.float32)
    logits = tf.broadcast_to(log_p, (6, 4, V))  # the same distribution at every slot
    ce, correct = masked_lm_terms(logits, tf.constant(held["masked_lm_ids"]))
    w = held["masked_lm_weights"]
    assert result["mlm_loss"] == pytest.approx(float(np.sum(ce.numpy() * w) / w.sum()), rel=1e-5)
    assert result["mlm_accuracy"] == pytest.approx(float(np.sum(correct.numpy() * w) / w.sum()))


def test_nsp_majority_baseline():
    result = nsp_majority_baseline(np.array([1, 1, 0, 1]), np.array([0, 1, 0, 0, 1]))
    assert result["majority_label"] == 1
    assert result["nsp_accuracy"] == pytest.approx(2 / 5)
    want = -(3 * math.log(0.25) + 2 * math.log(0.75)) / 5
    assert result["nsp_loss"] == pytest.approx(want)


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="vocab_size"):
        target_counts(TRAIN, vocab_size=8)
    with pytest.raises(ValueError, match="smoothing"):
        unigram_mlm_baseline(target_counts(TRAIN, 10), HELD, smoothing=0.0)
    with pytest.raises(ValueError, match="no MLM targets"):
        unigram_mlm_baseline(target_counts(TRAIN, 10), examples([[1]], [[0]]))
    with pytest.raises(ValueError, match="NSP"):
        nsp_majority_baseline(np.array([]), np.array([1]))
