"""What a fine-tuned classifier predicts: its task's label names, read from its directory.

A `finetune` output directory holds the Classifier (encoder + a head of C
outputs) and the experiment.yaml it was trained from; `task.name` there names
the task (mbert_lib.finetune.tasks), hence the label of each output and
whether the one output of a regression (STS-B) is a score. Every export of a
classifier (Hugging Face, SavedModel, TFLite metadata) writes these labels.

    labels = classifier_labels("runs/laptop/finetune/pkt/seed0-...", num_classes=2)
    labels.names        ("negative", "positive")     id -> label; () for a regression
    labels.pair         False                        one segment (True: text_a + text_b)
    labels.seq_length   64                           the length it was fine-tuned at
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from mbert_lib.experiment import load_experiment
from mbert_lib.experiment.finetune import FinetuneExperiment
from mbert_lib.finetune.tasks import get_task
from mbert_lib.train.run_record import EXPERIMENT_FILE


@dataclasses.dataclass(frozen=True)
class ClassifierLabels:
    """The outputs of a classifier: label names (id order), pair input, fine-tuning length."""

    task: str | None
    names: tuple[str, ...]
    pair: bool = False
    seq_length: int | None = None

    @property
    def regression(self) -> bool:
        return not self.names

    @property
    def num_outputs(self) -> int:
        return len(self.names) or 1


def _model_dir(path: str | os.PathLike) -> Path:
    path = Path(path)
    return path if path.is_dir() else path.parent


def classifier_labels(path: str | os.PathLike, num_classes: int) -> ClassifierLabels:
    """The labels of the classifier at `path` (a model directory or a prefix in one) whose
    head has `num_classes` outputs.

    From its experiment.yaml's task; without one, LABEL_0 ... LABEL_{C-1} (a head of one
    output: a regression score). Raises ValueError, naming the directory, when the head's
    size does not match the task's classes.
    """

    directory = _model_dir(path)
    experiment_file = directory / EXPERIMENT_FILE
    if not experiment_file.is_file():
        names = () if num_classes == 1 else tuple(f"LABEL_{i}" for i in range(num_classes))
        return ClassifierLabels(None, names)

    experiment = load_experiment(experiment_file, cls=FinetuneExperiment)
    task = get_task(experiment.task.name)
    if task.num_classes != num_classes:
        classes = ", ".join(task.label_names) or "a regression score"
        raise ValueError(
            f"{directory}: the classifier's head has {num_classes} output(s), but its "
            f"{experiment_file.name} names task {task.name!r}, which has {task.num_classes} "
            f"({classes}): is this the directory the task was fine-tuned into?"
        )
    return ClassifierLabels(
        task.name, task.label_names, task.sentence_pair, experiment.task.seq_length
    )
