"""mbert_lib.bench.keras_latency: the Table 7 grid builds, times and computes the right thing.

No timing assertions (machines are noisy): only that the records are well
formed and that what gets timed is the intended encoder, checked against the
independent numpy forward.
"""

import json

import numpy as np
import pytest
import tf_keras

from mbert_lib import get_preset
from mbert_lib.bench import TimingPlan, write_json
from mbert_lib.bench.keras_latency import (
    NORM_ACT_GRID,
    norm_act_latency,
    norm_act_variants,
    op_latency,
    random_inputs,
)
from mbert_lib.layers import NoNorm
from tests.keras_to_tf1 import tf1_arrays_from_encoder
from tests.numpy_reference import encoder_forward

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

TINY = get_preset("tiny_student").replace(vocab_size=97, num_hidden_layers=2)
RECORD_KEYS = {
    "model",
    "normalization_type",
    "hidden_act",
    "num_hidden_layers",
    "seq_length",
    "batch",
    "jit",
    "median_ms",
    "min_ms",
    "max_ms",
    "repeats",
}


@pytest.fixture(scope="module")
def variants():
    return norm_act_variants(TINY, seq_length=9, batch_size=2, jit_modes=(False, True))


def test_records_cover_the_grid_and_are_well_formed(tmp_path):
    records = norm_act_latency(
        TINY,
        "tiny_student",
        seq_length=8,
        batch_size=2,
        num_hidden_layers=1,
        jit_modes=(False, True),
        timing=TimingPlan(repeats=2, warmup=1),
    )
    assert len(records) == 8
    assert {(r["normalization_type"], r["hidden_act"], r["jit"]) for r in records} == {
        (n, a, j) for n, a in NORM_ACT_GRID for j in (False, True)
    }
    for r in records:
        assert set(r) == RECORD_KEYS
        assert (r["model"], r["num_hidden_layers"], r["seq_length"], r["batch"], r["repeats"]) == (
            "tiny_student",
            1,
            8,
            2,
            2,
        )
        assert 0 < r["min_ms"] <= r["median_ms"] <= r["max_ms"]
    path = tmp_path / "latency.json"
    write_json(records, path)
    assert json.loads(path.read_text()) == records


def test_each_variant_has_its_norm_and_activation(variants):
    assert list(variants) == list(NORM_ACT_GRID)
    for (norm, act), v in variants.items():
        assert (v.config.normalization_type, v.config.hidden_act) == (norm, act)
        layers = list(v.encoder.submodules)
        n_nonorm = sum(isinstance(m, NoNorm) for m in layers)
        n_layernorm = sum(isinstance(m, tf_keras.layers.LayerNormalization) for m in layers)
        # Embedding norm + per block: input, shared Q/K, attention, F FFNs, output.
        expected = 1 + TINY.num_hidden_layers * (4 + TINY.num_feedforward_networks)
        assert (n_nonorm, n_layernorm) == ((expected, 0) if norm == "no_norm" else (0, expected))


def test_timed_forwards_compute_the_encoder(variants):
    """Graph and XLA forwards equal an eager call and the independent numpy forward.

    Tolerances are relative to the output's scale: NoNorm outputs of a fresh
    model are ~0.1, LayerNorm outputs ~1, and relu vs gelu changes them by
    only ~1e-3 of that, so a loose absolute tolerance could not tell them apart.
    """
    outputs = {}
    for key, v in variants.items():
        eager = v.encoder(v.inputs, training=False)["sequence_output"].numpy()
        tol = 1e-5 * np.abs(eager).max()
        reference = encoder_forward(
            tf1_arrays_from_encoder(v.encoder),
            v.config,
            v.inputs["input_word_ids"].numpy(),
            v.inputs["input_mask"].numpy(),
            v.inputs["input_type_ids"].numpy(),
        )["sequence_output"]
        np.testing.assert_allclose(eager, reference, rtol=0, atol=tol)
        for jit, forward in v.forwards.items():
            np.testing.assert_allclose(
                forward(), eager, rtol=0, atol=tol, err_msg=f"{key} jit={jit}"
            )
        outputs[key] = (eager, tol)
    # The four models really differ (the config change reached the layers).
    keys = list(outputs)
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            difference = np.abs(outputs[a][0] - outputs[b][0]).max()
            assert difference > 10 * max(outputs[a][1], outputs[b][1]), (a, b, difference)


def test_variants_share_inputs(variants):
    first = next(iter(variants.values())).inputs
    for v in variants.values():
        assert v.inputs is first
    assert first["input_word_ids"].shape == (2, 9)
    ids = first["input_word_ids"].numpy()
    assert ids.min() >= 0 and ids.max() < TINY.vocab_size
    np.testing.assert_array_equal(random_inputs(97, 2, 9)["input_word_ids"], ids)


def test_op_latency_records():
    records = op_latency(
        {"relu": lambda x: x * (x > 0), "neg": lambda x: -x}, [2, 3, 4], repeats=2, warmup=0
    )
    assert [r["op"] for r in records] == ["relu", "neg"]
    for r in records:
        assert r["shape"] == [2, 3, 4] and r["elements"] == 24 and r["repeats"] == 2
        assert 0 < r["min_ms"] <= r["median_ms"] <= r["max_ms"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(seq_length=600), "max_position_embeddings"),
        (dict(jit_modes=()), "jit_modes"),
        (dict(jit_modes=("yes",)), "jit_modes"),
        (dict(grid=[("batch_norm", "relu")]), "normalization_type"),
        (dict(grid=[("no_norm", "softplus")]), "hidden_act"),
        (dict(batch_size=0), "batch_size"),
    ],
)
def test_bad_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        norm_act_variants(TINY, **kwargs)


def test_op_latency_bad_shape_raises():
    with pytest.raises(ValueError, match="shape"):
        op_latency({"neg": lambda x: -x}, [0, 3])
