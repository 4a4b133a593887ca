"""On-CPU latency of exported encoders: "4.3× smaller, 5.5× faster" and Table 7.

The paper measures TFLite on a Pixel 4 (4 threads, seq 128): MobileBERT
62 ms, BERT_BASE 342 ms; Table 7 ablates the OPT changes (NoNorm, relu)
on the MobileBERT shape. Here the same encoders (random weights: latency
does not depend on their values) are converted with the same converter and
timed with the LiteRT interpreter (XNNPACK) at batch 1, with 1 and 2
threads, all cases interleaved round-robin so background load hits them
alike. Compare ratios measured in one run, never absolute numbers across
machines.

What the converter makes of the graphs (see each record's `op_counts`): the
einsum head projections become FULLY_CONNECTED ops (15 per MobileBERT
block), NoNorm's γ ⊙ h + β is folded into the neighbouring matmuls and adds
(almost no MUL is left), the padding mask is computed once, and a LayerNorm
costs MEAN, SQUARED_DIFFERENCE, RSQRT, SUB, MUL and ADD each time: that,
and GELU, is what Table 7 measures. With every matmul running near the
CPU's float peak, the fp32 latency ratio of BERT_BASE to MobileBERT tends to
their FLOP ratio (≈22.3 / 5.3 GFLOP at seq 128 ≈ 4.2); the Pixel 4's 5.5×
also reflects a phone's caches and memory bandwidth.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import os
from collections.abc import Iterable, Sequence

import numpy as np
import tensorflow as tf
import tf_keras

from mbert_lib import paper
from mbert_lib.bench.timing import TimingPlan, interleaved_timings
from mbert_lib.config import MobileBertConfig, get_preset
from mbert_lib.export import onnx, tflite
from mbert_lib.export.interpreter import TFLiteModel
from mbert_lib.export.representative import random_features
from mbert_lib.models import build_encoder, count_params

_TINY_MOBILEBERT = get_preset("tiny_student").replace(num_hidden_layers=2, vocab_size=1000)
_TINY_BERT = MobileBertConfig(
    vocab_size=1000,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=256,
    type_vocab_size=2,
)

DEFAULT_TIMING = TimingPlan(repeats=30, warmup=5)  # measure's
# name -> (config, name of the BERT baseline it is compared with, or None for a baseline)
MODELS: dict[str, tuple[MobileBertConfig, str | None]] = {
    "mobilebert": (get_preset("mobilebert"), "bert_base"),
    "bert_base": (get_preset("bert_base"), None),
    # Two-layer stand-ins that exercise the same code in seconds (tests, smoke runs).
    "tiny_mobilebert": (_TINY_MOBILEBERT, "tiny_bert"),
    "tiny_bert": (_TINY_BERT, None),
}
ALIASES = {"tiny": ("tiny_mobilebert", "tiny_bert")}
TABLE7_GRID = (
    ("layer_norm", "gelu"),
    ("layer_norm", "relu"),
    ("no_norm", "gelu"),
    ("no_norm", "relu"),
)


@dataclasses.dataclass(frozen=True)
class Variant:
    """One exported encoder to time: a model, possibly with Table 7's norm/act changed."""

    model: str
    config: MobileBertConfig
    precision: str

    @property
    def key(self) -> str:
        c = self.config
        return f"{self.model}_{c.normalization_type}_{c.hidden_act}_{self.precision}"


def expand_models(names: Iterable[str]) -> list[str]:
    """Model names with aliases ("tiny") expanded; unknown names raise."""
    out: list[str] = []
    for name in names:
        for expanded in ALIASES.get(name, (name,)):
            if expanded not in MODELS:
                raise ValueError(
                    f"unknown model {expanded!r}; known: {sorted(MODELS) + sorted(ALIASES)}"
                )
            if expanded not in out:
                out.append(expanded)
    return out


def variants(
    models: Sequence[str], precisions: Sequence[str] = ("fp32", "dynamic_int8"), table7: bool = True
) -> list[Variant]:
    """Each model at each precision, plus the Table 7 grid (fp32) of MobileBERT shapes."""
    out = [Variant(m, MODELS[m][0], p) for m in models for p in precisions]
    if table7:
        for m in models:
            config, baseline = MODELS[m]
            if baseline is None:
                continue
            for norm, act in TABLE7_GRID:
                v = Variant(m, config.replace(normalization_type=norm, hidden_act=act), "fp32")
                if v.key not in {o.key for o in out}:
                    out.append(v)
    return out


def export_variant(
    variant: Variant,
    workdir: str,
    seq_length: int,
    features: dict[str, np.ndarray] | None = None,
    onnxruntime: bool = False,
) -> dict:
    """Writes (or reuses) the variant's .tflite, and with `onnxruntime` its .onnx when ONNX
    Runtime has the precision; returns {path, size_bytes, params}, with `features` also
    `keras` (the encoder's outputs on them) and with the .onnx onnx_path and
    onnx_size_bytes. Weights are random from seed 0: latency does not depend on them.

    The file names carry a hash of config, precision and seq_length, so a
    kept workdir is reused only for the same export.
    """

    tag = hashlib.sha1(
        (variant.config.to_json_string() + variant.precision + str(seq_length)).encode()
    ).hexdigest()[:8]
    stem = os.path.join(workdir, f"{variant.key}_T{seq_length}_{tag}")
    tf_keras.utils.set_random_seed(0)
    encoder = build_encoder(variant.config, seq_length)
    out = {"path": stem + ".tflite", "params": count_params(encoder)}
    if features is not None:
        serving = tflite.serving_function(encoder, seq_length)
        inputs = {k: tf.constant(v) for k, v in features.items()}
        out["keras"] = {k: v.numpy() for k, v in serving(**inputs).items()}
    if not os.path.exists(out["path"]):
        tflite.export_tflite(encoder, out["path"], variant.precision, seq_length)
    out["size_bytes"] = os.path.getsize(out["path"])
    if onnxruntime and variant.precision in onnx.ONNX_PRECISIONS:
        out["onnx_path"] = stem + ".onnx"
        if not os.path.exists(out["onnx_path"]):
            onnx.export_onnx(encoder, out["onnx_path"], variant.precision, seq_length)
        out["onnx_size_bytes"] = os.path.getsize(out["onnx_path"])
    del encoder
    gc.collect()
    return out


def relative_error(outputs: dict, reference: dict) -> float:
    """max |sequence_output − reference| / max |reference|: how far a runtime's encoder
    output is from Keras's on the same input."""
    ref = reference["sequence_output"]
    return float(np.max(np.abs(outputs["sequence_output"] - ref)) / np.max(np.abs(ref)))


def measure(
    variant_list: Sequence[Variant],
    workdir: str,
    seq_length: int = 128,
    threads: Sequence[int] = (1, 2),
    timing: TimingPlan = DEFAULT_TIMING,
    log=print,
    onnxruntime: bool = False,
    onnxruntime_spinning: bool = True,
) -> list[dict]:
    """Exports every variant, then times all (variant, threads) cases interleaved, each
    with `timing`'s warm-up and timed calls; with `onnxruntime`, each fp32 and
    dynamic_int8 variant also as ONNX run by ONNX Runtime, in the same rounds (its
    threads spinning between runs, its default, unless `onnxruntime_spinning` is False).

    Returns one record per case: runtime ("litert" or "onnxruntime"), model,
    normalization_type, hidden_act, precision, threads, seq_length, batch_size,
    median_ms, min_ms, max_ms, repeats, size_bytes, params, tflite (or onnx: the file),
    relative_error_vs_keras (`relative_error` on the timed input), op_counts, load_1min
    (the 1-minute load average when the timing ended: above the core count, other work
    shared the CPU). Ratios between runtimes: `runtime_ratios`.
    """

    if onnxruntime:
        onnx.require_onnx()
    exported, features = {}, {}
    for v in variant_list:
        log(f"export {v.key} (seq {seq_length}) ...")
        features[v.key] = random_features(1, seq_length, v.config.vocab_size, pad_fraction=0.0)
        exported[v.key] = export_variant(v, workdir, seq_length, features[v.key], onnxruntime)
    runners, meta = {}, {}
    for v in variant_list:
        f, done = features[v.key], exported[v.key]
        for n in threads:
            models = [("litert", TFLiteModel(done["path"], num_threads=n))]
            if "onnx_path" in done:
                session = onnx.OnnxModel(done["onnx_path"], n, spinning=onnxruntime_spinning)
                models.append(("onnxruntime", session))
            for runtime, model in models:
                case = f"{runtime}/{v.key}/{n}"
                runners[case] = lambda m=model, f=f: m.runner(**f)
                onnx_file = runtime == "onnxruntime"
                meta[case] = {
                    "runtime": runtime,
                    "model": v.model,
                    "normalization_type": v.config.normalization_type,
                    "hidden_act": v.config.hidden_act,
                    "precision": v.precision,
                    "threads": n,
                    "seq_length": seq_length,
                    "batch_size": 1,
                    "size_bytes": done["onnx_size_bytes" if onnx_file else "size_bytes"],
                    "params": done["params"],
                    ("onnx" if onnx_file else "tflite"): done["onnx_path" if onnx_file else "path"],
                    "relative_error_vs_keras": relative_error(model.runner(**f), done["keras"]),
                    "op_counts": dict(sorted(model.op_counts().items())),
                }
    log(
        f"timing {len(runners)} cases interleaved: {timing.warmup} warm-up + "
        f"{timing.repeats} timed rounds"
    )
    timings = interleaved_timings(runners, repeats=timing.repeats, warmup=timing.warmup)
    load = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
    records = []
    for case, t in timings.items():
        records.append(
            {
                **meta[case],
                "median_ms": round(t.median_ms, 3),
                "min_ms": round(t.min_ms, 3),
                "max_ms": round(t.max_ms, 3),
                "repeats": t.repeats,
                "load_1min": load,
            }
        )
    return records


def _pick(records, model, threads, precision=None, config=None):
    """LiteRT's records of `model` at `threads`, with the preset's own norm/act if `config`
    is given."""
    return [
        r
        for r in records
        if r.get("runtime", "litert") == "litert"
        and r["model"] == model
        and r["threads"] == threads
        and (precision is None or r["precision"] == precision)
        and (
            config is None
            or (r["normalization_type"], r["hidden_act"])
            == (config.normalization_type, config.hidden_act)
        )
    ]


def summarize(records: Sequence[dict]) -> list[dict]:
    """The paper's ratios for each (MobileBERT-shaped model, baseline, threads) in `records`.

    latency_ratio_fp32: baseline fp32 / model fp32 medians (paper: 342 / 62 = 5.5 on a
    Pixel 4); latency_ratio_fp32_min: the same from the fastest runs, the better
    estimate when other processes load the CPU;
    fastest_speedup: baseline fp32 / the model's fastest precision (its own norm/act);
    size_ratio_fp32 / size_ratio_dynamic_int8: baseline / model .tflite bytes (paper: 4.3).
    """
    rows = []
    for model, (config, baseline) in MODELS.items():
        if baseline is None:
            continue
        base_config = MODELS[baseline][0]
        for n in sorted({r["threads"] for r in records}):
            base = _pick(records, baseline, n, "fp32", base_config)
            own = _pick(records, model, n, config=config)
            fp32 = [r for r in own if r["precision"] == "fp32"]
            if not (base and fp32):
                continue
            fastest = min(own, key=lambda r: r["median_ms"])
            row = {
                "model": model,
                "baseline": baseline,
                "threads": n,
                "model_fp32_ms": fp32[0]["median_ms"],
                "baseline_fp32_ms": base[0]["median_ms"],
                "latency_ratio_fp32": base[0]["median_ms"] / fp32[0]["median_ms"],
                "latency_ratio_fp32_min": base[0]["min_ms"] / fp32[0]["min_ms"],
                "fastest_precision": fastest["precision"],
                "fastest_ms": fastest["median_ms"],
                "fastest_speedup": base[0]["median_ms"] / fastest["median_ms"],
                "size_ratio_fp32": base[0]["size_bytes"] / fp32[0]["size_bytes"],
            }
            base_dyn = _pick(records, baseline, n, "dynamic_int8", base_config)
            own_dyn = [r for r in own if r["precision"] == "dynamic_int8"]
            if base_dyn and own_dyn:
                row["size_ratio_dynamic_int8"] = (
                    base_dyn[0]["size_bytes"] / own_dyn[0]["size_bytes"]
                )
            rows.append(row)
    return rows


def runtime_ratios(records: Sequence[dict]) -> list[dict]:
    """ONNX Runtime against LiteRT on the same encoder, precision and threads: each row's
    onnxruntime_over_litert is ONNX Runtime's median / LiteRT's (below 1: ONNX Runtime is
    faster), with both medians and the two sizes."""
    litert = {_case(r): r for r in records if r.get("runtime", "litert") == "litert"}
    rows = []
    for r in records:
        base = litert.get(_case(r)) if r.get("runtime") == "onnxruntime" else None
        if base is not None:
            rows.append(
                {
                    **dict(zip(("model", "norm", "act", "precision", "threads"), _case(r))),
                    "litert_ms": base["median_ms"],
                    "onnxruntime_ms": r["median_ms"],
                    "onnxruntime_over_litert": r["median_ms"] / base["median_ms"],
                    "litert_bytes": base["size_bytes"],
                    "onnxruntime_bytes": r["size_bytes"],
                }
            )
    return rows


def _case(r: dict) -> tuple:
    return (r["model"], r["normalization_type"], r["hidden_act"], r["precision"], r["threads"])


def format_report(records: Sequence[dict]) -> str:
    """Every case (sorted), then the ratios beside the paper's."""

    lines = [
        f"{'runtime':<13}{'model':<17}{'norm':<11}{'act':<6}{'precision':<13}{'thr':>4}"
        f"{'median ms':>11}{'min ms':>9}{'MB':>9}"
    ]
    for r in sorted(records, key=lambda r: (*_case(r), r.get("runtime", "litert"))):
        lines.append(
            f"{r.get('runtime', 'litert'):<13}{r['model']:<17}{r['normalization_type']:<11}"
            f"{r['hidden_act']:<6}{r['precision']:<13}{r['threads']:>4}{r['median_ms']:>11.2f}"
            f"{r['min_ms']:>9.2f}{r['size_bytes'] / 1e6:>9.2f}"
        )
    lines.append("")
    lines.append(
        f"ratios (paper, Pixel 4, 4 threads: latency {paper.FASTER_THAN_BERT_BASE}x, "
        f"size {paper.SMALLER_THAN_BERT_BASE}x)"
    )
    for s in summarize(records):
        dyn = s.get("size_ratio_dynamic_int8")
        lines.append(
            f"  {s['baseline']} / {s['model']}, {s['threads']} thread(s): "
            f"fp32 latency {s['latency_ratio_fp32']:.2f}x "
            f"({s['baseline_fp32_ms']:.1f} / {s['model_fp32_ms']:.1f} ms; by min "
            f"{s['latency_ratio_fp32_min']:.2f}x); "
            f"fastest ({s['fastest_precision']}) {s['fastest_speedup']:.2f}x; "
            f"size fp32 {s['size_ratio_fp32']:.2f}x" + (f", dynamic_int8 {dyn:.2f}x" if dyn else "")
        )
    ratios = runtime_ratios(records)
    if ratios:
        lines += ["", "ONNX Runtime / LiteRT, same encoder (below 1: ONNX Runtime is faster)"]
    for r in ratios:
        lines.append(
            f"  {r['model']} {r['precision']}, {r['threads']} thread(s): "
            f"{r['onnxruntime_over_litert']:.2f}x ({r['onnxruntime_ms']:.1f} / "
            f"{r['litert_ms']:.1f} ms)"
        )
    return "\n".join(lines)
