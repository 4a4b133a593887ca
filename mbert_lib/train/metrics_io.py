"""Reading a run's TensorBoard scalars back, without the `tensorboard` package.

The trainers write scalars with `tf.summary.write` (see `progress.Scalars`)
into MODEL_DIR/tensorboard/<split>/events.out.tfevents.*; each event holds a
step and, per scalar, a tag and a 0-d float tensor. `read_scalars` walks
those files (TFRecord files of `Event` protos) and returns one long table,
the form pandas and seaborn plot directly.

A resumed run appends a new event file and may log some steps twice (those
after the last checkpoint of the killed run); the later write wins.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import tensorflow as tf
from tensorflow.core.util import event_pb2

COLUMNS = ["split", "tag", "step", "value", "wall_time"]


def read_scalars(log_dir: str | os.PathLike) -> pd.DataFrame:
    """Every scalar under `log_dir` (one subdirectory per split, e.g. train/ and eval/).

    Returns a DataFrame with columns split, tag, step, value, wall_time,
    sorted by split, tag and step, one row per (split, tag, step).
    """
    log_dir = Path(log_dir)
    files = sorted(log_dir.glob("*/events.out.tfevents.*"))
    if not files:
        raise FileNotFoundError(
            f"no TensorBoard event files under {log_dir}/<split>/; "
            "is this a run's tensorboard directory?"
        )
    rows = []
    for path in files:
        split = path.parent.name
        for record in tf.data.TFRecordDataset(str(path)):
            event = event_pb2.Event.FromString(record.numpy())
            for value in event.summary.value:
                number = (
                    float(tf.make_ndarray(value.tensor))
                    if value.HasField("tensor")
                    else float(value.simple_value)
                )
                rows.append((split, value.tag, int(event.step), number, event.wall_time))
    table = pd.DataFrame(rows, columns=COLUMNS)
    table = table.sort_values(["split", "tag", "step", "wall_time"])
    table = table.drop_duplicates(["split", "tag", "step"], keep="last")
    return table.reset_index(drop=True)


def scalar_series(table: pd.DataFrame, split: str, tag: str) -> pd.Series:
    """value indexed by step for one (split, tag); a clear error if it was never logged."""
    rows = table[(table.split == split) & (table.tag == tag)]
    if rows.empty:
        known = sorted(set(zip(table.split, table.tag)))
        raise KeyError(f"no scalar {split}/{tag}; logged: {known}")
    return rows.set_index("step")["value"]
