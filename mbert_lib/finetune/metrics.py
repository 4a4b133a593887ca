"""GLUE's metrics in numpy: accuracy, F1, Matthews correlation, Pearson and Spearman.

For binary predictions ŷ and labels y with the confusion counts TP, TN, FP, FN:

    accuracy = (TP + TN) / n
    F1       = 2·TP / (2·TP + FP + FN)                              (positive class 1)
    MCC      = (TP·TN − FP·FN) / √((TP+FP)(TP+FN)(TN+FP)(TN+FN))     0 when a factor is 0

For scores x (predicted) and y (gold):

    Pearson  r = Σ(x − x̄)(y − ȳ) / √(Σ(x − x̄)² · Σ(y − ȳ)²)
    Spearman ρ = Pearson r of the ranks (ties get the mean of their ranks)

GLUE reports CoLA by MCC, MRPC by F1 and accuracy, STS-B by Pearson and
Spearman, SST-2 and RTE by accuracy (Wang et al., 2019). Values are
fractions in [0, 1] (correlations in [−1, 1]); tables print them × 100.
"""

from __future__ import annotations

import numpy as np


def _pair(predictions, labels) -> tuple[np.ndarray, np.ndarray]:
    predictions, labels = np.asarray(predictions), np.asarray(labels)
    if predictions.shape != labels.shape or predictions.ndim != 1:
        raise ValueError(
            f"predictions and labels must be 1-D of one length, got shapes "
            f"{predictions.shape} and {labels.shape}"
        )
    if predictions.size == 0:
        raise ValueError("no predictions to score")
    return predictions, labels


def confusion_counts(predictions, labels) -> dict[str, int]:
    """TP, TN, FP, FN of binary (0/1) predictions, class 1 positive."""
    p, y = _pair(predictions, labels)
    bad = sorted(set(np.unique(p).tolist() + np.unique(y).tolist()) - {0, 1})
    if bad:
        raise ValueError(f"binary metrics need 0/1 predictions and labels, got values {bad}")
    return {
        "tp": int(np.sum((p == 1) & (y == 1))),
        "tn": int(np.sum((p == 0) & (y == 0))),
        "fp": int(np.sum((p == 1) & (y == 0))),
        "fn": int(np.sum((p == 0) & (y == 1))),
    }


def accuracy(predictions, labels) -> float:
    p, y = _pair(predictions, labels)
    return float(np.mean(p == y))


def f1(predictions, labels) -> float:
    c = confusion_counts(predictions, labels)
    denominator = 2 * c["tp"] + c["fp"] + c["fn"]
    return 2 * c["tp"] / denominator if denominator else 0.0


def matthews_corrcoef(predictions, labels) -> float:
    c = confusion_counts(predictions, labels)
    tp, tn, fp, fn = (float(c[k]) for k in ("tp", "tn", "fp", "fn"))
    denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return float((tp * tn - fp * fn) / denominator) if denominator else 0.0


def pearson(x, y) -> float:
    x, y = (a.astype(np.float64) for a in _pair(x, y))
    dx, dy = x - x.mean(), y - y.mean()
    denominator = np.sqrt(np.sum(dx * dx) * np.sum(dy * dy))
    return float(np.sum(dx * dy) / denominator) if denominator else 0.0


def average_ranks(values) -> np.ndarray:
    """Ranks 1..n of `values`; tied values share the mean of the ranks they span."""
    values = np.asarray(values)
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    ranks = np.empty(len(values), np.float64)
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranks[order[start : end + 1]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def spearman(x, y) -> float:
    x, y = _pair(x, y)
    return pearson(average_ranks(x), average_ranks(y))


METRICS = {
    "accuracy": accuracy,
    "f1": f1,
    "mcc": matthews_corrcoef,
    "pearson": pearson,
    "spearman": spearman,
}
