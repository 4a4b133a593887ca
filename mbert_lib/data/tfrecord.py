"""Pre-training examples on disk: TFRecord files plus a manifest, as a cache.

An examples directory holds
    train.tfrecord, eval.tfrecord   one `tf.train.Example` per example, the
                                    contract's feature names, int64 / float lists
    manifest.json                   the parameters (the cache key) and counts
Files are written to a temporary name and renamed; the manifest is written
last and removed first when rebuilding, so a directory with a manifest is
always complete. `build_examples_cache` reuses a directory whose manifest has
the same key and rebuilds it otherwise.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import tensorflow as tf

from mbert_lib import atomic
from mbert_lib.data.errors import DataError
from mbert_lib.data.examples import FEATURES

MANIFEST = "manifest.json"
SPLIT_FILES = {"train": "train.tfrecord", "eval": "eval.tfrecord"}
FORMAT_VERSION = 2  # bump when the files or the manifest change


def write_tfrecord(path: str | os.PathLike, examples: dict[str, np.ndarray]) -> int:
    """Writes the examples (arrays of the contract) to `path` atomically; returns the count."""
    n = len(examples["next_sentence_labels"])
    with atomic.atomic_path(path) as tmp:
        with tf.io.TFRecordWriter(tmp) as writer:
            for i in range(n):
                feature = {}
                for name, dtype in FEATURES.items():
                    values = np.atleast_1d(examples[name][i])
                    if dtype == np.float32:
                        feature[name] = tf.train.Feature(
                            float_list=tf.train.FloatList(value=values.tolist())
                        )
                    else:
                        feature[name] = tf.train.Feature(
                            int64_list=tf.train.Int64List(value=values.tolist())
                        )
                # deterministic: the feature map in key order; otherwise its order, and
                # so the file's bytes, change from one process to the next
                writer.write(
                    tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(
                        deterministic=True
                    )
                )
    return n


def feature_spec(seq_length: int, max_predictions_per_seq: int) -> dict:
    """`tf.io.parse_example` spec of one record: [T], [P] or scalar features."""
    spec = {}
    for name, dtype in FEATURES.items():
        shape = (
            []
            if name == "next_sentence_labels"
            else [max_predictions_per_seq]
            if name.startswith("masked_lm")
            else [seq_length]
        )
        spec[name] = tf.io.FixedLenFeature(shape, tf.float32 if dtype == np.float32 else tf.int64)
    return spec


def parse_batch(serialized: tf.Tensor, seq_length: int, max_predictions_per_seq: int) -> dict:
    """[B] serialized records -> the contract's tensors (int64 cast to int32)."""
    parsed = tf.io.parse_example(serialized, feature_spec(seq_length, max_predictions_per_seq))
    return {
        name: tf.cast(value, tf.int32) if value.dtype == tf.int64 else value
        for name, value in parsed.items()
    }


def read_tfrecord(
    path: str | os.PathLike, seq_length: int, max_predictions_per_seq: int
) -> dict[str, np.ndarray]:
    """All examples of a file as numpy arrays (for inspection and tests)."""
    dataset = (
        tf.data.TFRecordDataset(str(path))
        .batch(4096)
        .map(lambda s: parse_batch(s, seq_length, max_predictions_per_seq))
    )
    parts = list(dataset.as_numpy_iterator())
    return {name: np.concatenate([p[name] for p in parts]) for name in FEATURES}


def read_manifest(examples_dir: str | os.PathLike) -> dict:
    """The manifest of a complete examples directory (an error names what is missing)."""
    path = Path(examples_dir) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} does not exist: run the prepare step "
            "(data_scripts/prepare_pretraining_data.py) first"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DataError(f"{path}: not valid JSON ({e})") from e
    for key in ("key", "counts", "files"):
        if key not in manifest:
            raise DataError(f"{path}: missing field {key!r}")
    return manifest


def build_examples_cache(
    examples_dir: str | os.PathLike, key: dict, make_examples: Callable[[], tuple[dict, dict]]
) -> tuple[dict, bool]:
    """Reuses `examples_dir` if its manifest has this `key`, else (re)builds it.

    key: JSON-serializable parameters that determine the examples.
    make_examples: () -> ({"train": arrays, "eval": arrays}, extra), called
        only on a miss; `extra` holds more JSON fields for the manifest.
    Returns (manifest, reused).
    """
    examples_dir = Path(examples_dir)
    key = dict(key, format_version=FORMAT_VERSION)
    manifest_path = examples_dir / MANIFEST
    if manifest_path.is_file():
        try:
            manifest = read_manifest(examples_dir)
        except DataError:
            manifest = None
        if (
            manifest is not None
            and manifest["key"] == key
            and all((examples_dir / f).is_file() for f in manifest["files"].values())
        ):
            return manifest, True
        manifest_path.unlink()
    splits, extra = make_examples()
    counts = {
        split: write_tfrecord(examples_dir / SPLIT_FILES[split], arrays)
        for split, arrays in splits.items()
    }
    manifest = {
        "key": key,
        "counts": counts,
        "files": {split: SPLIT_FILES[split] for split in splits},
        **extra,
    }
    atomic.write_text(manifest_path, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest, False
