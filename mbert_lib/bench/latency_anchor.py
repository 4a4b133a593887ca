"""tensorflow/models' MobileBERT encoder as the same-run anchor of `bench latency`.

The anchor script, `experiments/tf_models_anchor/export_encoder.py`, runs in the anchor's
own venv (tf-models-official pins its own TensorFlow) and saves tf-models'
MobileBERTEncoder, built from our config, as a SavedModel whose serving signature has
our exporter's inputs and outputs. From there both encoders take the same road: our
`TFLiteConverter` settings at each precision, one LiteRT interpreter, the same threads
and inputs, timed case by case round-robin (`interleaved_timings`) in `rounds` rounds.
Per (precision, threads) the result holds each round's medians, the ratio
ours / anchor of each round (below 1: ours is faster) and the median of those ratios.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

import tensorflow as tf

from mbert_lib import atomic
from mbert_lib.bench import tflite_latency
from mbert_lib.bench.anchor import AnchorError, check_anchor, run_anchor_command
from mbert_lib.bench.timing import TimingPlan, interleaved_timings
from mbert_lib.config import MobileBertConfig
from mbert_lib.export import tflite
from mbert_lib.export.interpreter import TFLiteModel
from mbert_lib.export.representative import random_features
from mbert_lib.hardware import cpu_info
from mbert_lib.models import build_encoder, count_params

EXPORT_SCRIPT = (
    Path(__file__).resolve().parents[2] / "experiments" / "tf_models_anchor" / "export_encoder.py"
)
SIDES = ("ours", "tf_models")


@dataclasses.dataclass(frozen=True)
class ComparisonPlan:
    """What `run_comparison` times: preset-shaped `model` ("mobilebert", ...) at each of
    `precisions` and `threads`, inputs [1, seq_length], in `rounds` rounds, each with
    `timing`'s warm-up and timed calls of every case."""

    model: str
    precisions: Sequence[str]
    threads: Sequence[int]
    seq_length: int
    rounds: int
    timing: TimingPlan


def anchor_savedmodel(
    python: str | os.PathLike,
    config: MobileBertConfig,
    seq_length: int,
    workdir: str | os.PathLike,
    script: str | os.PathLike = EXPORT_SCRIPT,
    timeout: float = 1800.0,
) -> Path:
    """tf-models' encoder for `config` as a SavedModel under `workdir` (reused if there).

    Raises AnchorError when the anchor cannot run or fails, with its stderr's tail.
    """
    check_anchor(python, script)
    tag = hashlib.sha1((config.to_json_string() + f"T{seq_length}").encode()).hexdigest()[:8]
    out = Path(workdir) / f"tf_models_mobilebert_T{seq_length}_{tag}"
    if (out / "anchor.json").is_file():
        return out
    with tempfile.TemporaryDirectory(prefix="mbert_anchor_", dir=workdir) as tmp:
        config_path, saved = Path(tmp) / "config.json", Path(tmp) / "saved_model"
        config_path.write_text(config.to_json_string(), encoding="utf-8")
        command = [
            str(python),
            str(script),
            "--config",
            str(config_path),
            "--out",
            str(saved),
            "--seq_length",
            str(seq_length),
        ]
        run_anchor_command(command, saved / "anchor.json", timeout)
        os.replace(saved, out)
    return out


def anchor_info(saved: str | os.PathLike) -> dict:
    """{"params", "tensorflow", "tf_models", "config"} the anchor wrote beside its model."""
    return json.loads((Path(saved) / "anchor.json").read_text(encoding="utf-8"))


def convert_savedmodel(saved: str | os.PathLike, path: str | os.PathLike, precision: str) -> int:
    """The SavedModel's serving signature through our converter settings; returns bytes."""

    loaded = tf.saved_model.load(os.fspath(saved))
    converter = tflite.make_converter(
        loaded.signatures["serving_default"], precision, trackable=loaded
    )
    flatbuffer = converter.convert()
    with atomic.atomic_path(path) as tmp:
        Path(tmp).write_bytes(flatbuffer)
    return len(flatbuffer)


def time_rounds(
    files: dict[tuple[str, str], str], vocab_size: int, plan: ComparisonPlan, log=print
) -> list[dict[str, dict]]:
    """Each of the plan's rounds times every (side, precision, threads) case interleaved.

    files: {(side, precision): .tflite path}. Every case gets the same inputs
    ([1, plan.seq_length], no padding). Returns per round {"side/precision/threads":
    {"median_ms", "min_ms"}}; a fresh interpreter per case and round.
    """

    rounds, repeats, warmup = plan.rounds, plan.timing.repeats, plan.timing.warmup
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    features = random_features(1, plan.seq_length, vocab_size, pad_fraction=0.0)
    out = []
    for r in range(rounds):
        runners = {}
        for (side, precision), path in files.items():
            for n in plan.threads:
                model = TFLiteModel(path, num_threads=n)
                runners[f"{side}/{precision}/{n}"] = lambda m=model: m.runner(**features)
        log(f"round {r + 1}/{rounds}: {len(runners)} cases, {warmup} warm-up + {repeats} timed")
        timings = interleaved_timings(runners, repeats=repeats, warmup=warmup)
        out.append(
            {
                case: {"median_ms": round(t.median_ms, 3), "min_ms": round(t.min_ms, 3)}
                for case, t in timings.items()
            }
        )
    return out


def compare(rounds: list[dict[str, dict]]) -> list[dict]:
    """Per (precision, threads): each round's ours and anchor medians, ratio ours / anchor.

    `median_ratio` is the median over rounds of the per-round ratio; below 1 our
    encoder is faster.
    """
    cases = sorted(
        {tuple(case.split("/")[1:]) for case in rounds[0]}, key=lambda c: (c[0], int(c[1]))
    )
    rows = []
    for precision, n in cases:
        ours = [r[f"ours/{precision}/{n}"]["median_ms"] for r in rounds]
        theirs = [r[f"tf_models/{precision}/{n}"]["median_ms"] for r in rounds]
        ratios = [a / b for a, b in zip(ours, theirs)]
        rows.append(
            {
                "precision": precision,
                "threads": int(n),
                "ours_ms": ours,
                "tf_models_ms": theirs,
                "ratios": [round(x, 4) for x in ratios],
                "median_ratio": round(statistics.median(ratios), 4),
            }
        )
    return rows


def format_comparison(rows: Sequence[dict]) -> str:
    lines = [f"{'precision':<14}{'thr':>4}{'ours ms':>10}{'tf-models ms':>14}{'ours/tfm':>10}"]
    for row in rows:
        lines.append(
            f"{row['precision']:<14}{row['threads']:>4}"
            f"{statistics.median(row['ours_ms']):>10.2f}"
            f"{statistics.median(row['tf_models_ms']):>14.2f}{row['median_ratio']:>10.3f}"
        )
    return "\n".join(lines)


def run_comparison(
    python: str | os.PathLike,
    plan: ComparisonPlan,
    workdir: str | os.PathLike,
    log=print,
    script: str | os.PathLike = EXPORT_SCRIPT,
) -> dict:
    """Ours and tf-models' encoder of the plan's preset-shaped model, same run.

    Returns {"model", "seq_length", "threads", "precisions", "rounds", "repeats",
    "warmup", "hardware", "load_average_start", "load_average_end", "anchor" (params,
    versions), "files" {side: {precision: {size_bytes, op_counts}}}, "per_round",
    "comparison"}; raises ValueError for a model tf-models' encoder cannot build and
    AnchorError when the anchor fails or its encoder has another number of weights.
    """

    model, seq_length = plan.model, plan.seq_length
    config, baseline = tflite_latency.MODELS[model]
    if baseline is None or not (config.trigram_input and config.use_bottleneck):
        raise ValueError(
            f"{model}: tf-models' MobileBERTEncoder always has the trigram embedding and "
            "the bottlenecks; compare a MobileBERT-shaped model (mobilebert, tiny_mobilebert)"
        )
    check_anchor(python, script)  # fail before exporting anything
    os.makedirs(workdir, exist_ok=True)
    load_start = list(os.getloadavg())
    log(f"anchor: tf-models' encoder for {model} (its own venv) ...")
    saved = anchor_savedmodel(python, config, seq_length, workdir, script)
    info = {k: v for k, v in anchor_info(saved).items() if k != "config"}
    params = count_params(build_encoder(config, seq_length))
    if info["params"] != params:
        raise AnchorError(
            f"not the same model: our {model} encoder has {params:,} weights, "
            f"tf-models' {info['params']:,}"
        )
    files = _export_both(plan, config, saved, workdir, log)
    per_round = time_rounds(files, config.vocab_size, plan, log)
    described = _describe_files(files)
    return {
        "model": model,
        "seq_length": seq_length,
        "batch_size": 1,
        "threads": list(plan.threads),
        "precisions": list(plan.precisions),
        "rounds": plan.rounds,
        "repeats": plan.timing.repeats,
        "warmup": plan.timing.warmup,
        "encoder_params": params,
        "hardware": cpu_info(),
        "load_average_start": load_start,
        "load_average_end": list(os.getloadavg()),
        "anchor": info,
        "files": described,
        "per_round": per_round,
        "comparison": compare(per_round),
    }


def _export_both(
    plan: ComparisonPlan, config: MobileBertConfig, saved: Path, workdir, log
) -> dict[tuple[str, str], str]:
    """Our encoder and the anchor's SavedModel `saved` at each of the plan's precisions
    (each file reused if there); returns {(side, precision): .tflite path}."""
    files: dict[tuple[str, str], str] = {}
    for precision in plan.precisions:
        variant = tflite_latency.Variant(plan.model, config, precision)
        log(f"export ours {variant.key} and tf-models' {precision} ...")
        files[("ours", precision)] = tflite_latency.export_variant(
            variant, workdir, plan.seq_length
        )["path"]
        anchor_path = Path(saved).with_name(f"{Path(saved).name}_{precision}.tflite")
        if not anchor_path.is_file():
            convert_savedmodel(saved, anchor_path, precision)
        files[("tf_models", precision)] = os.fspath(anchor_path)
    return files


def _describe_files(files: dict[tuple[str, str], str]) -> dict[str, dict]:
    """{side: {precision: {"size_bytes", "op_counts"}}} of the exported files."""
    described = {side: {} for side in SIDES}
    for (side, precision), path in files.items():
        described[side][precision] = {
            "size_bytes": os.path.getsize(path),
            "op_counts": dict(sorted(TFLiteModel(path, num_threads=1).op_counts().items())),
        }
    return described
