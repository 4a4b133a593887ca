"""ONNX export read by ONNX Runtime itself (requirements-clients.txt): tiny MobileBERT and
BERT encoders through tf2onnx compute Keras's outputs at fp32 and close to them at dynamic
int8; `bench latency --onnxruntime` times both runtimes in one run; a missing ONNX Runtime
is named before anything is written."""

import importlib.util
import json

import numpy as np
import pytest
import tf_keras

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

ort = pytest.importorskip("onnxruntime")
onnx_package = pytest.importorskip("onnx")
pytest.importorskip("tf2onnx")

from mbert_lib.bench import tflite_latency  # noqa: E402
from mbert_lib.cli import main  # noqa: E402
from mbert_lib.export import onnx, onnx_graph  # noqa: E402
from mbert_lib.export.representative import random_features  # noqa: E402
from mbert_lib.export.tflite import serving_function  # noqa: E402
from mbert_lib.layers.fast.layer_norm import xla_layer_norm  # noqa: E402
from mbert_lib.models import build_encoder  # noqa: E402

T = 16


def _keras_outputs(encoder, features):
    import tensorflow as tf

    serve = serving_function(encoder, T, batch_size=2)
    out = serve(**{k: tf.constant(v) for k, v in features.items()})
    return {k: v.numpy() for k, v in out.items()}


@pytest.fixture(scope="module", params=["tiny_mobilebert", "tiny_bert"])
def exported(request, tmp_path_factory):
    """(name, Keras outputs, {precision: .onnx path}) of a random tiny encoder; the
    LayerNorms of tiny_bert run by XLA, as in training."""
    config = tflite_latency.MODELS[request.param][0]
    tf_keras.utils.set_random_seed(3)
    with xla_layer_norm(True):
        encoder = build_encoder(config, T)
    features = random_features(2, T, config.vocab_size, pad_fraction=0.3, seed=1)
    work = tmp_path_factory.mktemp(request.param)
    paths = {}
    for precision in onnx.ONNX_PRECISIONS:
        paths[precision] = work / f"{precision}.onnx"
        size = onnx.export_onnx(encoder, paths[precision], precision, T, batch_size=2)
        assert size == paths[precision].stat().st_size
    return request.param, features, _keras_outputs(encoder, features), paths


def test_onnx_runtime_computes_the_keras_encoder_at_fp32(exported):
    name, features, keras, paths = exported
    got = onnx.OnnxModel(paths["fp32"]).runner(**features)
    assert set(got) == {"sequence_output", "pooled_output"}
    for key, want in keras.items():
        np.testing.assert_allclose(got[key], want, atol=1e-5 * np.abs(want).max(), err_msg=key)
    ops = onnx.OnnxModel(paths["fp32"]).op_counts()
    assert "Erfc" not in ops and not any("Call" in op for op in ops), ops
    if name == "tiny_bert":  # exact gelu: Erf, from our Erfc handler
        assert ops.get("Erf", 0) >= 1


def test_a_shape_of_a_stored_tensor_becomes_a_constant_and_the_tensor_goes(tmp_path):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    used = numpy_helper.from_array(rng.normal(size=(3, 4)).astype(np.float32), "used")
    dead = numpy_helper.from_array(rng.normal(size=(5, 6, 7)).astype(np.float32), "dead")
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["x", "used"], ["y"]),
            helper.make_node("Shape", ["dead"], ["full"]),
            helper.make_node("Shape", ["dead"], ["tail"], start=1),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4]),
            helper.make_tensor_value_info("full", TensorProto.INT64, [3]),
            helper.make_tensor_value_info("tail", TensorProto.INT64, [2]),
        ],
        [used, dead],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert onnx_graph.fold_constant_shapes(model) == 2
    assert [i.name for i in model.graph.initializer] == ["used"]
    onnx_package.save(model, tmp_path / "folded.onnx")
    x = rng.normal(size=(3, 4)).astype(np.float32)
    session = ort.InferenceSession(str(tmp_path / "folded.onnx"))
    y, full, tail = session.run(None, {"x": x})
    np.testing.assert_array_equal(y, x + numpy_helper.to_array(used))
    assert full.tolist() == [5, 6, 7] and tail.tolist() == [6, 7]


def test_the_export_keeps_no_tensor_only_for_its_shape(exported):
    _, _, _, paths = exported
    for path in paths.values():
        graph = onnx_package.load(path).graph
        stored = {i.name for i in graph.initializer}
        assert not [n for n in graph.node if n.op_type == "Shape" and n.input[0] in stored]


def test_gemms_become_matmuls_computing_the_same(exported, tmp_path):
    _, features, _, paths = exported
    graph = onnx_package.load(paths["fp32"])
    before = sum(node.op_type == "Gemm" for node in graph.graph.node)
    rewritten = onnx_graph.gemms_as_matmuls(graph)
    assert (
        rewritten >= 1 and sum(n.op_type == "Gemm" for n in graph.graph.node) == before - rewritten
    )
    onnx_package.save(graph, tmp_path / "matmuls.onnx")
    want = onnx.OnnxModel(paths["fp32"]).runner(**features)["sequence_output"]
    got = onnx.OnnxModel(tmp_path / "matmuls.onnx").runner(**features)["sequence_output"]
    np.testing.assert_allclose(got, want, atol=1e-6 * np.abs(want).max())
    assert (tmp_path / "matmuls.onnx").stat().st_size < 1.05 * paths["fp32"].stat().st_size


def test_dynamic_int8_quantizes_the_matmuls_and_stays_close(exported):
    _, features, keras, paths = exported
    ops = onnx.OnnxModel(paths["dynamic_int8"]).op_counts()
    assert ops.get("MatMulInteger", 0) >= 8 and ops.get("DynamicQuantizeLinear", 0) >= 1
    assert paths["dynamic_int8"].stat().st_size < 0.8 * paths["fp32"].stat().st_size
    got = onnx.OnnxModel(paths["dynamic_int8"], num_threads=2).runner(**features)
    error = tflite_latency.relative_error(got, keras)
    assert 0 < error < 0.05  # quantized, so not exact; int8 steps of the weights' range


def test_the_profile_sums_the_runs_by_op_type(exported):
    _, features, _, paths = exported
    profile = onnx.profile(paths["dynamic_int8"], features, runs=3)
    assert profile and all(ms > 0 for ms in profile.values())
    assert list(profile.values()) == sorted(profile.values(), reverse=True)
    assert any("MatMulInteger" in op for op in profile), profile


def test_bad_precision_is_refused_before_writing(tmp_path):
    encoder = build_encoder(tflite_latency.MODELS["tiny_mobilebert"][0], T)
    with pytest.raises(ValueError, match="precision must be one of"):
        onnx.export_onnx(encoder, tmp_path / "x.onnx", "int8", T)
    assert list(tmp_path.iterdir()) == []


def test_bench_latency_times_both_runtimes_in_one_run(tmp_path, capsys):
    out = tmp_path / "latency.json"
    code = main(
        [
            "bench",
            "latency",
            "--json",
            str(out),
            "--models",
            "tiny_mobilebert",
            "--skip_table7",
            "--threads",
            "1",
            "--repeats",
            "3",
            "--warmup",
            "1",
            "--seq_length",
            "32",
            "--onnxruntime",
            "--workdir",
            str(tmp_path / "work"),
        ]
    )
    assert code == 0
    records = json.loads(out.read_text())
    cases = {(r["runtime"], r["precision"]) for r in records}
    assert cases == {(rt, p) for rt in ("litert", "onnxruntime") for p in onnx.ONNX_PRECISIONS}
    by = {(r["runtime"], r["precision"]): r for r in records}
    for precision in onnx.ONNX_PRECISIONS:
        litert, ort_record = by["litert", precision], by["onnxruntime", precision]
        assert ort_record["onnx"].endswith(".onnx") and litert["tflite"].endswith(".tflite")
        bound = 1e-5 if precision == "fp32" else 0.05
        assert ort_record["relative_error_vs_keras"] < bound
        assert litert["relative_error_vs_keras"] < bound
    (ratio,) = [
        r for r in tflite_latency.runtime_ratios(records) if r["precision"] == "dynamic_int8"
    ]
    want = (
        by["onnxruntime", "dynamic_int8"]["median_ms"] / by["litert", "dynamic_int8"]["median_ms"]
    )
    assert ratio["onnxruntime_over_litert"] == pytest.approx(want)
    assert "ONNX Runtime / LiteRT" in capsys.readouterr().out


def test_a_missing_onnx_runtime_is_named_and_nothing_is_written(tmp_path, monkeypatch, capsys):
    find_spec = importlib.util.find_spec

    def without_onnxruntime(name, *args):
        return None if name == "onnxruntime" else find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_onnxruntime)
    with pytest.raises(ModuleNotFoundError, match="missing onnxruntime"):
        onnx.require_onnx()
    out = tmp_path / "latency.json"
    code = main(["bench", "latency", "--json", str(out), "--models", "tiny", "--onnxruntime"])
    assert code != 0 and not out.exists()
    assert "--onnxruntime: ONNX Runtime is not installed" in capsys.readouterr().err
