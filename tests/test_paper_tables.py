"""The paper's transfer tables as data: the confirmed MNLI-m cells, nothing copied between
tables, every unconfirmed cell marked approximate."""

from mbert_lib import paper


def test_confirmed_mnli_columns_of_tables_8_and_9():
    assert {row: cells["MNLI-m"].value for row, cells in paper.TABLE8.items()} == {
        "AKT": 83.0,
        "JKT": 83.5,
        "PKT": 83.9,
    }
    assert {row: cells["MNLI-m"].value for row, cells in paper.TABLE9.items()} == {
        "no transfer": 80.8,
        "+PD": 81.1,
        "+PD+FMT": 83.8,
        "+PD+FMT+AT": 84.4,
    }
    for table in (paper.TABLE8, paper.TABLE9):
        assert not any(cells[paper.CONFIRMED_TASK].approx for cells in table.values())


def test_table8_pkt_and_table9_last_row_are_distinct_data():
    pkt, full = paper.TABLE8["PKT"], paper.TABLE9["+PD+FMT+AT"]
    shared = set(pkt) & set(full)
    assert shared and any(pkt[t].value != full[t].value for t in shared)
    assert pkt is not full and pkt["MNLI-m"] != full["MNLI-m"]


def test_every_other_cell_is_marked_approximate():
    for table in (paper.TABLE8, paper.TABLE9):
        for cells in table.values():
            for task, value in cells.items():
                assert value.approx == (task != paper.CONFIRMED_TASK), task
                assert str(value).startswith("≈") == value.approx
