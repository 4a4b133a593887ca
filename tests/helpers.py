"""Test helpers: small configs, random inputs, random norm and bias weights.

Letters as in the library: B batch, T tokens, V vocab, P predictions.
"""

from __future__ import annotations

import contextlib
import gc
import json
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import mbert_lib  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TF is imported)
from mbert_lib.config import get_preset

SMALL_VOCAB = 97
SMALL_MAX_POSITIONS = 32


def small_config(preset: str, **changes):
    """A preset with a small vocabulary, 2 layers and 32 positions (plus `changes`)."""
    sizes = dict(
        vocab_size=SMALL_VOCAB, num_hidden_layers=2, max_position_embeddings=SMALL_MAX_POSITIONS
    )
    return get_preset(preset).replace(**{**sizes, **changes})


def random_inputs(
    config, batch: int = 2, seq: int = 9, pads=(0, 3), seed: int = 0, types: bool = True
) -> dict[str, np.ndarray]:
    """int32 [B, T] inputs; row b ends with pads[b] padding tokens (id 0, mask 0)."""
    rng = np.random.RandomState(seed)
    word_ids = rng.randint(1, config.vocab_size, size=(batch, seq)).astype(np.int32)
    mask = np.ones((batch, seq), np.int32)
    type_ids = np.zeros((batch, seq), np.int32)
    for b in range(batch):
        n = pads[b % len(pads)]
        if n:
            word_ids[b, seq - n :] = 0
            mask[b, seq - n :] = 0
        if types and config.type_vocab_size > 1:
            type_ids[b, (seq - n) // 2 : seq - n] = 1
    return {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": type_ids}


def randomize_affine_weights(model, seed: int = 1, scale: float = 0.2) -> None:
    """Gives every norm γ, β and every bias random values, so each one matters.

    Fresh models have γ = 1 and β = bias = 0, which would hide a swapped γ/β
    or a missing bias from any comparison.
    """
    rng = np.random.RandomState(seed)
    for w in model.weights:
        name = w.name.split("/")[-1].split(":")[0]
        if name == "gamma":
            w.assign(1.0 + scale * rng.standard_normal(w.shape).astype(np.float32))
        elif name in ("beta", "bias", "output_bias"):
            w.assign(scale * rng.standard_normal(w.shape).astype(np.float32))


def free_models() -> None:
    """Drops Keras' global state so big models can be garbage-collected."""
    tf_keras.backend.clear_session()
    gc.collect()


def as_numpy(x):
    return x.numpy() if isinstance(x, tf.Tensor) else np.asarray(x)


def randomize_kernels(model, seed: int = 2) -> None:
    """Variance-preserving random kernels (std 1/sqrt(fan_in)) and unit-variance tables.

    With initializer_range 0.02 every activation is small and every attention
    row nearly uniform, which a wrong mask or head split would hardly change.
    """
    rng = np.random.RandomState(seed)
    for w in model.weights:
        parts = w.name.split(":")[0].split("/")
        shape = tuple(w.shape)
        if parts[-1] in ("embeddings", "extra_output_weights"):  # token vectors
            std = 1.0
        elif parts[-1] == "kernel":
            # Dense [in, out]; per-head projection [D, N, d]; head merge [N, d, O].
            fan_in = shape[0] * shape[1] if parts[-2] == "attention_output" else shape[0]
            std = 1.0 / np.sqrt(fan_in)
        else:
            continue
        w.assign(std * rng.standard_normal(shape).astype(np.float32))


@contextlib.contextmanager
def zero_initializers():
    """Creates every truncated-normal weight as zeros while active.

    For tests that only count weights: drawing 294M truncated-normal values
    for IB-BERT_LARGE takes ~10 s on 2 cores, zeros take a fraction of that.
    """

    def zeros(self, shape, dtype=None, **kwargs):
        return tf.zeros(shape, dtype or tf.float32)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tf_keras.initializers.TruncatedNormal, "__call__", zeros)
        yield


def strict_json_loads(text: str):
    """json.loads that refuses NaN / Infinity, as jq or JavaScript would."""

    def refuse(constant):
        raise ValueError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)


@contextlib.contextmanager
def lock_held_by_another_process(directory):
    """While active, another process holds mbert_lib.run_lock on `directory`; yields its pid.
    The lock goes with the process when it is killed on exit."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from mbert_lib.run_lock import run_lock\n"
            "with run_lock(sys.argv[1]):\n    print('held', flush=True); time.sleep(120)",
            str(directory),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder.pid
    finally:
        holder.kill()
        holder.wait()
