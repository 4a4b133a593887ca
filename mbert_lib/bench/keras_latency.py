"""CPU latency of Keras encoders: the NoNorm x relu grid of paper Table 7.

The paper (section 3.3, Table 7) times MobileBERT on a Pixel 4 with
LayerNorm or NoNorm and gelu or relu, four models with the same 5.7B FLOPs.
Here the same four encoders are built from one base config, each forward is
wrapped in `tf.function` (graph mode, optionally XLA-compiled with
`jit_compile=True`) and all of them are timed round-robin by
`interleaved_timings`, so background load on a shared machine hits every
variant alike. Compare ratios within one run, never absolute numbers across
runs or machines.

Records (one dict per variant and jit mode, ready for `write_json`):
    model, normalization_type, hidden_act, num_hidden_layers, seq_length,
    batch, jit, median_ms, min_ms, max_ms, repeats
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence

import tensorflow as tf
import tf_keras

from mbert_lib.bench.timing import TimingPlan, interleaved_timings
from mbert_lib.config import NORMALIZATION_TYPES, MobileBertConfig
from mbert_lib.models import MobileBertEncoder, build_encoder

# Paper Table 7 order: (normalization_type, hidden_act).
NORM_ACT_GRID = (
    ("layer_norm", "gelu"),
    ("layer_norm", "relu"),
    ("no_norm", "gelu"),
    ("no_norm", "relu"),
)

# Plain graph mode: on the project's 2-core x86 machine XLA was not
# consistently faster for the mobilebert preset (faster for some of the four
# variants, slower for others, from run to run) and it compiles once per
# input shape. Notebook 01 times both in every run and prints which won.
DEFAULT_JIT_COMPILE = False
DEFAULT_TIMING = TimingPlan(repeats=20, warmup=3)  # norm_act_latency's


@dataclasses.dataclass
class LatencyVariant:
    """One encoder to time: its config, built model, fixed inputs and compiled forwards.

    `forwards[jit]` runs `encoder(inputs)["sequence_output"]` ([B, T, H]) as a
    `tf.function` with `jit_compile=jit` and returns it as a numpy array (so
    the call blocks until the result exists).
    """

    config: MobileBertConfig
    encoder: MobileBertEncoder
    inputs: dict[str, tf.Tensor]
    forwards: dict[bool, Callable[[], object]]


def random_inputs(
    vocab_size: int, batch_size: int, seq_length: int, seed: int = 0
) -> dict[str, tf.Tensor]:
    """Random token ids, a full mask and zero type ids, each int32 [B, T]."""
    if batch_size < 1 or seq_length < 1 or vocab_size < 1:
        raise ValueError(
            f"need vocab_size, batch_size, seq_length >= 1, got "
            f"{vocab_size}, {batch_size}, {seq_length}"
        )
    shape = [batch_size, seq_length]
    word_ids = tf.random.stateless_uniform(shape, [seed, 0], 0, vocab_size, tf.int32)
    return {
        "input_word_ids": word_ids,
        "input_mask": tf.ones(shape, tf.int32),
        "input_type_ids": tf.zeros(shape, tf.int32),
    }


class _SequenceOutput:
    """encoder(features)["sequence_output"]; a callable object, so that each
    `tf.function` wrapping one counts its own traces (a shared closure would
    make TF warn about retracing)."""

    def __init__(self, encoder):
        self.encoder = encoder

    def __call__(self, features):
        return self.encoder(features, training=False)["sequence_output"]  # [B, T, H]


def compiled_forward(
    encoder, inputs: Mapping[str, tf.Tensor], jit_compile: bool
) -> Callable[[], object]:
    """A no-argument callable: the encoder's sequence_output [B, T, H] as numpy, in graph mode."""
    forward = tf.function(_SequenceOutput(encoder), jit_compile=jit_compile)
    features = dict(inputs)
    return lambda: forward(features).numpy()


def norm_act_variants(
    base_config: MobileBertConfig,
    seq_length: int = 128,
    batch_size: int = 1,
    num_hidden_layers: int | None = None,
    jit_modes: Sequence[bool] = (DEFAULT_JIT_COMPILE,),
    grid: Iterable[tuple[str, str]] = NORM_ACT_GRID,
    seed: int = 0,
) -> dict[tuple[str, str], LatencyVariant]:
    """Builds one encoder per (normalization_type, hidden_act) of `grid` from `base_config`.

    All variants share the same inputs, and each is built right after
    `tf_keras.utils.set_random_seed(seed)` (which reseeds Python, numpy and
    TF), so their weights are identical and only the norm and activation
    differ. `num_hidden_layers` overrides the base config's depth (e.g. 2
    layers for a quick run).
    """
    if num_hidden_layers is not None:
        base_config = base_config.replace(num_hidden_layers=num_hidden_layers)
    if seq_length > base_config.max_position_embeddings:
        raise ValueError(
            f"seq_length = {seq_length} exceeds max_position_embeddings = "
            f"{base_config.max_position_embeddings}"
        )
    jit_modes = tuple(jit_modes)
    if not jit_modes or any(not isinstance(j, bool) for j in jit_modes):
        raise ValueError(f"jit_modes must be a non-empty sequence of booleans, got {jit_modes!r}")
    inputs = random_inputs(base_config.vocab_size, batch_size, seq_length, seed)
    variants = {}
    for norm, act in grid:
        if norm not in NORMALIZATION_TYPES:
            raise ValueError(
                f"grid: normalization_type must be one of {NORMALIZATION_TYPES}, got {norm!r}"
            )
        config = base_config.replace(normalization_type=norm, hidden_act=act)
        tf_keras.utils.set_random_seed(seed)
        encoder = build_encoder(config, seq_length)
        variants[(norm, act)] = LatencyVariant(
            config,
            encoder,
            inputs,
            {jit: compiled_forward(encoder, inputs, jit) for jit in jit_modes},
        )
    return variants


def time_variants(
    variants: Mapping[tuple[str, str], LatencyVariant],
    model: str,
    repeats: int = 20,
    warmup: int = 3,
) -> list[dict]:
    """Times every (variant, jit mode) round-robin; one record per pair, in grid order."""
    fns, keys = {}, {}
    for (norm, act), variant in variants.items():
        for jit, forward in variant.forwards.items():
            name = f"{norm}+{act}{' xla' if jit else ''}"
            fns[name], keys[name] = forward, (variant, jit)
    timings = interleaved_timings(fns, repeats=repeats, warmup=warmup)
    records = []
    for name, timing in timings.items():
        variant, jit = keys[name]
        config = variant.config
        batch, seq_length = variant.inputs["input_word_ids"].shape
        records.append(
            {
                "model": model,
                "normalization_type": config.normalization_type,
                "hidden_act": config.hidden_act,
                "num_hidden_layers": config.num_hidden_layers,
                "seq_length": int(seq_length),
                "batch": int(batch),
                "jit": jit,
                "median_ms": timing.median_ms,
                "min_ms": timing.min_ms,
                "max_ms": timing.max_ms,
                "repeats": timing.repeats,
            }
        )
    return records


def norm_act_latency(
    base_config: MobileBertConfig,
    model: str,
    seq_length: int = 128,
    batch_size: int = 1,
    num_hidden_layers: int | None = None,
    jit_modes: Sequence[bool] = (DEFAULT_JIT_COMPILE,),
    timing: TimingPlan = DEFAULT_TIMING,
    seed: int = 0,
) -> list[dict]:
    """Paper Table 7 on this CPU: builds the four encoders and times them interleaved
    (`timing`: each variant's warm-up and timed calls); the records of `time_variants`.

    `model` names the base config in the records (e.g. "mobilebert").
    """
    variants = norm_act_variants(
        base_config, seq_length, batch_size, num_hidden_layers, jit_modes, seed=seed
    )
    return time_variants(variants, model, timing.repeats, timing.warmup)


def op_latency(
    ops: Mapping[str, Callable[[tf.Tensor], tf.Tensor]],
    shape: Sequence[int],
    repeats: int = 20,
    warmup: int = 3,
    seed: int = 0,
) -> list[dict]:
    """Times element-wise ops (activations, norms) on one random float32 tensor of `shape`.

    Each op runs in its own `tf.function`; records: op, shape, elements,
    median_ms, min_ms, max_ms, repeats.
    """
    shape = [int(s) for s in shape]
    if not shape or min(shape) < 1:
        raise ValueError(f"shape must be non-empty with positive sizes, got {shape}")
    x = tf.random.stateless_normal(shape, [seed, 1])
    fns = {}
    for name, op in ops.items():
        graph_op = tf.function(op)
        fns[name] = (lambda f: lambda: f(x).numpy())(graph_op)
    timings = interleaved_timings(fns, repeats=repeats, warmup=warmup)
    elements = int(tf.size(x))
    return [
        {
            "op": name,
            "shape": shape,
            "elements": elements,
            "median_ms": t.median_ms,
            "min_ms": t.min_ms,
            "max_ms": t.max_ms,
            "repeats": t.repeats,
        }
        for name, t in timings.items()
    ]
