"""Best-checkpoint keeping: every dev evaluation is recorded; the best model is kept.

    MODEL_DIR/history.json   one entry per evaluation: step, epoch, dev metrics, seconds
    MODEL_DIR/best/          a model directory (mbert_lib.checkpoints) of the best one so far

"Best" is the highest value of the task's selection metric (all of GLUE's
metrics grow with quality); a tie keeps the earlier model. The model is
written before its history entry, both atomically: after a crash the
history never names a best model that is not on disk, and a resumed run
re-evaluates the epoch whose entry is missing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from mbert_lib import atomic

HISTORY_FILE = "history.json"
BEST_DIR = "best"


class BestKeeper:
    """The evaluation history of a run and its best model directory."""

    def __init__(
        self, model_dir: str | os.PathLike, metric: str, save_model: Callable[[str], None]
    ):
        self.model_dir = os.fspath(model_dir)
        self.metric = metric
        self.save_model = save_model  # save_model(directory) writes a whole model directory
        self.history: list[dict] = []
        path = os.path.join(self.model_dir, HISTORY_FILE)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                try:
                    self.history = json.load(f)
                except json.JSONDecodeError as e:
                    raise ValueError(
                        f"{path}: not valid JSON ({e}); delete the run's model_dir to start over"
                    ) from e

    @property
    def best_dir(self) -> str:
        return os.path.join(self.model_dir, BEST_DIR)

    @property
    def best(self) -> dict | None:
        """The history entry of the best evaluation (the earliest among equals), or None."""
        best = None
        for entry in self.history:
            if best is None or entry["metrics"][self.metric] > best["metrics"][self.metric]:
                best = entry
        return best

    def evaluated(self, step: int) -> bool:
        return any(entry["step"] == step for entry in self.history)

    def record(self, step: int, metrics: dict, **info) -> bool:
        """Adds an evaluation; saves the model to best/ first if it is the new best."""
        if self.metric not in metrics:
            raise ValueError(f"the evaluation has no {self.metric!r}; got {sorted(metrics)}")
        best = self.best
        improved = best is None or metrics[self.metric] > best["metrics"][self.metric]
        if improved:
            self.save_model(self.best_dir)
        self.history.append({"step": int(step), "metrics": dict(metrics), **info})
        atomic.write_text(
            os.path.join(self.model_dir, HISTORY_FILE), json.dumps(self.history, indent=2) + "\n"
        )
        return improved
