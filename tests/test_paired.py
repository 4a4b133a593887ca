"""The paired-statistics helper against a closed form and scipy's own paired t-test."""

import math

import numpy as np
import pytest
from scipy import stats

from mbert_lib.paired import paired_contrast, paired_difference

# Student's t quantile t_{0.975, df} for df = 1..4 (printed tables, e.g. NIST's).
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776}


def test_mean_se_and_interval_from_the_closed_form():
    a, b = [0.31, 0.35, 0.30, 0.33], [0.28, 0.30, 0.29, 0.27]
    d = np.subtract(a, b)
    se = d.std(ddof=1) / 2.0
    r = paired_difference(a, b)
    assert r.n == 4 and r.mean == pytest.approx(d.mean())
    assert r.se == pytest.approx(se)
    assert r.low == pytest.approx(d.mean() - T_975[3] * se, abs=1e-5)
    assert r.high == pytest.approx(d.mean() + T_975[3] * se, abs=1e-5)


def test_the_interval_excludes_zero_exactly_when_scipys_paired_t_test_rejects_at_5_percent():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(2, 8))
        b = rng.normal(size=n)
        a = b + rng.normal(loc=rng.normal(scale=0.8), size=n)
        r = paired_difference(a, b)
        p = stats.ttest_rel(a, b).pvalue
        if abs(p - 0.05) > 1e-9:
            assert (r.verdict != "level") == (p < 0.05)
        assert r.verdict == (
            "level" if r.low <= 0 <= r.high else "beats" if r.mean > 0 else "behind"
        )


def test_pairing_sees_a_shared_seed_effect_that_unpaired_means_would_not():
    seeds = np.array([0.70, 0.80, 0.75])  # how hard each seed is, shared by both models
    a, b = seeds + 0.010, seeds + np.array([0.0, 0.001, -0.001])
    assert paired_difference(a, b).verdict == "beats"
    assert paired_difference(b, a).verdict == "behind"
    unpaired_se = math.sqrt(a.var(ddof=1) / 3 + b.var(ddof=1) / 3)
    assert a.mean() - b.mean() < 2 * unpaired_se  # two independent means: within noise


def test_identical_runs_are_level_and_describe_reads_in_points():
    r = paired_difference([0.5, 0.6], [0.5, 0.6])
    assert (r.mean, r.se, r.verdict) == (0.0, 0.0, "level")
    text = paired_difference([0.52, 0.63, 0.58], [0.50, 0.60, 0.57]).describe(scale=100)
    assert text.startswith("+2.00 [") and "n=3" in text


@pytest.mark.parametrize(
    "a, b, message",
    [
        ([1.0, 2.0], [1.0], "equal length"),
        ([1.0], [2.0], "at least 2 pairs"),
        ([1.0, math.nan], [0.0, 0.0], "finite"),
        ([[1.0, 2.0]], [[1.0, 2.0]], "equal length"),
    ],
)
def test_bad_input_names_what_was_expected(a, b, message):
    with pytest.raises(ValueError, match=message):
        paired_difference(a, b)


def test_a_contrast_of_three_models_pairs_each_seed_across_all_of_them():
    rng = np.random.default_rng(1)
    rows = {k: rng.normal(size=4) for k in "abc"}
    r = paired_contrast({"a": 1, "b": -2, "c": 1}, rows)  # (c − b) − (b − a), seed by seed
    d = rows["a"] - 2 * rows["b"] + rows["c"]
    assert r.mean == pytest.approx(d.mean()) and r.se == pytest.approx(d.std(ddof=1) / 2)
    with pytest.raises(ValueError, match=r"no values for \['c'\]"):
        paired_contrast({"a": 1, "c": -1}, {"a": [1.0, 2.0]})
