"""The fine-tuning tasks by name: where their examples come from and how they are scored.

    name               classes                          metrics (first = model selection)
    sst2               negative / positive              accuracy
    cola               unacceptable / acceptable        mcc
    mrpc               not paraphrase / paraphrase      f1, accuracy
    rte                entailment / not_entailment      accuracy
    stsb               a similarity score in [0, 5]     spearman, pearson (regression)
    builtin_shuffled   shuffled / original              accuracy   (offline, NOT GLUE)

Sources: "local" (GLUE's layout under --data-dir / MBERT_DATA_DIR), "hub"
(`datasets`), "builtin" (the offline task only); "auto" picks "builtin" for
the builtin task, else "local" when a data directory is known, else "hub".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from mbert_lib.data.data_dir import resolve_data_dir
from mbert_lib.data.errors import DataError
from mbert_lib.data.glue import GlueExample, load_glue
from mbert_lib.finetune import builtin_task
from mbert_lib.finetune.metrics import METRICS

SOURCES = ("auto", "local", "hub", "builtin")


@dataclasses.dataclass(frozen=True)
class Task:
    """A labeled task: its classes, metrics, sources and loader."""

    name: str
    description: str
    label_names: tuple[str, ...]  # () for regression
    metrics: tuple[str, ...]  # metrics[0] selects the best checkpoint
    sentence_pair: bool
    sources: tuple[str, ...]
    load: Callable[[str, str, str | None], list[GlueExample]]  # (split, source, data_dir)

    @property
    def num_classes(self) -> int:
        """Outputs of the classification head: the classes, or 1 score (regression)."""
        return len(self.label_names) or 1

    @property
    def is_regression(self) -> bool:
        return not self.label_names

    @property
    def main_metric(self) -> str:
        return self.metrics[0]

    def resolve_source(self, source: str, data_dir: str | None = None) -> str:
        """The concrete source for `source` ("auto" resolved); DataError if unsupported."""
        if source not in SOURCES:
            raise DataError(f"unknown task source {source!r}; expected one of {SOURCES}")
        if source == "auto":
            if "builtin" in self.sources:
                return "builtin"
            return "local" if resolve_data_dir(data_dir) is not None else "hub"
        if source not in self.sources:
            hint = (
                f"; without GLUE data, fine-tune on the offline task "
                f"'{builtin_task.NAME}' (--task {builtin_task.NAME})"
                if source == "builtin"
                else ""
            )
            raise DataError(
                f"task {self.name!r} has no source {source!r}; it reads {list(self.sources)}{hint}"
            )
        return source

    def examples(
        self, split: str, source: str = "auto", data_dir: str | None = None
    ) -> list[GlueExample]:
        return self.load(split, self.resolve_source(source, data_dir), data_dir)

    def predictions(self, logits: np.ndarray) -> np.ndarray:
        """Class ids [n] (argmax), or scores [n] for regression, from logits [n, C]."""
        logits = np.asarray(logits)
        return logits[:, 0] if self.is_regression else np.argmax(logits, axis=-1)

    def score(self, logits: np.ndarray, labels: np.ndarray) -> dict[str, float]:
        """{metric: value} of logits [n, C] against labels [n]."""
        predictions = self.predictions(logits)
        return {name: METRICS[name](predictions, labels) for name in self.metrics}


def _glue(
    name: str, description: str, labels: tuple[str, ...], metrics: tuple[str, ...], pair: bool
) -> Task:
    def load(split, source, data_dir):
        return load_glue(name, split, source, data_dir)

    return Task(name, description, labels, metrics, pair, ("local", "hub"), load)


def _builtin_load(split, source, data_dir):
    return builtin_task.builtin_shuffled_examples(split)


TASKS: dict[str, Task] = {
    "sst2": _glue(
        "sst2",
        "GLUE SST-2: movie-review sentence sentiment",
        ("negative", "positive"),
        ("accuracy",),
        False,
    ),
    "cola": _glue(
        "cola",
        "GLUE CoLA: grammatical acceptability",
        ("unacceptable", "acceptable"),
        ("mcc",),
        False,
    ),
    "mrpc": _glue(
        "mrpc",
        "GLUE MRPC: is sentence B a paraphrase of A",
        ("not_paraphrase", "paraphrase"),
        ("f1", "accuracy"),
        True,
    ),
    "rte": _glue(
        "rte", "GLUE RTE: does A entail B", ("entailment", "not_entailment"), ("accuracy",), True
    ),
    "stsb": _glue(
        "stsb", "GLUE STS-B: similarity of A and B, 0-5", (), ("spearman", "pearson"), True
    ),
    builtin_task.NAME: Task(
        builtin_task.NAME,
        "OFFLINE stand-in, not GLUE: is this stdlib docstring sentence original or are its "
        "words shuffled",
        builtin_task.LABEL_NAMES,
        ("accuracy",),
        False,
        ("builtin",),
        _builtin_load,
    ),
}


def get_task(name: str) -> Task:
    """The task called `name`; the error lists the known names."""
    if name not in TASKS:
        raise DataError(f"unknown task {name!r}; known tasks: {sorted(TASKS)}")
    return TASKS[name]


def check_labels(task: Task, labels: np.ndarray, what: str) -> None:
    """DataError unless every label is one of the task's classes (or a finite score)."""
    labels = np.asarray(labels)
    if task.is_regression:
        if not np.all(np.isfinite(labels)):
            raise DataError(f"{what}: regression labels must be finite numbers")
        return
    bad = sorted(set(np.unique(labels).tolist()) - set(range(task.num_classes)))
    if bad:
        raise DataError(
            f"{what}: labels {bad} are outside task {task.name!r}'s classes "
            f"0..{task.num_classes - 1} ({', '.join(task.label_names)})"
        )
