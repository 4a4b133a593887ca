"""The paper's findings of Tables 8 and 9, checked on rows paired seed by seed."""

import pytest

from mbert_lib.tables.tables8_9_transfer import FINDINGS, SHOWN_BESIDE, findings_table


def _row(mlm, dev):
    return {"mlm_accuracy": {"values": mlm}, "downstream": dev}


def test_findings_table_marks_a_finding_reproduced_only_when_every_comparison_beats_zero():
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
    assert table.loc["+PD+FMT+AT − +PD+FMT", f"{mlm}: verdict"] == "beats"
    assert table.loc["+PD+FMT+AT − +PD+FMT", f"{mlm}: finding"] == "reproduced"
    # JKT below AKT: the Table 8 finding fails as a whole, though PKT beats JKT
    assert table.loc["PKT − JKT", f"{mlm}: verdict"] == "beats"
    assert table.loc["JKT − AKT", f"{mlm}: verdict"] == "behind"
    assert set(table.loc[["PKT − JKT", "JKT − AKT"], f"{mlm}: finding"]) == {"not reproduced"}
    # equal dev accuracies everywhere: nothing shown
    assert set(table["fine-tuned dev acc: finding"]) == {"not reproduced"}
    # the paper's own differences, MNLI-m dev: PKT 83.9 − JKT 83.5, +PD+FMT 83.8 − 2 × 81.1 + 80.8
    assert table.loc["PKT − JKT", "paper MNLI-m (points)"] == pytest.approx(0.4)
    assert table.loc["FMT's gain − PD's", "paper MNLI-m (points)"] == pytest.approx(2.4)
    # the paper's own pairing of +PD (with no transfer) is shown beside, and decides nothing
    paper_pairing = "+PD − no transfer (the paper's pairing; copy and PD together)"
    assert table.loc[paper_pairing, f"{mlm}: ours (points)"] == pytest.approx(1.0)
    assert not table.loc[paper_pairing, "decides"] and table.loc["PKT − JKT", "decides"]
    assert len(table) == sum(len(c) for c in (*FINDINGS.values(), *SHOWN_BESIDE.values()))
    assert findings_table({}) is None
    partial = findings_table({"pkt": rows["pkt"]})
    assert set(partial["held-out MLM acc: verdict"]) == {"row not run"}
