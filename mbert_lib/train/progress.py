"""What a long run shows: a tqdm bar with loss and throughput, and TensorBoard scalars.

Throughput (tokens/s for pre-training and distillation, whose batches are always
[B, T]; examples/s for fine-tuning, whose batches may be cut to their longest
sentence) is measured between consecutive steps, so the first step after a
(re)start, which traces and compiles the step function, is left out.

Scalars are written with TensorFlow's own `tf.summary.write` and the
"scalars" plugin tag, which is what `tf.summary.scalar` writes, without
needing the `tensorboard` package at training time (only to view the logs:
`pip install tensorboard; tensorboard --logdir MODEL_DIR/tensorboard`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence

import tensorflow as tf
from tensorflow.core.framework import summary_pb2
from tensorflow.core.util import event_pb2
from tqdm.auto import tqdm

_SCALAR_METADATA = summary_pb2.SummaryMetadata(
    plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")
)


class Progress:
    """A tqdm bar over steps [initial, total) with loss and throughput in its postfix.

    Throughput = `per_step` items (`unit`: "tokens" or "examples") a step, averaged
    over the last (up to) WINDOW timed steps.
    """

    WINDOW = 20
    UNITS = {"tokens": "tok_s", "examples": "ex_s"}  # unit -> the bar's postfix key

    def __init__(
        self,
        total: int,
        initial: int,
        per_step: int,
        desc: str = "train",
        disable: bool = False,
        log: Callable[[str], None] = print,
        postfix_keys: Sequence[str] = (),
        unit: str = "tokens",
    ):
        if unit not in self.UNITS:
            raise ValueError(f"throughput unit must be one of {list(self.UNITS)}, got {unit!r}")
        self.per_step, self.unit = per_step, unit
        self.log = log
        self.postfix_keys = tuple(postfix_keys)
        self.bar = tqdm(
            total=total,
            initial=initial,
            desc=desc,
            unit="step",
            dynamic_ncols=True,
            disable=disable,
        )
        self._last_time = None
        self._window_steps, self._window_seconds = 0, 0.0
        self.per_second = float("nan")

    def update(self, metrics: Mapping[str, float]) -> None:
        """Advances one step; `metrics` must hold "loss" (and shows `postfix_keys` too)."""
        now = time.perf_counter()
        if self._last_time is not None:
            if self._window_steps >= self.WINDOW:
                self._window_steps, self._window_seconds = 0, 0.0
            self._window_steps += 1
            self._window_seconds += now - self._last_time
            self.per_second = self.per_step * self._window_steps / self._window_seconds
        self._last_time = now
        extra = {k: f"{metrics[k]:.4g}" for k in self.postfix_keys if k in metrics}
        self.bar.set_postfix(
            loss=f"{metrics['loss']:.4f}",
            **extra,
            **{self.UNITS[self.unit]: f"{self.per_second:,.0f}"},
            refresh=False,
        )
        self.bar.update(1)

    def pause(self) -> None:
        """Call before a pause (eval, checkpoint) so it is not counted as training time."""
        self._last_time = None

    def write(self, text: str) -> None:
        """A message above the bar (or through `log` when the bar is disabled)."""
        if self.bar.disable:
            self.log(text)
        else:
            self.bar.write(text)

    def close(self) -> None:
        self.bar.close()


class Scalars:
    """TensorBoard scalar writers, one per subdirectory of `log_dir` (train/, eval/);
    log_dir None writes nothing (a worker that is not the chief)."""

    def __init__(self, log_dir: str | os.PathLike | None):
        self.log_dir = os.fspath(log_dir) if log_dir is not None else None
        self._writers: dict[str, tf.summary.SummaryWriter] = {}

    def write(self, split: str, step: int, values: Mapping[str, float]) -> None:
        if self.log_dir is None:
            return
        if split not in self._writers:
            self._writers[split] = tf.summary.create_file_writer(os.path.join(self.log_dir, split))
        with self._writers[split].as_default(step=step):
            for name, value in values.items():
                tf.summary.write(name, tf.constant(value, tf.float32), metadata=_SCALAR_METADATA)

    def flush(self) -> None:
        for writer in self._writers.values():
            writer.flush()


def read_scalars(log_dir: str | os.PathLike) -> dict[str, tuple[list[int], list[float]]]:
    """{tag: (steps, values)} of the scalars `Scalars` wrote into one split directory.

    Reads the event files with TensorFlow alone (no `tensorboard` package);
    a step written twice (a resumed run) keeps its last value.
    """
    directory = os.fspath(log_dir)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{directory}: no TensorBoard scalars here")
    found: dict[str, dict[int, float]] = {}
    for name in sorted(os.listdir(directory)):
        if ".tfevents." not in name:
            continue
        for record in tf.data.TFRecordDataset(os.path.join(directory, name)):
            event = event_pb2.Event.FromString(record.numpy())
            for value in event.summary.value:
                number = (
                    value.simple_value
                    if value.HasField("simple_value")
                    else float(tf.make_ndarray(value.tensor))
                )
                found.setdefault(value.tag, {})[int(event.step)] = number
    return {
        tag: (sorted(points), [points[s] for s in sorted(points)]) for tag, points in found.items()
    }
