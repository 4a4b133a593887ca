"""The tflite step of the reproduce pipeline, on a tiny fine-tuned classifier (the latency
step is checked on the shared smoke run: tests/test_pipeline_smoke_latency.py).

The classifier is fine-tuned on the separable sentiment fixture in GLUE's
SST-2 layout (tests/finetune_fixtures.py); a finetune step record pointing
at it stands in for the pipeline's fine-tuning step.
"""

import json

import numpy as np
import pytest
import tf_keras

from mbert_lib.export import tflite
from mbert_lib.finetune.trainer import run_finetuning
from mbert_lib.pipeline import RECIPES, STEPS, steps_export
from mbert_lib.pipeline.core import RECORD_FILE, Context, PipelineError
from tests import finetune_fixtures as fx

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

SETTINGS = {
    "classifiers": {"step": "finetune"},  # a finetune-shaped record, written by the fixture
    "models": ["tiny"],
    "precisions": list(tflite.PRECISIONS),
    "num_threads": 1,
    "calibration_examples": 32,
    "calibration_seed": 0,
    "int8_mask_penalty": 20.0,
}


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory):
    """(context whose finetune step fine-tuned "tiny", the run's done record)."""
    root = tmp_path_factory.mktemp("export_step")
    tf_keras.utils.set_random_seed(1234)
    init = fx.save_pretrained(root / "pretrained")
    data_dir = fx.write_sst2(root / "data")
    model_dir = root / "out" / "finetune" / "tiny" / "seed0"
    done = run_finetuning(
        fx.experiment(init, data_dir, "trainer.epochs=3"),
        model_dir,
        show_progress=False,
        log=lambda _: None,
    )
    result = {
        "task": "sst2",
        "source": done["source"],
        "models": {
            "tiny": {"status": "done", "seeds": [0], "model_dirs": [str(model_dir)]},
            "gone": {"status": "missing", "reason": "never ran"},
        },
    }
    record = {"step": "finetune", "result": result, "seconds": 1.0, "fingerprint": "x"}
    (root / "out" / "finetune" / RECORD_FILE).write_text(json.dumps(record))
    ctx = Context(out_dir=root / "out", settings={}, data_dir=str(data_dir), log=lambda _: None)
    return ctx, done


@pytest.fixture(scope="module")
def exported(finetuned):
    ctx, _ = finetuned
    ctx.step_dir("tflite").mkdir(exist_ok=True)
    return steps_export.run_tflite(ctx, SETTINGS)


def test_the_result_has_the_schema_the_report_reads(exported):
    assert set(exported) == {"task", "source", "seq_length", "models"}
    assert exported["task"] == "sst2" and exported["seq_length"] == 12
    tiny = exported["models"]["tiny"]
    assert set(tiny) == {"keras_accuracy", "variants"}
    assert list(tiny["variants"]) == list(tflite.PRECISIONS)
    for variant in tiny["variants"].values():
        assert set(variant) == {"accuracy", "max_abs_logit_diff", "size_bytes", "path"}
        with open(variant["path"], "rb") as f:
            assert len(f.read()) == variant["size_bytes"]
    json.dumps(exported)  # a step result is JSON


def test_keras_accuracy_is_the_fine_tuning_runs_dev_accuracy(exported, finetuned):
    """Two code paths: the trainer's evaluation of the best epoch, the step's Keras pass."""
    _, done = finetuned
    assert exported["models"]["tiny"]["keras_accuracy"] == pytest.approx(
        done["eval"]["accuracy"], abs=1e-9
    )
    assert done["eval"]["accuracy"] > 0.9, "the fixture task is separable"


def test_fp32_through_the_interpreter_is_the_keras_model(exported):
    tiny = exported["models"]["tiny"]
    fp32 = tiny["variants"]["fp32"]
    assert fp32["accuracy"] == tiny["keras_accuracy"]
    assert fp32["max_abs_logit_diff"] < 1e-4


def test_quantized_variants_are_smaller_and_measured(exported):
    variants = exported["models"]["tiny"]["variants"]
    keras = exported["models"]["tiny"]["keras_accuracy"]
    for precision in ("dynamic_int8", "float16", "int8"):
        v = variants[precision]
        assert v["size_bytes"] < variants["fp32"]["size_bytes"]
        assert 0.0 <= v["accuracy"] <= 1.0 and np.isfinite(v["max_abs_logit_diff"])
    assert variants["int8"]["size_bytes"] < 0.5 * variants["fp32"]["size_bytes"]
    for precision in ("dynamic_int8", "float16"):
        assert abs(variants[precision]["accuracy"] - keras) <= 0.05


def test_a_precision_that_cannot_be_exported_is_an_error_record(finetuned, monkeypatch):
    ctx, _ = finetuned
    real = tflite.export_tflite

    def export(model, path, precision, *args, **kwargs):
        if precision == "float16":
            raise tflite.UnsupportedPrecisionError(
                "float16", ["tf.Erf"], "'tf.Erf' op is neither a custom op nor a flex op"
            )
        return real(model, path, precision, *args, **kwargs)

    monkeypatch.setattr(tflite, "export_tflite", export)
    result = steps_export.run_tflite(ctx, {**SETTINGS, "precisions": ["fp32", "float16"]})
    variants = result["models"]["tiny"]["variants"]
    assert set(variants["float16"]) == {"error"}
    assert "float16" in variants["float16"]["error"] and "tf.Erf" in variants["float16"]["error"]
    assert variants["fp32"]["max_abs_logit_diff"] < 1e-4, "the other precisions still run"


def test_a_model_that_was_not_fine_tuned_is_a_clear_error(finetuned):
    ctx, _ = finetuned
    with pytest.raises(PipelineError, match="no fine-tuned 'gone'.*never ran"):
        steps_export.run_tflite(ctx, {**SETTINGS, "models": ["gone"]})
    with pytest.raises(PipelineError, match="no fine-tuned 'pkt'"):
        steps_export.run_tflite(ctx, {**SETTINGS, "models": ["pkt"]})


def test_calibration_sentences_are_a_seeded_sample_without_repeats():
    features = {"input_word_ids": np.arange(50)[:, None] * np.ones((1, 4), np.int32)}
    a = steps_export.calibration_features(features, 20, seed=0)["input_word_ids"][:, 0]
    b = steps_export.calibration_features(features, 20, seed=0)["input_word_ids"][:, 0]
    assert len(set(a)) == 20 and np.array_equal(a, b)
    assert len(steps_export.calibration_features(features, 99, 0)["input_word_ids"]) == 50


def test_steps_follow_finetuning_and_laptop_latency_is_the_papers_setting():
    names = [s.name for s in STEPS]
    assert names.index("finetune") < names.index("tflite")
    assert "latency" in names
    for recipe in RECIPES.values():
        assert set(recipe["tflite"]["models"]) <= set(recipe["finetune"]["models"])
        assert recipe["tflite"]["precisions"] == list(tflite.PRECISIONS)
    latency = RECIPES["laptop"]["latency"]
    assert latency["models"] == ["mobilebert", "bert_base"]
    assert latency["seq_length"] == 128 and latency["threads"] == [1, 2]
    assert set(latency["precisions"]) == {"fp32", "dynamic_int8"} and latency["table7"]
    assert latency["repeats"] >= 20
    assert RECIPES["laptop"]["tflite"]["models"] == ["teacher", "pkt"]


def test_the_classifiers_of_output_distillation_are_its_teacher_and_one_rows_students(tmp_path):
    result = {
        "task": "sst2",
        "student": "pkt",
        "seeds": [0, 1],
        "teacher": [0.75, 0.75],
        "soft_labels": [0.7, 0.71],
        "model_dirs": {
            "teacher": ["t"],
            "labels_only": ["l0", "l1"],
            "soft_labels": ["s0", "s1"],
            "pseudo_labels": ["p0", "p1"],
        },
    }
    (tmp_path / "task_distillation").mkdir()
    record = {"step": "task_distillation", "result": result, "seconds": 1.0, "fingerprint": "x"}
    (tmp_path / "task_distillation" / RECORD_FILE).write_text(json.dumps(record))
    ctx = Context(out_dir=tmp_path, settings={}, log=lambda _: None)
    source = {"classifiers": {"step": "task_distillation", "row": "soft_labels"}}
    found = steps_export.classifiers(ctx, source)
    assert steps_export.finetuned_model_dir(found, "teacher") == "t"
    assert steps_export.finetuned_model_dir(found, "pkt", seed=1) == "s1"
    assert found["models"]["teacher"]["values"] == [0.75]  # fine-tuned once
    assert found["models"]["pkt"]["values"] == [0.7, 0.71]
    with pytest.raises(PipelineError, match="tflite.classifiers.row: 'soft'; expected"):
        steps_export.classifiers(ctx, {"classifiers": {"step": "task_distillation", "row": "soft"}})
