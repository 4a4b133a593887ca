"""The compression step of `python -m mbert_lib reproduce` (optional: `--steps compress`).

    compress   the distilled student settings["model"] fine-tuned on the task, once per
               seed for each of:
               - dense;
               - the teacher settings["teacher"] in its place (if set): the model
                 distillation compressed, fine-tuned the same way, at fp32;
               - magnitude-pruned to each of settings["sparsities"] (`prune.sparsity`
                 of the fine-tuning experiment: tfmot's polynomial decay);
               - with each fraction of settings["ffn_units"] of every FFN's units
                 taken out before fine-tuning (mbert_lib.compress.structured: smaller
                 dense shapes);
               - quantization-aware, with settings["qat"] (`qat.enabled`: tfmot's
                 fake-quantizers; exported int8 with the ranges it learned);
               - quantization-aware again from the run pruned to each of
                 settings["pruned_qat"], its zeros kept.
               Every run shares the seed's head initialisation, data order and steps
               with the dense run, so its accuracy is paired with the dense one seed
               by seed. Every classifier goes to LiteRT; the dense one also at
               dynamic-range int8 and full-integer int8 (calibrated on training
               sentences). Dev accuracy through the LiteRT interpreter, each .tflite's
               bytes and gzip bytes (level 9, as tfmot measures), and seed 0's files
               timed at batch 1, interleaved round-robin. The sensitivity scan prunes
               each dense classifier once, without training, one block at a time (and
               all blocks together) at each of settings["sensitivity"]: dev accuracy
               in Keras, paired with the dense model's.

Result (also written to <out>/compress/compress.json):

    {"task", "source", "seq_length", "model", "seeds", "steps", "threads",
     "rows": [{"method", "precision", "sparsity", "kernel_params", "bytes", "gzip_bytes",
               "accuracy": [per seed], "keras_accuracy": [per seed],
               "latency_ms", "latency_vs_fp32",
               "vs_fp32": paired accuracy difference against the fp32 row (or null)}],
     "sensitivity": [{"block": index or "all", "sparsity", "accuracy": [per seed],
                      "vs_dense": paired difference against the dense Keras accuracy}],
     "params": {"total", "pruned_kernels", "embeddings"} of the classifier,
     "hardware", "load_1min"}

`method` is teacher for the teacher (settings["teacher"]), fp32, dynamic_int8 or
full_int8 for the dense student, prune_<percent> or
ffn_units_<percent> for a pruned one at fp32 (<method>_<precision> at another precision),
qat_int8 for the quantization-aware fine-tuned one (with settings["qat"]),
prune_<percent>_qat_int8 for QAT after pruning (settings["pruned_qat"]).
`sparsity` is the fraction of the dense student's block-kernel weights that are zero or
gone (the teacher's: of its own); `kernel_params` the block kernels' size in the row's
model.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mbert_lib import atomic, hardware, strict_json
from mbert_lib.bench.timing import interleaved_timings
from mbert_lib.checkpoints import load_classifier, load_config, load_encoder, save_model_dir
from mbert_lib.compress.pruning import (
    encoder_blocks,
    overall_sparsity,
    prune_once,
    pruning_targets,
)
from mbert_lib.compress.qat import load_qat_classifier
from mbert_lib.compress.size import gzip_bytes
from mbert_lib.compress.structured import prune_ffn_units
from mbert_lib.config_tree import apply_overrides, check
from mbert_lib.data.tokenizer import load_tokenizer, save_tokenizer
from mbert_lib.experiment import check_sparsity, load_experiment
from mbert_lib.experiment.finetune import FinetuneExperiment
from mbert_lib.export.evaluate import accuracy, evaluate_precisions, keras_logits
from mbert_lib.export.interpreter import TFLiteModel
from mbert_lib.export.tflite import export_qat_tflite
from mbert_lib.finetune.trainer import cached_task_data, run_finetuning
from mbert_lib.models import build_encoder
from mbert_lib.paired import paired_difference
from mbert_lib.pipeline.core import Context, PipelineError, Step, read_record
from mbert_lib.pipeline.steps_export import calibration_features, int8_options
from mbert_lib.pipeline.steps_finetune import finetune_experiment, seed_run_dir
from mbert_lib.train.run_record import EXPERIMENT_FILE

RESULT_FILE = "compress.json"
METHOD_OF_PRECISION = {"fp32": "fp32", "dynamic_int8": "dynamic_int8", "int8": "full_int8"}


def method_name(variant: str | None, precision: str) -> str:
    """fp32 / dynamic_int8 / full_int8 for the dense model (variant None); else the variant
    (prune_<percent>, ffn_units_<percent>) at fp32, <variant>_<method> at another."""
    if variant is None:
        return METHOD_OF_PRECISION[precision]
    return variant if precision == "fp32" else f"{variant}_{METHOD_OF_PRECISION[precision]}"


@dataclasses.dataclass(frozen=True)
class Variant:
    """One kind of fine-tuned student: its name (None: dense), its run directories' label,
    tfmot's final sparsity during fine-tuning, the model it starts from and the precisions
    it is exported at."""

    name: str | None
    label: str
    sparsity: float
    init: str
    upstream: str
    precisions: tuple[str, ...]
    qat: bool = False  # quantization-aware fine-tuning, exported as <name>
    after: str | None = None  # starts from this label's run of the same seed, not `init`


def percent(fraction: float) -> int:
    return round(fraction * 100)


def check_settings(settings: Mapping[str, Any]) -> None:
    """Raises ValueError naming the first setting of the step that cannot be run."""
    for s in settings["sparsities"]:
        check_sparsity(s, "compress.sparsities[]")
    for s in settings["sensitivity"]:
        check_sparsity(s, "compress.sensitivity[]")
    for s in settings["pruned_qat"]:
        check(
            s in settings["sparsities"],
            "compress.pruned_qat[]",
            f"one of compress.sparsities {settings['sparsities']} (QAT starts from that run)",
            s,
        )
    for f in settings["ffn_units"]:
        fraction = isinstance(f, int | float) and not isinstance(f, bool)
        check(fraction and 0 < f < 1, "compress.ffn_units[]", "a fraction in (0, 1)", f)
    teacher = settings["teacher"]
    check(
        teacher is None or (isinstance(teacher, str) and teacher != settings["model"]),
        "compress.teacher",
        "null or the name of a step other than compress.model",
        teacher,
    )
    check(settings["seeds"] >= 2, "compress.seeds", ">= 2 (accuracy is paired)", settings["seeds"])
    for key in ("precisions", "pruned_precisions"):
        bad = [p for p in settings[key] if p not in METHOD_OF_PRECISION]
        check(not bad, f"compress.{key}", f"a list of {sorted(METHOD_OF_PRECISION)}", bad)
    check(
        "fp32" in settings["precisions"],
        "compress.precisions",
        "a list holding fp32",
        settings["precisions"],
    )


def seed_runs(step_dir: str | os.PathLike, label: str) -> dict[int, Path]:
    """{seed: run directory} of `label` (sparsity_<percent>, ffn_units_<percent>, qat,
    teacher, ...) in a compress step's directory, as its last run wrote them."""
    found = {}
    for directory in sorted((Path(step_dir) / "runs" / label).glob("seed*-*")):
        found[int(directory.name.split("-")[0].removeprefix("seed"))] = directory
    return found


def run_directory(ctx: Context, label: str, seed: int) -> Path:
    """The fine-tuning run directory of `label` and `seed` that the step's last run wrote."""
    found = seed_runs(ctx.step_dir("compress"), label).get(seed)
    if found is None:
        raise PipelineError(f"compress: no run {label} seed {seed} in {ctx.out_dir}; run the step")
    return found


def run_task(run_dir: str | os.PathLike, cache: dict):
    """(experiment, task data) of a finished fine-tuning run directory; `cache` as
    `cached_task_data` keeps it across runs."""
    experiment = load_experiment(Path(run_dir) / EXPERIMENT_FILE, cls=FinetuneExperiment)
    return experiment, cached_task_data(experiment, cache)


def _train(ctx, settings, variant: Variant, seed: int, loaded: dict):
    """One fine-tuning run of `variant`: its done record, directory, data and experiment."""
    if variant.after is not None:  # e.g. QAT of seed k's pruned classifier's encoder
        start = run_directory(ctx, variant.after, seed)
        variant = dataclasses.replace(
            variant, init=str(start), upstream=f"{variant.upstream}/{start.name}"
        )
    experiment = apply_overrides(
        finetune_experiment(ctx, settings, variant.init, seed),
        [
            ("trainer.train_steps", settings["train_steps"]),
            ("prune.sparsity", variant.sparsity),
            ("qat.enabled", variant.qat),
        ]
        + [(f"prune.{k}", v) for k, v in settings["prune"].items()],
    )
    parent = ctx.step_dir("compress") / "runs" / variant.label
    directory = seed_run_dir(parent, seed, experiment, variant.upstream)
    ctx.log(f"compress: {variant.name or 'dense'}, seed {seed} -> {directory}")
    data = cached_task_data(experiment, loaded)
    done = run_finetuning(
        experiment, directory, data=data, show_progress=ctx.show_progress, log=ctx.log
    )
    return done, directory, data, experiment


def structured_init(ctx: Context, init: str, upstream: str, fraction: float) -> str:
    """The pre-trained student `init` with `fraction` of every FFN's units taken out
    (mbert_lib.compress.structured), written once as a model directory to fine-tune."""
    directory = ctx.step_dir("compress") / "structured" / f"ffn_units_{percent(fraction)}"
    digest = hashlib.sha256(f"{upstream}/{fraction}".encode()).hexdigest()[:10]
    target = directory / digest
    if not target.exists():
        shutil.rmtree(directory, ignore_errors=True)
        encoder = prune_ffn_units(load_encoder(init), fraction, build_encoder)
        tokenizer = load_tokenizer(init)
        save_model_dir(encoder, target, save_tokenizer=lambda d: save_tokenizer(tokenizer, d))
        ctx.log(
            f"compress: FFN units {encoder.config.intermediate_size} of "
            f"{load_config(init).intermediate_size} kept -> {target}"
        )
    return str(target)


def variants(ctx: Context, settings: Mapping[str, Any], init: str, upstream: str) -> list:
    """The teacher (if settings["teacher"]), the dense student, each tfmot sparsity, each
    fraction of FFN units taken out, and the quantization-aware fine-tuned one."""
    pruned = tuple(settings["pruned_precisions"])
    found = [Variant(None, "sparsity_0", 0.0, init, upstream, tuple(settings["precisions"]))]
    if settings["teacher"] is not None:
        teacher = _finished(ctx, settings["teacher"])
        start, fingerprint = teacher["result"]["model_dir"], teacher["fingerprint"]
        found.insert(0, Variant("teacher", "teacher", 0.0, start, fingerprint, ("fp32",)))
    for s in settings["sparsities"]:
        found.append(
            Variant(f"prune_{percent(s)}", f"sparsity_{percent(s)}", s, init, upstream, pruned)
        )
    for f in settings["ffn_units"]:
        label = f"ffn_units_{percent(f)}"
        start = structured_init(ctx, init, upstream, f)
        found.append(Variant(label, label, 0.0, start, upstream, pruned))
    if settings["qat"]:
        found.append(Variant("qat_int8", "qat", 0.0, init, upstream, ("qat_int8",), qat=True))
    for s in settings["pruned_qat"]:  # QAT after pruning, the zeros kept
        name = f"prune_{percent(s)}_qat_int8"
        after = f"sparsity_{percent(s)}"
        found.append(Variant(name, name, 0.0, init, upstream, ("qat_int8",), True, after))
    return found


def evaluate_qat(model_dir, data, workdir, name: str) -> list[dict]:
    """The QAT run in `model_dir` exported as int8 (`export_qat_tflite`): one record in
    `evaluate_precisions`' fields, precision "qat_int8"; keras_accuracy is that of the
    model with its fake-quantizers."""
    simulated = load_qat_classifier(model_dir)
    path = os.path.join(os.fspath(workdir), f"{name}_qat_int8.tflite")
    size = export_qat_tflite(simulated, path, data.dev.features["input_word_ids"].shape[1])
    logits = TFLiteModel(path, num_threads=2).predict(data.dev.features)["logits"]
    return [
        {
            "precision": "qat_int8",
            "accuracy": accuracy(logits, data.dev.labels),
            "keras_accuracy": accuracy(keras_logits(simulated, data.dev.features), data.dev.labels),
            "size_bytes": size,
            "path": path,
            "error": None,
        }
    ]


def _latencies(paths: Mapping[str, str], example: Mapping[str, np.ndarray], settings) -> dict:
    """{method: median ms} of one example through each file, timed round-robin."""
    runners = {}
    for method, path in paths.items():
        model = TFLiteModel(path, num_threads=settings["threads"])
        runners[method] = lambda m=model: m.runner(**example)
    timings = interleaved_timings(runners, settings["repeats"], settings["warmup"])
    return {method: timings[method].median_ms for method in paths}


def parameter_split(model) -> dict:
    """How many of the classifier's parameters pruning reaches: {total, pruned_kernels
    (the blocks' kernels), embeddings (the embedding layer's, none of them pruned)}."""
    kernels = [getattr(owner, name).kernel for owner, name in pruning_targets(model)]
    return {
        "total": int(sum(np.prod(v.shape) for v in model.weights)),
        "pruned_kernels": int(sum(np.prod(k.shape) for k in kernels)),
        "embeddings": int(sum(np.prod(v.shape) for v in model.encoder.embedding.weights)),
    }


def sensitivity_scan(model_dir, data, sparsities) -> list[dict]:
    """[{block, sparsity, accuracy}] of the classifier in `model_dir` pruned once (no
    training) in one block, or in all ("all"), at each sparsity; dev accuracy in Keras."""
    blocks = [*range(len(encoder_blocks(load_classifier(model_dir)))), "all"]
    scan = []
    for block in blocks:
        for sparsity in sparsities:
            model = load_classifier(model_dir)
            prune_once(model, sparsity, None if block == "all" else block)
            logits = keras_logits(model, data.dev.features)
            scan.append(
                {
                    "block": block,
                    "sparsity": sparsity,
                    "accuracy": accuracy(logits, data.dev.labels),
                }
            )
    return scan


def _paired_scan(scans: list[list[dict]], dense: list[float]) -> list[dict]:
    """One row per (block, sparsity): the per-seed accuracies and the paired difference."""
    rows = []
    for i, probe in enumerate(scans[0]):
        values = [scan[i]["accuracy"] for scan in scans]
        rows.append(
            {
                "block": probe["block"],
                "sparsity": probe["sparsity"],
                "accuracy": values,
                "vs_dense": paired_difference(values, dense).to_dict(),
            }
        )
    return rows


def _finished(ctx: Context, step: str) -> dict:
    """The record of `step`, which must have finished."""
    record = read_record(ctx.step_dir(step))
    if record is None:
        raise PipelineError(f"compress: no finished step {step!r} in {ctx.out_dir}; run it first")
    return record


def run_compress(ctx: Context, settings: Mapping[str, Any]) -> dict:

    check_settings(settings)
    record = _finished(ctx, settings["model"])
    init, upstream = record["result"]["model_dir"], record["fingerprint"]
    workdir = ctx.step_dir("compress") / "tflite"
    workdir.mkdir(parents=True, exist_ok=True)
    rows: dict[str, dict] = {}
    loaded: dict = {}
    scans = []
    for variant in variants(ctx, settings, init, upstream):
        for seed in range(settings["seeds"]):
            done, directory, data, experiment = _train(ctx, settings, variant, seed, loaded)
            name = f"{variant.label}_seed{seed}"
            float_model = load_classifier(directory)
            records = (
                evaluate_qat(directory, data, workdir.resolve(), name)
                if variant.qat
                else evaluate_precisions(
                    float_model,
                    data.dev.features,
                    data.dev.labels,
                    int8_options(
                        calibration_features(
                            data.train.features,
                            settings["calibration_examples"],
                            settings["calibration_seed"],
                        ),
                        settings,
                    ),
                    workdir=workdir.resolve(),
                    precisions=variant.precisions,
                    num_threads=2,
                    name=name,
                )
            )
            split = parameter_split(float_model)
            if variant.name is None:
                dense_split = split
            kernels = split["pruned_kernels"]
            zeros = overall_sparsity(float_model)
            for r in records:
                if r["error"]:
                    raise PipelineError(f"compress: {r['precision']} export failed: {r['error']}")
                method = variant.name if variant.qat else method_name(variant.name, r["precision"])
                row = rows.setdefault(
                    method,
                    {
                        "method": method,
                        "precision": r["precision"],
                        "sparsity": [],
                        "kernel_params": kernels,
                        "accuracy": [],
                        "keras_accuracy": [],
                        "paths": [],
                    },
                )
                row["sparsity"].append(zeros)
                row["accuracy"].append(r["accuracy"])
                row["keras_accuracy"].append(r["keras_accuracy"])
                row["paths"].append(r["path"])
            if variant.name is None and settings["sensitivity"]:
                ctx.log(f"compress: sensitivity scan of seed {seed}'s dense classifier")
                scans.append(sensitivity_scan(directory, data, settings["sensitivity"]))
    example = {k: np.asarray(v[:1], np.int32) for k, v in data.dev.features.items()}
    latency = _latencies({m: row["paths"][0] for m, row in rows.items()}, example, settings)
    fp32 = rows["fp32"]
    table = []
    for method, row in rows.items():
        path = row.pop("paths")[0]
        kept = row["kernel_params"] * (1 - float(np.mean(row["sparsity"])))
        reference = row["kernel_params"] if method == "teacher" else fp32["kernel_params"]
        table.append(
            {
                **row,
                "sparsity": round(1 - kept / reference, 6),
                "bytes": os.path.getsize(path),
                "gzip_bytes": gzip_bytes(path),
                "latency_ms": round(latency[method], 6),  # the smoke model runs in tens of µs
                "latency_vs_fp32": round(latency[method] / latency["fp32"], 4),
                "vs_fp32": None
                if method == "fp32"
                else paired_difference(row["accuracy"], fp32["accuracy"]).to_dict(),
            }
        )
    result = {
        "task": experiment.task.name,
        "source": done["source"],
        "seq_length": experiment.task.seq_length,
        "model": settings["model"],
        "seeds": list(range(settings["seeds"])),
        "steps": settings["train_steps"],
        "threads": settings["threads"],
        "rows": table,
        "params": dense_split,
        "sensitivity": _paired_scan(scans, rows["fp32"]["keras_accuracy"]) if scans else [],
        "hardware": hardware.describe(),
        "load_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }
    path = ctx.step_dir("compress") / RESULT_FILE
    atomic.write_text(path, strict_json.dumps(result, indent=2) + "\n")
    ctx.log(f"compress: {path}")
    return result


STEPS = [
    Step(
        "compress",
        "pruning (magnitude, FFN units) and int8 (post-training, QAT) of the fine-tuned "
        "student: size, accuracy, latency",
        run_compress,
        ("data",),
        uses=lambda s: [s["model"]] + ([s["teacher"]] if s["teacher"] is not None else []),
        optional=True,  # beyond the paper: a compression course's table, tens of minutes
    ),
]
