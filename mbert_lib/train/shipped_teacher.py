"""A trained teacher that ships with the project: packed small, checked, installed.

The IB-BERT teacher was never released, and a teacher worth distilling takes hours of CPU
to pre-train. The project ships one (`teachers/laptop_ibbert/`, made by `python -m
mbert_lib teacher build`), in a directory of plain files:

    bert_config.json                  the MobileBertConfig (released field names)
    model.safetensors                 every weight of the pre-trainer's checkpoint in float16,
                                      keyed by its checkpoint name; the checkpoint's object
                                      graph in the metadata, so that it installs exactly
    vocab.txt, tokenizer_config.json  the teacher's own WordPiece vocabulary: a run that uses
                                      the teacher tokenizes with it
    teacher.json                      the record: what each file is (bytes, sha256), how the
                                      teacher was trained (command, settings, data fingerprints,
                                      the documents it trained on, hardware, wall time) and its
                                      held-out MLM curve

`install_teacher` checks every file against the record (a missing, truncated or altered
file is refused, naming it), writes the float32 checkpoint into an ordinary model
directory (`mbert_lib.checkpoints`) and loads it back through the library's mismatch
check, so the rest of the pipeline reads the shipped teacher like one it trained.
Float16 keeps about 3 significant digits; the record holds the held-out metrics of both
precisions, measured by the build command.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import tensorflow as tf
from safetensors import SafetensorError, safe_open
from safetensors.numpy import load_file, save_file

from mbert_lib import atomic
from mbert_lib.checkpoints import CONFIG_FILE, WEIGHTS_PREFIX, load_pretrainer
from mbert_lib.data.provenance import sha256_file
from mbert_lib.data.text import Document, document_sha256
from mbert_lib.data.tokenizer import load_tokenizer
from mbert_lib.runtime import REPO_ROOT

SHIPPED_TEACHER_DIR = REPO_ROOT / "teachers" / "laptop_ibbert"
RECORD_FILE = "teacher.json"
WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILES = ("vocab.txt", "tokenizer_config.json")
INSTALLED_RECORD = "shipped_teacher.json"  # the record, copied into the installed model dir
FORMAT = 1
_OBJECT_GRAPH = "_CHECKPOINTABLE_OBJECT_GRAPH"
DOCUMENT_HASH_CHARS = 16  # of each training document's sha256, in the record


class ShippedTeacherError(ValueError):
    """A shipped teacher that is missing, damaged, or does not fit the run."""


def document_ids(documents: Iterable[Document]) -> list[str]:
    """Short content hashes of documents, as the record lists the teacher's training set."""
    return [document_sha256(d)[:DOCUMENT_HASH_CHARS] for d in documents]


def pack_teacher(model_dir: str | os.PathLike, out_dir: str | os.PathLike, record: Mapping) -> dict:
    """Packs a trained pre-trainer's model directory into `out_dir` (replaced as a whole).

    model_dir: bert_config.json, model.ckpt.* and the tokenizer files (what `pretrain`
    exports). record: what to say about the teacher (training, data, metrics); the files'
    sizes and sha256 are added. Returns the record written.
    """
    model_dir = Path(model_dir)
    prefix = str(model_dir / WEIGHTS_PREFIX)
    reader = tf.train.load_checkpoint(prefix)
    weights, graph = {}, None
    for key in sorted(reader.get_variable_to_shape_map()):
        value = reader.get_tensor(key)
        if key == _OBJECT_GRAPH:
            graph = value
            continue
        if not np.issubdtype(value.dtype, np.floating):
            raise ShippedTeacherError(f"{prefix}: {key} is {value.dtype}, expected floating point")
        if np.max(np.abs(value), initial=0.0) >= np.finfo(np.float16).max:
            raise ShippedTeacherError(f"{prefix}: {key} does not fit float16 (|w| >= 65504)")
        weights[key] = value.astype(np.float16)
    if graph is None:
        raise ShippedTeacherError(f"{prefix}: no object graph: not an object-based checkpoint")
    with atomic.atomic_directory(out_dir, overwrite=True) as tmp:
        tmp = Path(tmp)
        save_file(
            weights,
            str(tmp / WEIGHTS_FILE),
            metadata={"format": str(FORMAT), "object_graph": base64.b64encode(graph).decode()},
        )
        for name in (CONFIG_FILE, *TOKENIZER_FILES):
            shutil.copyfile(model_dir / name, tmp / name)
        files = {
            name: {"bytes": (tmp / name).stat().st_size, "sha256": sha256_file(tmp / name)}
            for name in (CONFIG_FILE, WEIGHTS_FILE, *TOKENIZER_FILES)
        }
        tokenizer = load_tokenizer(tmp)
        written = {
            "format": FORMAT,
            **record,
            "tokenizer": {
                "sha256": tokenizer.sha256,
                "vocab_size": tokenizer.vocab_size,
                "do_lower_case": tokenizer.do_lower_case,
            },
            "files": files,
        }
        atomic.write_text(tmp / RECORD_FILE, json.dumps(written, indent=2) + "\n")
        for file in tmp.iterdir():
            file.chmod(0o644)
        tmp.chmod(0o755)
    return written


def read_teacher_record(shipped_dir: str | os.PathLike = SHIPPED_TEACHER_DIR) -> dict:
    """The record of a shipped teacher, after checking that each file it lists is there,
    whole and unchanged (size, then sha256). Raises ShippedTeacherError naming the file."""
    shipped_dir = Path(shipped_dir)
    path = shipped_dir / RECORD_FILE
    if not path.is_file():
        raise ShippedTeacherError(
            f"{path} does not exist: {shipped_dir} is not a shipped teacher (expected "
            f"{RECORD_FILE}, {WEIGHTS_FILE}, {CONFIG_FILE} and the vocabulary; "
            "`python -m mbert_lib teacher build` makes one)"
        )
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ShippedTeacherError(f"{path}: not valid JSON ({e}); the file is damaged") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise ShippedTeacherError(
            f"{path}: expected a teacher record of format {FORMAT}, got "
            f"{record.get('format') if isinstance(record, dict) else type(record).__name__!r}"
        )
    for name, expected in record.get("files", {}).items():
        file = shipped_dir / name
        if not file.is_file():
            raise ShippedTeacherError(f"{file} is missing (the teacher's record lists it)")
        size = file.stat().st_size
        if size != expected["bytes"]:
            raise ShippedTeacherError(
                f"{file}: {size:,} bytes, expected {expected['bytes']:,} (truncated or "
                "replaced; restore it with `git checkout -- teachers/`)"
            )
        if sha256_file(file) != expected["sha256"]:
            raise ShippedTeacherError(
                f"{file}: its sha256 differs from the record's {expected['sha256'][:16]}…: the "
                "file was altered; restore it with `git checkout -- teachers/`"
            )
    missing = [n for n in (CONFIG_FILE, WEIGHTS_FILE, *TOKENIZER_FILES) if n not in record["files"]]
    if missing:
        raise ShippedTeacherError(f"{path}: the record lists no {missing}")
    return record


def install_teacher(
    shipped_dir: str | os.PathLike, model_dir: str | os.PathLike, overwrite: bool = True
) -> dict:
    """Writes the shipped teacher as a model directory (float32 checkpoint, config,
    vocabulary, the record as shipped_teacher.json); returns the record. The directory is
    written whole or not at all, and read back through the checkpoint mismatch check."""
    shipped_dir = Path(shipped_dir)
    record = read_teacher_record(shipped_dir)
    weights_path = shipped_dir / WEIGHTS_FILE
    try:
        weights = load_file(str(weights_path))
        with safe_open(str(weights_path), framework="numpy") as f:
            metadata = f.metadata() or {}
    except (SafetensorError, OSError) as e:
        raise ShippedTeacherError(
            f"{weights_path}: not a readable safetensors file ({e})"
        ) from None
    if "object_graph" not in metadata:
        raise ShippedTeacherError(f"{weights_path}: no object graph in its metadata")
    names = sorted(weights)
    with atomic.atomic_directory(model_dir, overwrite=overwrite) as tmp:
        tmp = Path(tmp)
        tf.raw_ops.SaveV2(
            prefix=str(tmp / WEIGHTS_PREFIX),
            tensor_names=[*names, _OBJECT_GRAPH],
            shape_and_slices=[""] * (len(names) + 1),
            tensors=[
                *(tf.constant(weights[n].astype(np.float32)) for n in names),
                tf.constant(base64.b64decode(metadata["object_graph"])),
            ],
        )
        for name in (CONFIG_FILE, *TOKENIZER_FILES):
            shutil.copyfile(shipped_dir / name, tmp / name)
        atomic.write_text(tmp / INSTALLED_RECORD, json.dumps(record, indent=2) + "\n")
        load_pretrainer(tmp)  # the library's own check: every variable there, none extra
    return record


def tokenizer_id(vocab: str | os.PathLike) -> str:
    """What identifies a tokenizer: the sha256 of its token list and casing (a vocab.txt or
    a directory holding one, with tokenizer_config.json)."""
    return load_tokenizer(vocab).sha256


def check_vocabulary(record: Mapping, vocab: str | os.PathLike, what: str) -> None:
    """Refuses a run whose tokenizer is not the teacher's: its ids would mean other words.
    `what` names the run's tokenizer in the message."""
    tokenizer = load_tokenizer(vocab)
    expected = record["tokenizer"]
    if tokenizer.sha256 != expected["sha256"]:
        raise ShippedTeacherError(
            f"{what} ({tokenizer.vocab_size:,} tokens, lower case {tokenizer.do_lower_case}, "
            f"id {tokenizer.sha256[:12]}) is not the shipped teacher's ({expected['vocab_size']:,} "
            f"tokens, lower case {expected['do_lower_case']}, id {expected['sha256'][:12]}): token "
            "ids would mean other words. Tokenize with the teacher's vocab.txt, or train a "
            "teacher of your own (reproduce --teacher trained)"
        )


def heldout_overlap(record: Mapping, heldout: Iterable[Document]) -> int:
    """How many of a run's held-out documents the shipped teacher trained on (0 = clean)."""
    seen = set(record["data"]["train_document_ids"])
    return sum(1 for i in document_ids(heldout) if i in seen)
