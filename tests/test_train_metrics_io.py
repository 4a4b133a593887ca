"""Scalars written by the trainer's Scalars class come back from the event files."""

import pandas as pd
import pytest

from mbert_lib.train.metrics_io import read_scalars, scalar_series
from mbert_lib.train.progress import Scalars


def test_round_trip_and_later_write_wins(tmp_path):
    scalars = Scalars(tmp_path)
    for step in (10, 20, 30):
        scalars.write("train", step, {"loss": 1.0 / step, "learning_rate": 0.01})
    scalars.write("eval", 30, {"mlm_accuracy": 0.25})
    scalars.flush()
    resumed = Scalars(tmp_path)  # a resumed run re-logs step 30 in a new file
    resumed.write("train", 30, {"loss": 0.5})
    resumed.flush()

    table = read_scalars(tmp_path)
    assert list(table.columns) == ["split", "tag", "step", "value", "wall_time"]
    loss = scalar_series(table, "train", "loss")
    pd.testing.assert_series_equal(
        loss,
        pd.Series([0.1, 0.05, 0.5], index=[10, 20, 30]),
        check_names=False,
        check_index_type=False,
        rtol=1e-6,
    )
    assert scalar_series(table, "eval", "mlm_accuracy").to_dict() == {30: pytest.approx(0.25)}
    assert len(table) == 3 + 3 + 1


def test_missing_logs_and_tags_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no TensorBoard event files"):
        read_scalars(tmp_path)
    scalars = Scalars(tmp_path)
    scalars.write("train", 1, {"loss": 1.0})
    scalars.flush()
    with pytest.raises(KeyError, match="no scalar eval/loss"):
        scalar_series(read_scalars(tmp_path), "eval", "loss")
