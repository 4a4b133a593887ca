"""Accuracy of every exported precision beside the Keras model (paper Table 6).

Quantization must be measured, not assumed: users of other MobileBERT
exports saw SST-2 accuracy fall from ~90% to ~49% after conversion
(tensorflow/tensorflow#44306). `evaluate_precisions` exports a classifier at
each precision, runs a labeled set through the LiteRT interpreter and
reports, per precision, the accuracy next to the Keras model's and the
largest logit difference from Keras.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np

from mbert_lib.export import tflite
from mbert_lib.export.interpreter import TFLiteModel
from mbert_lib.export.representative import check_features
from mbert_lib.models import INPUT_NAMES


def keras_logits(model, features: Mapping[str, np.ndarray], batch_size: int = 32) -> np.ndarray:
    """Logits [n, C] of a Keras Classifier in inference mode."""
    n = check_features(features)
    parts = []
    for start in range(0, n, batch_size):
        batch = {name: features[name][start : start + batch_size] for name in INPUT_NAMES}
        parts.append(model(batch, training=False)["logits"].numpy())
    return np.concatenate(parts)


def accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of argmax(logits) == labels."""
    labels = np.asarray(labels)
    if logits.shape[0] != labels.shape[0]:
        raise ValueError(f"{logits.shape[0]} predictions for {labels.shape[0]} labels")
    return float(np.mean(np.argmax(logits, axis=-1) == labels))


def evaluate_precisions(
    model,
    features: Mapping[str, np.ndarray],
    labels: np.ndarray,
    int8: tflite.Int8Options,
    workdir: str | os.PathLike,
    precisions: Sequence[str] = tflite.PRECISIONS,
    num_threads: int = 2,
    name: str = "model",
) -> list[dict]:
    """One record per precision: accuracy through the interpreter vs Keras.

    model: a Classifier, e.g. `mbert_lib.checkpoints.load_classifier(path)`.
    features / labels: the labeled evaluation set ([n, T] arrays, [n] ints).
    int8: the int8 precision's calibration set (`representative.representative_dataset`
    of training sentences, not of the evaluation set) and its attention mask
    (`tflite.Int8Options`; mask_penalty None exports int8 with the model's own -1e9
    mask). The .tflite files are written to `workdir/{name}_{precision}.tflite`. A
    precision the converter cannot produce gets a record with `error` set (naming the
    blocking ops) and no accuracy, so one failure does not hide the other rows.

    Record fields: precision, accuracy, keras_accuracy, max_abs_logit_diff,
    agreement (fraction of predictions equal to Keras'), size_bytes, path, error.
    """
    n = check_features(features)
    seq_length = features[INPUT_NAMES[0]].shape[1]
    reference = keras_logits(model, features)  # [n, C]
    keras_acc = accuracy(reference, labels)
    records = []
    for precision in precisions:
        path = os.path.join(os.fspath(workdir), f"{name}_{precision}.tflite")
        record = {
            "precision": precision,
            "num_examples": n,
            "keras_accuracy": keras_acc,
            "accuracy": None,
            "max_abs_logit_diff": None,
            "agreement": None,
            "size_bytes": None,
            "path": path,
            "error": None,
        }
        try:
            record["size_bytes"] = tflite.export_tflite(
                model, path, precision, seq_length, int8=int8
            )
        except tflite.UnsupportedPrecisionError as e:
            record["error"] = str(e)
            records.append(record)
            continue
        logits = TFLiteModel(path, num_threads).predict(features)["logits"]  # [n, C]
        record.update(
            accuracy=accuracy(logits, labels),
            max_abs_logit_diff=float(np.max(np.abs(logits - reference))),
            agreement=float(np.mean(np.argmax(logits, -1) == np.argmax(reference, -1))),
        )
        records.append(record)
    return records


def format_table(records: Sequence[dict]) -> str:
    """A plain-text table of `evaluate_precisions` records."""
    lines = [
        f"{'precision':<14}{'size MB':>9}{'accuracy':>10}{'keras':>8}"
        f"{'max|Δlogit|':>13}{'agree':>7}"
    ]
    for r in records:
        if r["error"]:
            lines.append(f"{r['precision']:<14}  not exported: {r['error'][:120]}")
            continue
        lines.append(
            f"{r['precision']:<14}{r['size_bytes'] / 1e6:>9.2f}{r['accuracy']:>10.4f}"
            f"{r['keras_accuracy']:>8.4f}{r['max_abs_logit_diff']:>13.2e}"
            f"{r['agreement']:>7.3f}"
        )
    return "\n".join(lines)
