"""Inputs for full-integer (int8) calibration and for evaluating exported models.

Examples are "features": a dict of int32 arrays [n, T] keyed by the input
names (`input_word_ids`, `input_mask`, `input_type_ids`), the format the
tokenizer pipeline produces and the Keras models read. Calibration should
use real sentences tokenized like the deployment inputs (padding included:
the ranges the converter records are those it sees); `random_features`
exists for tests and for latency benchmarks, where values do not matter.
On disk they are an .npz (`np.savez`), read back by `load_features`.
"""

from __future__ import annotations

import os
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping

import numpy as np

from mbert_lib.models import INPUT_NAMES


def check_features(features: Mapping[str, np.ndarray], seq_length: int | None = None) -> int:
    """Validates features; returns the number of examples n."""
    missing = [name for name in INPUT_NAMES if name not in features]
    if missing:
        raise ValueError(f"features lack {missing}; expected keys {list(INPUT_NAMES)}")
    shapes = {name: np.shape(features[name]) for name in INPUT_NAMES}
    first = shapes[INPUT_NAMES[0]]
    if len(first) != 2 or any(s != first for s in shapes.values()):
        raise ValueError(f"features must all be [n, seq_length] arrays of one shape, got {shapes}")
    if seq_length is not None and first[1] != seq_length:
        raise ValueError(f"features have seq_length {first[1]}, the model expects {seq_length}")
    return int(first[0])


def load_features(path: str | os.PathLike, seq_length: int | None = None) -> dict[str, np.ndarray]:
    """The features of an .npz file (one [n, seq_length] integer array per input name, as
    `np.savez` writes them); ValueError naming the file and the format otherwise."""
    expected = (
        f"expected an .npz of {', '.join(INPUT_NAMES)}, each an [n, seq_length] integer array "
        "(np.savez(path, input_word_ids=..., input_mask=..., input_type_ids=...))"
    )
    try:
        loaded = np.load(path, allow_pickle=False)
        if isinstance(loaded, np.lib.npyio.NpzFile):
            with loaded as data:
                features = {name: data[name] for name in data.files}
    except FileNotFoundError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as e:
        raise ValueError(f"{path}: not a readable .npz ({e}); {expected}") from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise ValueError(f"{path}: a single array (a .npy file); {expected}")
    bad = [n for n in INPUT_NAMES if n in features and features[n].dtype.kind not in "iu"]
    if bad:
        raise ValueError(f"{path}: {bad} are not integer arrays; {expected}")
    try:
        check_features(features, seq_length)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    return features


def random_features(
    n: int,
    seq_length: int,
    vocab_size: int,
    type_vocab_size: int = 2,
    pad_fraction: float = 0.25,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """n random examples: [CLS]-like id 1 first, random ids, a padded tail, two segments.

    Each example keeps a random number of real tokens in
    [(1 - pad_fraction)·T, T]; padding has id 0 and mask 0.
    """
    rng = np.random.default_rng(seed)
    ids = rng.integers(2, vocab_size, size=(n, seq_length), dtype=np.int32)  # [n, T]
    ids[:, 0] = 1
    lengths = rng.integers(max(1, int(seq_length * (1 - pad_fraction))), seq_length + 1, size=n)
    mask = (np.arange(seq_length)[None, :] < lengths[:, None]).astype(np.int32)
    split = lengths // 2
    types = ((np.arange(seq_length)[None, :] >= split[:, None]) & (mask == 1)).astype(np.int32)
    types = np.minimum(types, type_vocab_size - 1)
    return {"input_word_ids": ids * mask, "input_mask": mask, "input_type_ids": types}


def representative_dataset(
    features: Mapping[str, np.ndarray], limit: int = 200, batch_size: int = 1
) -> Callable[[], Iterator[dict]]:
    """A converter `representative_dataset`: yields up to `limit` examples.

    Each item is a dict of [batch_size, T] int32 arrays keyed by input name,
    the signature of `tflite.serving_function`.
    """
    n = check_features(features)
    if n < batch_size:
        raise ValueError(f"need at least batch_size = {batch_size} examples, got {n}")

    def generate():
        for start in range(0, min(n, limit) - batch_size + 1, batch_size):
            yield {
                name: np.asarray(features[name][start : start + batch_size], np.int32)
                for name in INPUT_NAMES
            }

    return generate
