"""`bench latency --anchor_python`: the anchor's SavedModel through our converter, the
per-round ratios, and the errors.

tf-models is not needed: a stand-in anchor script, run by this interpreter, saves OUR
tiny encoder (same seed) the way the real one saves tf-models' encoder. Converted by
the bench, it must give exactly our graph and our outputs: the anchor's road through
the converter is the same as ours.
"""

import json
import statistics
import sys
import textwrap

import numpy as np
import pytest

import mbert_lib  # noqa: F401
from mbert_lib.bench import TimingPlan, latency_anchor
from mbert_lib.bench.anchor import AnchorError
from mbert_lib.bench.latency_anchor import ComparisonPlan

STAND_IN = textwrap.dedent(
    """
    import argparse, json, os
    import tensorflow as tf, tf_keras
    from mbert_lib.config import MobileBertConfig
    from mbert_lib.export.tflite import serving_function
    from mbert_lib.models import build_encoder, count_params

    p = argparse.ArgumentParser()
    for f in ("--config", "--out", "--seq_length"):
        p.add_argument(f)
    a = p.parse_args()
    config = MobileBertConfig.from_json_file(a.config)
    tf_keras.utils.set_random_seed(0)
    encoder = build_encoder(config, int(a.seq_length))
    serve = serving_function(encoder, int(a.seq_length))
    module = tf.Module()
    module.weights_list = list(encoder.weights)
    tf.saved_model.save(module, a.out, signatures={"serving_default": serve})
    params = count_params(encoder) + PARAMS_OFFSET
    json.dump({"params": params, "tensorflow": tf.__version__, "tf_models": "stand-in"},
              open(os.path.join(a.out, "anchor.json"), "w"))
    """
)


def stand_in(tmp_path, params_offset=0):
    script = tmp_path / f"stand_in_{params_offset}.py"
    script.write_text(STAND_IN.replace("PARAMS_OFFSET", str(params_offset)))
    return script


def test_compare_ratio_per_round_and_median_of_ratios():
    per_round = [
        {"ours/fp32/1": {"median_ms": 30.0}, "tf_models/fp32/1": {"median_ms": 40.0}},
        {"ours/fp32/1": {"median_ms": 50.0}, "tf_models/fp32/1": {"median_ms": 40.0}},
        {"ours/fp32/1": {"median_ms": 36.0}, "tf_models/fp32/1": {"median_ms": 30.0}},
    ]
    (row,) = latency_anchor.compare(per_round)
    ratios = np.array([30 / 40, 50 / 40, 36 / 30])
    np.testing.assert_allclose(row["ratios"], ratios, rtol=1e-4)
    assert row["median_ratio"] == pytest.approx(np.median(ratios), rel=1e-4)
    # the median of per-round ratios, not the ratio of the medians (36 / 40)
    assert row["median_ratio"] != pytest.approx(
        statistics.median([30, 50, 36]) / statistics.median([40, 40, 30])
    )


@pytest.mark.slow
def test_stand_in_anchor_gives_our_graph_and_outputs(tmp_path):
    from mbert_lib.bench import tflite_latency
    from mbert_lib.export.interpreter import TFLiteModel
    from mbert_lib.export.representative import random_features

    result = latency_anchor.run_comparison(
        sys.executable,
        ComparisonPlan("tiny_mobilebert", ["fp32"], [1], 16, 2, TimingPlan(repeats=3, warmup=1)),
        workdir=tmp_path / "work",
        log=lambda *_: None,
        script=stand_in(tmp_path),
    )
    files = result["files"]
    assert files["ours"]["fp32"]["op_counts"] == files["tf_models"]["fp32"]["op_counts"]
    assert files["ours"]["fp32"]["size_bytes"] == pytest.approx(
        files["tf_models"]["fp32"]["size_bytes"], rel=0.01
    )
    (row,) = result["comparison"]
    assert (row["precision"], row["threads"], len(row["ratios"])) == ("fp32", 1, 2)
    assert result["anchor"]["tf_models"] == "stand-in"
    assert result["hardware"]["logical_cpus"] >= 1
    json.dumps(result, allow_nan=False)

    config = tflite_latency.MODELS["tiny_mobilebert"][0]
    features = random_features(1, 16, config.vocab_size, pad_fraction=0.25, seed=3)
    tflites = sorted((tmp_path / "work").glob("*.tflite"))
    ours = [p for p in tflites if p.name.startswith("tiny_mobilebert")]
    anchor = [p for p in tflites if p.name.startswith("tf_models")]
    assert len(ours) == len(anchor) == 1
    a, b = TFLiteModel(ours[0])(features), TFLiteModel(anchor[0])(features)
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(a[name], b[name], rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_an_anchor_with_other_weights_is_refused(tmp_path):
    with pytest.raises(AnchorError, match="not the same model.*weights"):
        latency_anchor.run_comparison(
            sys.executable,
            ComparisonPlan("tiny_mobilebert", ["fp32"], [1], 16, 1, TimingPlan(1, 0)),
            workdir=tmp_path / "work",
            log=lambda *_: None,
            script=stand_in(tmp_path, params_offset=7),
        )


def test_failures_are_named(tmp_path, capsys):
    from mbert_lib.cli import main

    failing = tmp_path / "failing.py"
    failing.write_text(
        "import sys\nprint('tf-models import broke', file=sys.stderr)\nsys.exit(4)\n"
    )
    with pytest.raises(AnchorError, match="exit status 4(.|\n)*tf-models import broke"):
        latency_anchor.anchor_savedmodel(
            sys.executable,
            latency_anchor.MobileBertConfig(vocab_size=10),
            16,
            tmp_path,
            script=failing,
        )
    with pytest.raises(ValueError, match="bert_base.*trigram embedding"):
        latency_anchor.run_comparison(
            sys.executable,
            ComparisonPlan("bert_base", ["fp32"], [1], 16, 1, TimingPlan(1, 0)),
            tmp_path,
        )
    out = str(tmp_path / "out.json")
    assert main(["bench", "latency", "--json", out, "--rounds", "2"]) == 2
    assert "--rounds needs --anchor_python" in capsys.readouterr().err
    assert main(["bench", "latency", "--json", out, "--anchor_python", str(tmp_path / "nope")]) == 2
    assert "--anchor_python" in capsys.readouterr().err
    args = ["bench", "latency", "--json", out, "--anchor_python", sys.executable]
    assert main([*args, "--models", "tiny"]) == 2
    assert "compares one model" in capsys.readouterr().err
