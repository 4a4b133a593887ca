"""mbert_lib.tables: Table 6, Table 7 and the speed/size tables on hand-made records with
known ratios."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from mbert_lib import (
    hardware,  # noqa: E402
    tables,  # noqa: E402
)
from mbert_lib.viz import tflite as tflite_viz  # noqa: E402


def _record(model, norm, act, precision, threads, ms, size, params):
    return {
        "model": model,
        "normalization_type": norm,
        "hidden_act": act,
        "precision": precision,
        "threads": threads,
        "seq_length": 128,
        "median_ms": ms,
        "min_ms": ms * 0.9,
        "repeats": 20,
        "size_bytes": size,
        "params": params,
        "op_counts": {"FULLY_CONNECTED": 10},
    }


RECORDS = [
    _record("bert_base", "layer_norm", "gelu", "fp32", 2, 180.0, 440e6, 110e6),
    _record("bert_base", "layer_norm", "gelu", "dynamic_int8", 2, 120.0, 110e6, 110e6),
    _record("mobilebert", "no_norm", "relu", "fp32", 2, 36.0, 100e6, 25e6),
    _record("mobilebert", "no_norm", "relu", "dynamic_int8", 2, 30.0, 25e6, 25e6),
    _record("mobilebert", "layer_norm", "gelu", "fp32", 2, 72.0, 101e6, 25e6),
    _record("mobilebert", "layer_norm", "relu", "fp32", 2, 60.0, 101e6, 25e6),
    _record("mobilebert", "no_norm", "gelu", "fp32", 2, 45.0, 100e6, 25e6),
]


def test_targets_are_checked_on_the_measured_ratios():
    df = tables.targets(RECORDS, threads=2).set_index("quantity")
    assert df.loc["MobileBERT fp32 latency (ms)", "ours"] == 36.0
    assert df.loc["BERT_BASE / MobileBERT latency, fp32", "ours"] == pytest.approx(5.0)
    assert df.loc["BERT_BASE fp32 / fastest MobileBERT variant", "ours"] == pytest.approx(6.0)
    assert df.loc["BERT_BASE / MobileBERT file size", "ours"] == pytest.approx(4.4)
    assert df.met.all()
    slow = [
        dict(r, median_ms=50.0)
        if r["model"] == "mobilebert"
        and r["precision"] == "fp32"
        and r["normalization_type"] == "no_norm"
        else r
        for r in RECORDS
    ]
    df = tables.targets(slow, threads=2).set_index("quantity")
    assert not df.loc["MobileBERT fp32 latency (ms)", "met"]
    assert not df.loc["BERT_BASE / MobileBERT latency, fp32", "met"]  # 3.6 < 4.5
    with pytest.raises(ValueError, match="with 1 threads"):
        tables.targets(RECORDS, threads=1)


def test_table7_ratios_are_to_layer_norm_gelu_at_the_same_threads():
    df = tables.table7(RECORDS).set_index(["normalization", "activation"])
    assert df.loc[("no_norm", "relu"), "ratio to LN+gelu"] == pytest.approx(0.5)
    assert df.loc[("layer_norm", "gelu"), "ratio to LN+gelu"] == 1.0
    assert df.loc[("no_norm", "relu"), "paper ratio"] == f"{62 / 192:.2f}"
    assert df.loc[("no_norm", "gelu"), "paper ratio"].startswith("≈")


def test_size_table_uses_each_models_own_architecture():
    df = tables.size_table(RECORDS).set_index(["model", "precision"])
    assert len(df) == 4, "the Table 7 variants are not counted as sizes"
    assert df.loc[("mobilebert", "fp32"), "baseline / model"] == pytest.approx(4.4)
    assert df.loc[("mobilebert", "dynamic_int8"), "bytes / param"] == pytest.approx(1.0)


def test_table6_rows_and_error_rows():
    result = {
        "task": "sst2",
        "source": "local",
        "seq_length": 64,
        "models": {
            "pkt": {
                "keras_accuracy": 0.80,
                "variants": {
                    "fp32": {
                        "accuracy": 0.80,
                        "max_abs_logit_diff": 1e-6,
                        "size_bytes": 4e6,
                        "path": "a",
                    },
                    "int8": {
                        "accuracy": 0.75,
                        "max_abs_logit_diff": 0.3,
                        "size_bytes": 1e6,
                        "path": "b",
                    },
                    "float16": {"error": "cannot export precision 'float16': blocked by tf.Erf"},
                },
            }
        },
    }
    df = tables.table6(result).set_index("precision")
    assert df.loc["int8", "Δ vs Keras (points)"] == pytest.approx(-5.0)
    assert df.loc["int8", "× smaller than fp32"] == pytest.approx(4.0)
    assert "tf.Erf" in df.loc["float16", "error"]
    fig = tflite_viz.plot_table6(result)  # draws an error variant without failing
    assert fig.axes[0].get_ylim()[0] == 0  # accuracy bars start at zero


def test_figures_draw_from_records(tmp_path):
    tflite_viz.plot_size_latency(RECORDS, path=tmp_path / "a.png")
    tflite_viz.plot_table7(RECORDS, path=tmp_path / "b.png")
    assert (tmp_path / "a.png").stat().st_size > 0 and (tmp_path / "b.png").stat().st_size > 0


def test_hardware_description_names_the_cpu():
    info = hardware.cpu_info()
    assert info["logical_cpus"] >= 1 and set(info["simd"]) <= set(hardware.SIMD_FLAGS)
    assert str(info["logical_cpus"]) in hardware.describe(info)
