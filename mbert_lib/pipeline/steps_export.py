"""The deployment steps of `python -m mbert_lib reproduce`: TFLite accuracy and latency.

    tflite   paper Table 6: the fine-tuned classifiers of the models the settings
             name (seed 0's, from the step settings["classifiers"] names: the
             finetune step, one budget of label_budget, or task_distillation's teacher
             and its student of one row) exported at fp32,
             dynamic_int8, float16 and int8 (int8 calibrated on training sentences of
             the task); the task's dev set run through the LiteRT interpreter:
             accuracy beside the Keras model's, max |Δlogit| vs Keras, file size
    latency  "4.3× smaller, 5.5× faster" and Table 7: the paper-size encoders
             (random weights) exported and timed at batch 1 with 1 and 2 threads
             (mbert_lib.bench.tflite_latency); the records go to latency.json.
             A benchmark of untrained encoders, so optional: a full run leaves it
             out; `--steps latency,report` (or notebook 09) runs it

Result of `tflite` (the report and notebook 09 read it):

    {"task", "source", "seq_length",
     "models": {model: {"keras_accuracy",
                        "variants": {precision: {"accuracy", "max_abs_logit_diff",
                                                 "size_bytes", "path"}
                                                or {"error": "<what blocked it, by op>"}}}}}

Result of `latency`: {"records_path", "records"} (the bench's records; the
.tflite files are deleted after timing, their sizes are in the records).
"""

from __future__ import annotations

import gc
import os
import tempfile
from collections.abc import Mapping
from typing import Any

import numpy as np

from mbert_lib.bench import TimingPlan, tflite_latency, write_json
from mbert_lib.checkpoints import load_classifier
from mbert_lib.experiment import load_experiment
from mbert_lib.experiment.finetune import FinetuneExperiment
from mbert_lib.export.evaluate import evaluate_precisions, format_table
from mbert_lib.export.representative import representative_dataset
from mbert_lib.export.tflite import Int8Options
from mbert_lib.finetune.trainer import cached_task_data
from mbert_lib.pipeline.core import Context, PipelineError, Step
from mbert_lib.train.run_record import EXPERIMENT_FILE

RECORDS_FILE = "latency.json"


def finetuned_model_dir(finetune: Mapping[str, Any], model: str, seed: int = 0) -> str:
    """The best-epoch classifier directory of `model`'s run with `seed` in a finetune result."""
    summary = finetune["models"].get(model)
    if summary is None or summary.get("status") != "done":
        reason = summary.get("reason", summary.get("status")) if summary else "not fine-tuned"
        raise PipelineError(
            f"tflite: no fine-tuned {model!r} in the finetune step's result "
            f"({reason}); name a model of finetune.models that has run"
        )
    if seed not in summary["seeds"]:
        raise PipelineError(
            f"tflite: {model!r} has no fine-tuning run with seed {seed} (seeds {summary['seeds']})"
        )
    return summary["model_dirs"][summary["seeds"].index(seed)]


def calibration_features(
    features: Mapping[str, np.ndarray], n: int, seed: int
) -> dict[str, np.ndarray]:
    """n examples drawn at random (without replacement) from `features` ([N, T] arrays)."""
    total = len(next(iter(features.values())))
    keep = np.random.default_rng(seed).choice(total, size=min(n, total), replace=False)
    return {name: values[np.sort(keep)] for name, values in features.items()}


def int8_options(calibration: Mapping[str, np.ndarray], settings: Mapping[str, Any]) -> Int8Options:
    """The int8 export of a step's `settings`: calibrated on the first calibration_examples
    of `calibration`, with the bounded mask of int8_mask_penalty."""
    return Int8Options(
        representative_dataset(calibration, settings["calibration_examples"]),
        settings["int8_mask_penalty"],
    )


def _variant(record: Mapping[str, Any]) -> dict:
    """An evaluate_precisions record in the step's schema."""
    if record["error"]:
        return {"error": record["error"]}
    return {key: record[key] for key in ("accuracy", "max_abs_logit_diff", "size_bytes", "path")}


def classifiers(ctx: Context, settings: Mapping[str, Any]) -> dict:
    """The fine-tuning result whose seed-0 classifiers the step exports ({"task",
    "models"}): the finetune step's, one budget of the label_budget step's, or the
    task_distillation step's teacher and its student of one row (e.g. soft_labels), under
    the student's name."""
    source = settings["classifiers"]
    result = ctx.result(source["step"])
    if source["step"] == "task_distillation":
        row = source.get("row")
        if row not in ("labels_only", "soft_labels", "pseudo_labels"):
            raise PipelineError(
                f"tflite.classifiers.row: {row!r}; expected labels_only, soft_labels or "
                "pseudo_labels (the task_distillation row whose student is exported)"
            )
        dirs = result["model_dirs"]
        teacher = {"seeds": [0], "values": result["teacher"][:1], "model_dirs": dirs["teacher"]}
        student = {"seeds": result["seeds"], "values": result[row], "model_dirs": dirs[row]}
        return {
            "task": result["task"],
            "models": {
                "teacher": {"status": "done", **teacher},
                result["student"]: {"status": "done", **student},
            },
        }
    if source["step"] == "label_budget":
        budget = str(source["budget"])
        if budget not in result["budgets"]:
            raise PipelineError(
                f"tflite.classifiers.budget: label_budget has no budget {budget!r} "
                f"(it has {sorted(result['budgets'])})"
            )
        return {"task": result["task"], "models": result["budgets"][budget]["models"]}
    return result


def run_tflite(ctx: Context, settings: Mapping[str, Any]) -> dict:

    finetune = classifiers(ctx, settings)
    models, loaded, seq_length = {}, {}, None
    for model in settings["models"]:
        model_dir = finetuned_model_dir(finetune, model)
        experiment = load_experiment(
            os.path.join(model_dir, EXPERIMENT_FILE), cls=FinetuneExperiment
        )
        data = cached_task_data(experiment, loaded)  # the dev set the model was selected on
        if data.task.is_regression:
            raise PipelineError(
                f"tflite: task {data.task.name} is a regression task; "
                "the step measures classification accuracy"
            )
        seq_length = experiment.task.seq_length
        calibration = calibration_features(
            data.train.features, settings["calibration_examples"], settings["calibration_seed"]
        )
        ctx.log(
            f"tflite: {model} ({model_dir}): {len(data.dev)} dev examples, seq {seq_length}"
            f", int8 calibrated on {len(calibration['input_mask'])} training sentences"
        )
        records = evaluate_precisions(
            load_classifier(model_dir),
            data.dev.features,
            data.dev.labels,
            int8_options(calibration, settings),
            workdir=ctx.step_dir("tflite").resolve(),
            precisions=settings["precisions"],
            num_threads=settings["num_threads"],
            name=model,
        )
        ctx.log(format_table(records))
        models[model] = {
            "keras_accuracy": records[0]["keras_accuracy"],
            "variants": {r["precision"]: _variant(r) for r in records},
        }
        gc.collect()
    return {
        "task": finetune["task"],
        "source": data.source,
        "seq_length": seq_length,
        "models": models,
    }


def run_latency(ctx: Context, settings: Mapping[str, Any]) -> dict:

    models = tflite_latency.expand_models(settings["models"])
    variant_list = tflite_latency.variants(models, settings["precisions"], settings["table7"])
    directory = ctx.step_dir("latency").resolve()  # recorded paths survive a symlinked runs/
    with tempfile.TemporaryDirectory(dir=directory, prefix="tflite-") as workdir:
        records = tflite_latency.measure(
            variant_list,
            workdir,
            settings["seq_length"],
            settings["threads"],
            TimingPlan(settings["repeats"], settings["warmup"]),
            log=ctx.log,
        )
    for record in records:
        record.pop("tflite")  # deleted with the workdir
    path = directory / RECORDS_FILE
    write_json(records, path)
    ctx.log(tflite_latency.format_report(records))
    return {"records_path": str(path), "records": records}


STEPS = [
    Step(
        "tflite",
        "TFLite export of the fine-tuned classifiers: dev accuracy per precision (Table 6)",
        run_tflite,
        uses=lambda s: [s["classifiers"]["step"]],
    ),
    Step(
        "latency",
        "TFLite latency and size, MobileBERT vs BERT_BASE, and the NoNorm/relu grid (Table 7)",
        run_latency,
        optional=True,  # a benchmark of untrained paper-size encoders, not a trained result
    ),
]
