"""`bench latency`: the grid of cases, the ratios, and an end-to-end run on tiny models."""

import json

import pytest

import mbert_lib  # noqa: F401
from mbert_lib.bench import tflite_latency
from mbert_lib.cli import main

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

REQUIRED = {
    "model",
    "normalization_type",
    "hidden_act",
    "precision",
    "threads",
    "seq_length",
    "median_ms",
    "size_bytes",
    "min_ms",
    "repeats",
    "tflite",
}


def test_variants_cover_table7_once_and_only_for_mobilebert_shapes():
    vs = tflite_latency.variants(["mobilebert", "bert_base"])
    keys = [v.key for v in vs]
    assert len(keys) == len(set(keys))
    grid = {
        (v.config.normalization_type, v.config.hidden_act)
        for v in vs
        if v.model == "mobilebert" and v.precision == "fp32"
    }
    assert grid == set(tflite_latency.TABLE7_GRID)
    assert {v.precision for v in vs if v.model == "bert_base"} == {"fp32", "dynamic_int8"}
    assert all(v.config.normalization_type == "layer_norm" for v in vs if v.model == "bert_base")
    no_opt = [v for v in vs if v.key == "mobilebert_layer_norm_gelu_fp32"][0]
    # Table 7 changes only the norm and the activation: FLOPs and shapes stay MobileBERT's.
    assert no_opt.config.replace(
        normalization_type="no_norm", hidden_act="relu"
    ) == mbert_lib.get_preset("mobilebert")
    assert len(tflite_latency.variants(["mobilebert"], table7=False)) == 2


def test_expand_models():
    assert tflite_latency.expand_models(["tiny"]) == ["tiny_mobilebert", "tiny_bert"]
    with pytest.raises(ValueError, match="unknown model 'gpt2'"):
        tflite_latency.expand_models(["gpt2"])


def _record(model, precision, threads, ms, size, norm="no_norm", act="relu"):
    return {
        "model": model,
        "normalization_type": norm,
        "hidden_act": act,
        "precision": precision,
        "threads": threads,
        "median_ms": ms,
        "min_ms": ms / 2,
        "size_bytes": size,
    }


def test_summary_ratios():
    records = [
        _record("bert_base", "fp32", 2, 300.0, 430, "layer_norm", "gelu"),
        _record("bert_base", "dynamic_int8", 2, 150.0, 110, "layer_norm", "gelu"),
        {**_record("mobilebert", "fp32", 2, 60.0, 100), "min_ms": 40.0},
        _record("mobilebert", "dynamic_int8", 2, 50.0, 25),
        _record("mobilebert", "fp32", 2, 20.0, 100, "layer_norm", "relu"),  # not the model itself
    ]
    (row,) = tflite_latency.summarize(records)
    assert row["latency_ratio_fp32"] == pytest.approx(5.0)
    assert row["latency_ratio_fp32_min"] == pytest.approx(150.0 / 40.0)
    assert row["fastest_precision"] == "dynamic_int8"
    assert row["fastest_speedup"] == pytest.approx(6.0)
    assert row["size_ratio_fp32"] == pytest.approx(4.3)
    assert row["size_ratio_dynamic_int8"] == pytest.approx(4.4)
    assert tflite_latency.summarize(records[2:]) == []  # no baseline measured: no ratio


def test_cli_end_to_end_on_tiny_models(tmp_path, capsys):
    out = tmp_path / "latency.json"
    code = main(
        [
            "bench",
            "latency",
            "--models",
            "tiny",
            "--precisions",
            "fp32",
            "--threads",
            "1,2",
            "--repeats",
            "3",
            "--warmup",
            "1",
            "--seq_length",
            "32",
            "--workdir",
            str(tmp_path / "work"),
            "--json",
            str(out),
        ]
    )
    assert code == 0
    records = json.loads(out.read_text())
    # 2 models x fp32 x 2 threads, plus 3 more Table 7 cells x 2 threads.
    assert len(records) == 10
    for r in records:
        assert REQUIRED <= set(r)
        assert r["seq_length"] == 32 and r["repeats"] == 3
        assert 0 < r["min_ms"] <= r["median_ms"]
        assert r["size_bytes"] > 0 and r["tflite"].startswith(str(tmp_path / "work"))
        assert r["op_counts"]["FULLY_CONNECTED"] > 0
    printed = capsys.readouterr().out
    assert "tiny_bert / tiny_mobilebert, 2 thread(s): fp32 latency" in printed


def test_cli_rejects_bad_flags(tmp_path, capsys):
    assert (
        main(["bench", "latency", "--json", str(tmp_path / "x.json"), "--precisions", "int8"]) == 2
    )
    assert "int8 needs calibration data" in capsys.readouterr().err
    assert main(["bench", "latency", "--json", str(tmp_path / "x.json"), "--models", "bert"]) == 2
    assert "unknown model 'bert'" in capsys.readouterr().err
