"""Dev-set evaluation of a Classifier: logits for every example, then the task's metrics."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import tensorflow as tf

from mbert_lib.finetune.features import EncodedExamples
from mbert_lib.finetune.tasks import Task
from mbert_lib.models import INPUT_NAMES


def make_predictor(
    model, seq_length: int, batch_size: int = 128
) -> Callable[[Mapping[str, np.ndarray]], np.ndarray]:
    """predict(features) -> logits [n, C] (float32 numpy), in inference mode (no dropout).

    One traced function for every batch size (the last batch is smaller).
    """
    spec = {name: tf.TensorSpec([None, seq_length], tf.int32) for name in INPUT_NAMES}

    @tf.function(input_signature=[spec])
    def logits_of(batch):
        return tf.cast(model(batch, training=False)["logits"], tf.float32)

    def predict(features: Mapping[str, np.ndarray]) -> np.ndarray:
        n = len(features[INPUT_NAMES[0]])
        parts = [
            logits_of({k: features[k][i : i + batch_size] for k in INPUT_NAMES}).numpy()
            for i in range(0, n, batch_size)
        ]
        return np.concatenate(parts) if parts else np.zeros((0, 1), np.float32)

    return predict


def probabilities(logits: np.ndarray) -> np.ndarray:
    """softmax over the last axis, [n, C] (numerically stable)."""
    z = np.asarray(logits, np.float64)
    z = np.exp(z - z.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def task_loss(task: Task, logits: np.ndarray, labels: np.ndarray) -> float:
    """Mean cross-entropy (or squared error) over the examples, as in training."""
    if task.is_regression:
        return float(np.mean((logits[:, 0] - labels) ** 2))
    p = probabilities(logits)[np.arange(len(labels)), labels]
    return float(-np.mean(np.log(np.maximum(p, 1e-12))))


def evaluate(task: Task, predict: Callable, data: EncodedExamples) -> dict[str, float]:
    """{metric: value, "loss": ..., "examples": n} of the model behind `predict` on `data`."""
    logits = predict(data.features)
    return {
        **task.score(logits, data.labels),
        "loss": task_loss(task, logits, data.labels),
        "examples": float(len(data)),
    }
