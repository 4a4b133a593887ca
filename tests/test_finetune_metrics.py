"""GLUE's metrics against values computed by hand."""

import math

import numpy as np
import pytest

from mbert_lib.finetune import metrics

# TP = 3 (positions 0, 3, 6), TN = 2 (1, 4), FP = 1 (2), FN = 2 (5, 7)
PREDICTIONS = [1, 0, 1, 1, 0, 0, 1, 0]
LABELS = [1, 0, 0, 1, 0, 1, 1, 1]


def test_confusion_counts_by_hand():
    assert metrics.confusion_counts(PREDICTIONS, LABELS) == {"tp": 3, "tn": 2, "fp": 1, "fn": 2}


def test_accuracy_f1_and_mcc_by_hand():
    assert metrics.accuracy(PREDICTIONS, LABELS) == 5 / 8
    assert metrics.f1(PREDICTIONS, LABELS) == pytest.approx(2 * 3 / (2 * 3 + 1 + 2))
    # (TP·TN − FP·FN) / √((TP+FP)(TP+FN)(TN+FP)(TN+FN)) = (6 − 2) / √(4·5·3·4)
    assert metrics.matthews_corrcoef(PREDICTIONS, LABELS) == pytest.approx(4 / math.sqrt(240))


def test_mcc_is_symmetric_in_its_extremes_and_zero_when_undefined():
    assert metrics.matthews_corrcoef(LABELS, LABELS) == pytest.approx(1.0)
    assert metrics.matthews_corrcoef([1 - y for y in LABELS], LABELS) == pytest.approx(-1.0)
    assert metrics.matthews_corrcoef([1] * 8, LABELS) == 0.0  # one column empty
    assert metrics.f1([0] * 8, [0] * 8) == 0.0  # no positives at all


def test_pearson_by_hand():
    # x̄ = 2.5, ȳ = 5: Σ dx·dy = 11, Σ dx² = 5, Σ dy² = 26
    assert metrics.pearson([1, 2, 3, 4], [2, 4, 5, 9]) == pytest.approx(11 / math.sqrt(130))
    assert metrics.pearson([1, 2, 3], [5, 5, 5]) == 0.0  # constant: undefined -> 0


def test_spearman_uses_average_ranks_for_ties():
    np.testing.assert_array_equal(metrics.average_ranks([10, 20, 20, 30]), [1, 2.5, 2.5, 4])
    np.testing.assert_array_equal(metrics.average_ranks([3, 1, 3, 3]), [3, 1, 3, 3])
    # ranks x = [1, 2.5, 2.5, 4], y = [1, 3, 2, 4]: 4.5 / √(4.5 · 5)
    assert metrics.spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(22.5))
    assert metrics.spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
    assert metrics.spearman([1, 2, 3, 4], [1, 4, 9, 16]) == pytest.approx(1.0)  # monotone


def test_bad_inputs_are_clear_errors():
    with pytest.raises(ValueError, match="one length"):
        metrics.accuracy([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="no predictions"):
        metrics.accuracy([], [])
    with pytest.raises(ValueError, match=r"0/1 predictions and labels, got values \[2\]"):
        metrics.f1([0, 2], [0, 1])
