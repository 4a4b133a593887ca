"""Context-free baselines for the held-out pre-training metrics.

A pre-trained model is only as good as its margin over what needs no model:

    unigram MLM   predict every masked token from the training targets'
                  frequencies alone, ignoring the sentence: accuracy = the
                  share of held-out targets equal to the most frequent token;
                  perplexity = exp(−mean log p(target)) with add-k smoothing
                  (p(w) = (count(w) + k) / (N + k·V)), the best any model
                  without context can do in expectation on this text;
    majority NSP  always answer the training set's more frequent label.

Shapes: n examples, P max_predictions_per_seq, V vocabulary; arrays follow
the element contract of `mbert_lib.data.examples` (numpy, unbatched).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np


def _targets(examples: Mapping[str, np.ndarray]) -> np.ndarray:
    """The real MLM target ids (weight > 0), flattened: [M]."""
    weights = np.asarray(examples["masked_lm_weights"]) > 0  # [n, P]
    return np.asarray(examples["masked_lm_ids"])[weights]


def target_counts(examples: Mapping[str, np.ndarray], vocab_size: int) -> np.ndarray:
    """How often each token id is an MLM target in `examples`: int64 [V]."""
    targets = _targets(examples)
    if targets.size and (targets.min() < 0 or targets.max() >= vocab_size):
        raise ValueError(
            f"masked_lm_ids must be in [0, vocab_size={vocab_size}), got "
            f"[{targets.min()}, {targets.max()}]"
        )
    return np.bincount(targets, minlength=vocab_size).astype(np.int64)


def unigram_mlm_baseline(
    train_counts: np.ndarray, eval_examples: Mapping[str, np.ndarray], smoothing: float = 1.0
) -> dict:
    """The unigram predictor's held-out MLM accuracy, loss (nats) and perplexity.

    train_counts: [V] target counts of the training examples (`target_counts`).
    Returns mlm_accuracy, mlm_loss, perplexity, predictions (M) and
    predicted_id (the most frequent training target, predicted everywhere).
    """
    counts = np.asarray(train_counts, np.float64)  # [V]
    if counts.ndim != 1 or counts.sum() <= 0:
        raise ValueError("train_counts must be a non-empty 1-D array of counts")
    if smoothing <= 0:
        raise ValueError(f"smoothing must be > 0 (else unseen targets get p = 0), got {smoothing}")
    targets = _targets(eval_examples)  # [M]
    if targets.size == 0:
        raise ValueError("the held-out examples have no MLM targets")
    probs = (counts + smoothing) / (counts.sum() + smoothing * counts.size)  # p(w), add-k
    predicted = int(np.argmax(counts))
    loss = float(-np.mean(np.log(probs[targets])))
    return {
        "mlm_accuracy": float(np.mean(targets == predicted)),
        "mlm_loss": loss,
        "perplexity": math.exp(loss),
        "predictions": int(targets.size),
        "predicted_id": predicted,
    }


def nsp_majority_baseline(train_labels: np.ndarray, eval_labels: np.ndarray) -> dict:
    """Held-out accuracy of always answering the training set's majority NSP label.

    Also the cross-entropy (nats) of predicting the training label frequencies.
    """
    train_labels, eval_labels = np.asarray(train_labels), np.asarray(eval_labels)
    if train_labels.size == 0 or eval_labels.size == 0:
        raise ValueError("need at least one training and one held-out NSP label")
    p_random = float(np.mean(train_labels == 1))  # P(label 1)
    majority = int(p_random > 0.5)
    p_eval = np.where(eval_labels == 1, p_random, 1.0 - p_random)
    return {
        "nsp_accuracy": float(np.mean(eval_labels == majority)),
        "nsp_loss": float(-np.mean(np.log(np.clip(p_eval, 1e-12, None)))),
        "majority_label": majority,
        "examples": int(eval_labels.size),
    }
