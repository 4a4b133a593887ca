"""Every number the prose quotes from a record reads what the record gives."""

import json

import pytest

from mbert_lib.report import quotes


def test_every_quoted_number_in_the_docs_matches_its_record():
    assert quotes.check() == []


@pytest.fixture()
def tree(tmp_path):
    (tmp_path / "results").mkdir()
    record = {"mlm": {"pkt": [0.271, 0.273, 0.275]}, "d": {"mean": 1.234, "low": 0.4, "high": 2.0}}
    (tmp_path / "results" / "r.json").write_text(json.dumps(record))
    doc = tmp_path / "README.md"
    doc.write_text(
        "PKT <!--n results/r.json mlm/pkt mean_pm-->27.3 ± 0.2<!--/n--> %, first seed "
        "<!--n results/r.json mlm/pkt/0 pct1-->27.1<!--/n-->, gap "
        "<!--n results/r.json d paired-->+1.2 [+0.4, +2.0]<!--/n-->.\n"
    )
    return tmp_path, doc


def test_a_quote_that_drifts_from_its_record_is_named_and_update_fixes_it(tree):
    root, doc = tree
    assert quotes.check([doc], root) == []
    doc.write_text(doc.read_text().replace("27.1<", "27.4<"))
    problems = quotes.check([doc], root)
    assert (
        len(problems) == 1 and "README.md:1: reads '27.4', its record gives '27.1'" in problems[0]
    )
    assert quotes.update([doc], root) == 1 and quotes.check([doc], root) == []


def test_a_quote_of_a_missing_value_or_format_is_a_problem(tree):
    root, doc = tree
    doc.write_text(
        "<!--n results/r.json mlm/bert pct1-->1<!--/n--> <!--n results/r.json mlm x-->1<!--/n-->"
    )
    problems = quotes.check([doc], root)
    assert "no 'bert'" in problems[0] and "unknown quote format 'x'" in problems[1]


def test_a_list_element_is_selected_by_a_field_and_must_be_unique():
    record = {"runs": [{"setting": "pkt", "s": 1.5}, {"setting": "copy", "s": 2.5}]}
    assert quotes.value_at(record, "runs/setting=copy/s") == 2.5
    assert quotes.value_at(record, "runs/1/s") == 2.5
    record["runs"].append({"setting": "copy", "s": 3.0})
    with pytest.raises(KeyError, match="2 elements with 'setting=copy'"):
        quotes.value_at(record, "runs/setting=copy/s")
    with pytest.raises(KeyError, match="0 elements"):
        quotes.value_at(record, "runs/setting=jkt/s")
