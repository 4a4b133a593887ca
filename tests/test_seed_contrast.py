"""Differences of means over seeds and their standard errors, against numpy by hand."""

import math

import numpy as np
import pytest

from mbert_lib.seed_contrast import contrast, verdict
from mbert_lib.tables.tables8_9_transfer import FINDINGS, findings_table


def test_difference_of_two_means_and_its_standard_error():
    a, b = [1.0, 2.0, 3.0], [0.0, 0.5]
    d, se = contrast({"a": 1, "b": -1}, {"a": a, "b": b})
    assert d == pytest.approx(2.0 - 0.25)
    assert se == pytest.approx(math.sqrt(np.var(a, ddof=1) / 3 + np.var(b, ddof=1) / 2))


def test_difference_of_gains_counts_the_shared_row_twice():
    rng = np.random.default_rng(0)
    rows = {k: list(rng.normal(size=3)) for k in "abc"}
    d, se = contrast({"a": 1, "b": -2, "c": 1}, rows)  # (c − b) − (b − a)
    means = {k: np.mean(v) for k, v in rows.items()}
    assert d == pytest.approx((means["c"] - means["b"]) - (means["b"] - means["a"]))
    var = {k: np.var(v, ddof=1) / 3 for k, v in rows.items()}
    assert se == pytest.approx(math.sqrt(var["a"] + 4 * var["b"] + var["c"]))


def test_verdicts_and_errors():
    assert verdict(2.1, 1.0) == "shown" and verdict(1.9, 1.0) == "same sign, within 2 s.e."
    assert verdict(-0.1, 1.0) == "opposite sign"
    assert math.isnan(contrast({"a": 1, "b": -1}, {"a": [1.0], "b": [0.0, 1.0]})[1])
    with pytest.raises(ValueError, match=r"no values for \['b'\]"):
        contrast({"a": 1, "b": -1}, {"a": [1.0]})


def _row(mlm, dev):
    return {"mlm_accuracy": {"values": mlm}, "downstream": dev}


def test_findings_table_marks_a_finding_reproduced_only_when_every_comparison_is_shown():
    base = [0.100, 0.101, 0.099]
    rows = {
        "no_transfer": _row(base, base),
        "ablation_copy": _row(base, base),
        "ablation_pd": _row([0.110, 0.111, 0.109], base),  # PD +1 point on MLM
        "ablation_pd_fmt": _row([0.150, 0.151, 0.149], base),  # FMT +4
        "pkt": _row([0.152, 0.153, 0.151], base),  # AT +0.2
        "jkt": _row([0.140, 0.141, 0.139], base),
        "akt": _row([0.145, 0.146, 0.144], base),
    }
    table = findings_table(rows).set_index("comparison")
    mlm = "held-out MLM acc"
    assert table.loc["FMT's gain − PD's", f"{mlm}: ours (points)"] == pytest.approx(3.0)
    assert table.loc["FMT's gain − AT's", f"{mlm}: ours (points)"] == pytest.approx(3.8)
    assert table.loc["FMT's gain − PD's", f"{mlm}: finding"] == "reproduced"
    assert table.loc["+PD+FMT+AT − +PD+FMT", f"{mlm}: verdict"] == "shown"
    assert table.loc["+PD+FMT+AT − +PD+FMT", f"{mlm}: finding"] == "reproduced"
    # JKT below AKT: the Table 8 finding fails as a whole, though PKT > JKT is shown
    assert table.loc["PKT − JKT", f"{mlm}: verdict"] == "shown"
    assert table.loc["JKT − AKT", f"{mlm}: verdict"] == "opposite sign"
    assert set(table.loc[["PKT − JKT", "JKT − AKT"], f"{mlm}: finding"]) == {"not reproduced"}
    # equal dev accuracies everywhere: nothing shown
    assert set(table["fine-tuned dev acc: finding"]) == {"not reproduced"}
    # the paper's own differences, MNLI-m dev: PKT 83.9 − JKT 83.5, +PD+FMT 83.8 − 2 × 81.1 + 80.8
    assert table.loc["PKT − JKT", "paper MNLI-m (points)"] == pytest.approx(0.4)
    assert table.loc["FMT's gain − PD's", "paper MNLI-m (points)"] == pytest.approx(2.4)
    assert len(table) == sum(len(c) for c in FINDINGS.values())
    assert findings_table({}) is None
    partial = findings_table({"pkt": rows["pkt"]})
    assert set(partial["held-out MLM acc: verdict"]) == {"row not run"}
