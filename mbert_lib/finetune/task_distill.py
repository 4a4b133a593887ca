"""Output distillation: a fine-tuned teacher's outputs as labels for the sentences without one.

Hinton, Vinyals & Dean (2015) train a small model on a large model's *soft* outputs: the
probabilities it gives every class, softened by a temperature τ,

    q_c(τ) = exp(z_c / τ) / Σ_k exp(z_k / τ)          z: the teacher's logits, [C]

so that the student also learns which wrong classes the teacher finds plausible (the
"dark knowledge" a one-hot label lacks). TinyBERT's and DistilBERT's task stage do this
on a task's training text. Here a label budget of N examples keeps its labels; every
other training sentence becomes part of the *transfer set* and carries the teacher's
output instead. With p(τ) = softmax(s / τ) the student's softened distribution, one loss
covers both kinds of example b of a batch of B:

    L = (1/B) Σ_b τ_b² · H(q_b, p_b(τ_b)),     H(q, p) = −Σ_c q_c log p_c

    labeled example:        q_b = one-hot(y_b),         τ_b = 1   (plain cross-entropy)
    transfer, soft targets: q_b = q(τ) of the teacher,  τ_b = τ   (τ² keeps the gradient's
                                                                  size as τ grows, Hinton §2)
    transfer, hard targets: q_b = one-hot(argmax z),    τ_b = 1   (pseudo-labels: the
                                                                  teacher's answers without
                                                                  its doubts)

H(q, p) is KL(q ‖ p) plus the entropy of q, which does not depend on the student: the
same gradient. The "hard" row separates the two things the transfer set brings: more
sentences with the teacher's answers (hard and soft both) and the teacher's doubts
(soft only).

The teacher's logits over the task's whole training split are written once
(`write_teacher_logits`, beside a JSON naming the task, its size and the tokenizer)
and read back with every check (`read_teacher_logits`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from mbert_lib import atomic


def teacher_targets(
    logits: np.ndarray, temperature: float, kind: str = "soft"
) -> tuple[np.ndarray, np.ndarray]:
    """(q [n, C] float32, τ_b [n] float32) for transfer examples (see the module docstring)."""
    if not temperature > 0 or not np.isfinite(temperature):
        raise ValueError(f"distill.temperature must be > 0, got {temperature!r}")
    z = np.asarray(logits, np.float64)
    n, classes = z.shape
    if kind == "hard":
        q = np.eye(classes, dtype=np.float32)[np.argmax(z, axis=-1)]
        return q, np.ones(n, np.float32)
    if kind != "soft":
        raise ValueError(f"distill.targets must be 'soft' or 'hard', got {kind!r}")
    z = z / temperature
    q = np.exp(z - z.max(axis=-1, keepdims=True))
    return (q / q.sum(axis=-1, keepdims=True)).astype(np.float32), np.full(
        n, temperature, np.float32
    )


def sidecar(path: str | os.PathLike) -> Path:
    return Path(path).with_suffix(".json")


def write_teacher_logits(
    path: str | os.PathLike, logits: np.ndarray, task: str, tokenizer_sha256: str, about: dict
) -> None:
    """Saves a teacher's logits over a task's training split, and what they are."""
    logits = np.asarray(logits, np.float32)
    with atomic.atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            np.save(f, logits)
    info = {
        "task": task,
        "examples": int(logits.shape[0]),
        "classes": int(logits.shape[1]),
        "tokenizer_sha256": tokenizer_sha256,
        **about,
    }
    atomic.write_text(sidecar(path), json.dumps(info, indent=2) + "\n")


def read_teacher_logits(
    path: str | os.PathLike, task: str, examples: int, classes: int, tokenizer_sha256: str
) -> np.ndarray:
    """The logits [examples, classes] at `path`, refused (ValueError naming the file and
    what was expected) when they are of another task, size or tokenizer."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"distill.teacher_logits: {path} does not exist")
    try:
        logits = np.load(path, allow_pickle=False)
        info = json.loads(sidecar(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(
            f"distill.teacher_logits: {sidecar(path)} is missing (it says which task and "
            "tokenizer the logits belong to)"
        ) from None
    except (ValueError, OSError, json.JSONDecodeError) as e:
        raise ValueError(f"distill.teacher_logits: {path} is not readable ({e})") from None
    expected = {"task": task, "examples": examples, "classes": classes}
    found = {k: info.get(k) for k in expected}
    if found != expected or logits.shape != (examples, classes):
        raise ValueError(
            f"distill.teacher_logits: {path} holds logits of shape {logits.shape} for {found}; "
            f"expected [{examples}, {classes}] for {expected}: every training example of the "
            "task, in file order"
        )
    if info.get("tokenizer_sha256") != tokenizer_sha256:
        raise ValueError(
            f"distill.teacher_logits: {path} was computed on text encoded with another "
            "tokenizer than this run's"
        )
    if not np.all(np.isfinite(logits)):
        raise ValueError(f"distill.teacher_logits: {path} holds NaN or infinite values")
    return logits.astype(np.float32)
