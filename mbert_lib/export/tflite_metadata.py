"""TFLite metadata for a fine-tuned classifier: what the Task Library's BertNLClassifier reads.

A .tflite file is weights and a graph; a client that is handed only the file
also needs the tokenizer's vocabulary, which input is which, and the name of
each class. TFLite metadata packs them into the file: the three inputs named,
vocab.txt as the BertTokenizer's vocabulary, labels.txt for the one output,
which is then softmax(logits), the probabilities (`export_tflite(...,
probabilities=True)`). The Task Library's `BertNLClassifier.create_from_file`
then classifies raw text with it (tests/test_export_tflite_metadata.py; MediaPipe's
TextClassifier reads the same metadata format, untested here).

The metadata is written by tflite-support's own writer. tflite-support pins
protobuf < 4, TensorFlow 2.21 needs protobuf >= 6.31: the two cannot share one
environment, so the writer (`tflite_support_writer.py`, which imports nothing
but tflite-support) runs in a Python of its own:

    python3 -m venv .venv-tflite-support
    .venv-tflite-support/bin/pip install -r requirements-tflite-support.txt

`support_python()` finds that venv at the repository root (or takes a path).

What BertNLClassifier cannot take is refused before anything is converted: a
regression head (no labels), a sentence-pair task (it classifies one text) and
an open input shape (it pads every text to the model's fixed length T). One
difference remains (ACCENTS_NOTE): its tokenizer lower-cases but keeps accents.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from mbert_lib import atomic
from mbert_lib.runtime import REPO_ROOT

SUPPORT_VENV = REPO_ROOT / ".venv-tflite-support"
WRITER = Path(__file__).with_name("tflite_support_writer.py")
ACCENTS_NOTE = (
    "the Task Library's BertTokenizer lower-cases text but keeps its accents, "
    "where this model's uncased tokenizer strips them ('café' -> 'cafe'): "
    "accented words reach BertNLClassifier as other tokens; strip accents "
    "(NFD, drop combining marks) before classifying"
)
SET_UP = (
    "python3 -m venv .venv-tflite-support && .venv-tflite-support/bin/pip install "
    "-r requirements-tflite-support.txt"
)


def support_python(python: str | os.PathLike | None = None) -> str:
    """The Python that has tflite-support: `python`, else the repository's
    .venv-tflite-support; FileNotFoundError saying how to make one."""
    path = Path(python) if python else SUPPORT_VENV / "bin" / "python"
    if not path.is_file():
        where = f"{path} does not exist" if python else f"no {SUPPORT_VENV.name} venv"
        raise FileNotFoundError(
            f"TFLite metadata is written by tflite-support, which cannot be installed beside "
            f"TensorFlow (it pins protobuf < 4), and {where}. Make its venv at the repository "
            f"root: {SET_UP} (or pass --metadata_python)"
        )
    return str(path)


def check_metadata_target(labels, dynamic_shape: bool) -> None:
    """ValueError unless BertNLClassifier can run the classifier (see the module docstring).
    `labels`: its mbert_lib.export.classifier_labels.ClassifierLabels."""
    what = f"task {labels.task!r}" if labels.task else "this classifier"
    if labels.regression:
        raise ValueError(
            f"{what} is a regression (one score, no labels): BertNLClassifier "
            "classifies into labels; export it without --metadata"
        )
    if labels.pair:
        raise ValueError(
            f"{what} reads sentence pairs: BertNLClassifier classifies one text; "
            "export it without --metadata"
        )
    if dynamic_shape:
        raise ValueError(
            "--metadata needs a fixed input shape: BertNLClassifier pads every "
            "text to the model's length T (drop --dynamic_shape)"
        )


def write_metadata(
    tflite_path: str | os.PathLike,
    out_path: str | os.PathLike,
    vocab_file: str | os.PathLike,
    label_names: tuple[str, ...],
    name: str,
    description: str,
    python: str | os.PathLike | None = None,
) -> None:
    """Writes `out_path` (atomically): the classifier at `tflite_path` with BertNLClassifier
    metadata. Its one output must be the probabilities over `label_names` (in id order)."""
    with tempfile.TemporaryDirectory(prefix="mbert_metadata_") as tmp:
        labels = Path(tmp) / "labels.txt"
        labels.write_text("".join(f"{label}\n" for label in label_names), encoding="utf-8")
        vocab = Path(tmp) / "vocab.txt"  # the name the file carries inside
        vocab.write_bytes(Path(vocab_file).read_bytes())
        with atomic.atomic_path(out_path) as out:
            done = subprocess.run(
                [
                    support_python(python),
                    "-I",
                    str(WRITER),
                    "--model",
                    os.fspath(tflite_path),
                    "--vocab",
                    str(vocab),
                    "--labels",
                    str(labels),
                    "--name",
                    name,
                    "--description",
                    description,
                    "--out",
                    str(out),
                ],
                capture_output=True,
                text=True,
            )
            if done.returncode:
                last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
                hint = (
                    "; tflite-support's compiled modules need the system library libusb-1.0 "
                    "(Debian/Ubuntu: apt-get install libusb-1.0-0)"
                    if "libusb" in last
                    else ""
                )
                raise ValueError(
                    f"tflite-support's metadata writer failed on {tflite_path}: {last}{hint}"
                )
