"""What the lab measures: accuracy on structured predictions, attention on the rule's target."""

from __future__ import annotations

import weakref

import numpy as np
import tensorflow as tf

from mbert_lib.lab.data import LabExamples

_FORWARD: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _forward(model):
    """model(inputs, training=False), compiled once per model (a lab evaluates the same
    models dozens of times for its curves)."""
    if model not in _FORWARD:
        _FORWARD[model] = tf.function(
            lambda inputs: model(inputs, training=False), reduce_retracing=True
        )
    return _FORWARD[model]


def _outputs(model, examples: LabExamples, rows=slice(None), batch_size: int = 500):
    """(predicted ids [n, P], attention list L × [n, N, T, T]) over `rows`, batched."""
    inputs = examples.inputs(rows)
    n = len(inputs["input_word_ids"])
    forward = _forward(model)
    predictions, attention = [], []
    for start in range(0, n, batch_size):
        out = forward({k: v[start : start + batch_size] for k, v in inputs.items()})
        predictions.append(np.argmax(out["mlm_logits"].numpy(), -1))
        attention.append([a.numpy() for a in out["attention_scores"]])
    return np.concatenate(predictions), [np.concatenate(a) for a in zip(*attention)]


def rule_attention_mass(attention, examples: LabExamples, rows=slice(None)) -> np.ndarray:
    """[L, N]: the mean attention probability from a structured prediction's position to
    the rule's target j + 1 (1.0: every such query looks only there)."""
    a = examples.arrays
    r, k = np.nonzero(a["structured"][rows] > 0)
    queries = a["masked_lm_positions"][rows][r, k]
    keys = a["rule_target"][rows][r, k]
    return np.array(
        [[probs[r, h, queries, keys].mean() for h in range(probs.shape[1])] for probs in attention]
    )


def evaluate(model, examples: LabExamples, rows=slice(None)) -> dict:
    """Accuracies ("structured": on the rule's predictions, "other": on the rest) and the
    rule's attention mass per layer and head, on `examples[rows]`."""
    predicted, attention = _outputs(model, examples, rows)
    a = {k: v[rows] for k, v in examples.arrays.items()}
    correct = predicted == a["masked_lm_ids"]
    structured = a["structured"] > 0
    other = (a["masked_lm_weights"] > 0) & ~structured
    return {
        "structured_accuracy": float(correct[structured].mean()),
        "other_accuracy": float(correct[other].mean()),
        "rule_attention_mass": rule_attention_mass(attention, examples, rows).round(4).tolist(),
    }
