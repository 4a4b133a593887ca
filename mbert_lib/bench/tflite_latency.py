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

import tf_keras

from mbert_lib import paper
from mbert_lib.bench.timing import interleaved_timings
from mbert_lib.config import MobileBertConfig, get_preset
from mbert_lib.export import tflite
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


def export_variant(variant: Variant, workdir: str, seq_length: int, seed: int = 0) -> dict:
    """Writes (or reuses) the variant's .tflite; returns {path, size_bytes, params}.

    The file name carries a hash of config, precision and seq_length, so a
    kept workdir is reused only for the same export.
    """

    tag = hashlib.sha1(
        (variant.config.to_json_string() + variant.precision + str(seq_length)).encode()
    ).hexdigest()[:8]
    path = os.path.join(workdir, f"{variant.key}_T{seq_length}_{tag}.tflite")
    tf_keras.utils.set_random_seed(seed)
    encoder = build_encoder(variant.config, seq_length)
    params = count_params(encoder)
    if not os.path.exists(path):
        tflite.export_tflite(encoder, path, variant.precision, seq_length)
    del encoder
    gc.collect()
    return {"path": path, "size_bytes": os.path.getsize(path), "params": params}


def measure(
    variant_list: Sequence[Variant],
    workdir: str,
    seq_length: int = 128,
    threads: Sequence[int] = (1, 2),
    repeats: int = 30,
    warmup: int = 5,
    log=print,
) -> list[dict]:
    """Exports every variant, then times all (variant, threads) cases interleaved.

    Returns one record per case: model, normalization_type, hidden_act,
    precision, threads, seq_length, batch_size, median_ms, min_ms, max_ms,
    repeats, size_bytes, params, tflite, op_counts, load_1min (the 1-minute load
    average when the timing ended: above the core count, other work shared the CPU).
    """

    exported = {}
    for v in variant_list:
        log(f"export {v.key} (seq {seq_length}) ...")
        exported[v.key] = export_variant(v, workdir, seq_length)
    runners, meta = {}, {}
    for v in variant_list:
        features = random_features(1, seq_length, v.config.vocab_size, pad_fraction=0.0)
        for n in threads:
            model = TFLiteModel(exported[v.key]["path"], num_threads=n)
            case = f"{v.key}/{n}"
            runners[case] = lambda m=model, f=features: m.runner(**f)
            meta[case] = (v, n, dict(sorted(model.op_counts().items())))
    log(f"timing {len(runners)} cases interleaved: {warmup} warm-up + {repeats} timed rounds")
    timings = interleaved_timings(runners, repeats=repeats, warmup=warmup)
    load = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
    records = []
    for case, timing in timings.items():
        v, n, ops = meta[case]
        records.append(
            {
                "model": v.model,
                "normalization_type": v.config.normalization_type,
                "hidden_act": v.config.hidden_act,
                "precision": v.precision,
                "threads": n,
                "seq_length": seq_length,
                "batch_size": 1,
                "median_ms": round(timing.median_ms, 3),
                "min_ms": round(timing.min_ms, 3),
                "max_ms": round(timing.max_ms, 3),
                "repeats": timing.repeats,
                "size_bytes": exported[v.key]["size_bytes"],
                "params": exported[v.key]["params"],
                "tflite": exported[v.key]["path"],
                "op_counts": ops,
                "load_1min": load,
            }
        )
    return records


def _pick(records, model, threads, precision=None, config=None):
    """Records of `model` at `threads`, with the preset's own norm/act if `config` is given."""
    return [
        r
        for r in records
        if r["model"] == model
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


def format_report(records: Sequence[dict]) -> str:
    """Every case (sorted), then the ratios beside the paper's."""

    lines = [
        f"{'model':<17}{'norm':<11}{'act':<6}{'precision':<13}{'thr':>4}"
        f"{'median ms':>11}{'min ms':>9}{'MB':>9}"
    ]
    for r in sorted(
        records,
        key=lambda r: (
            r["model"],
            r["threads"],
            r["precision"],
            r["normalization_type"],
            r["hidden_act"],
        ),
    ):
        lines.append(
            f"{r['model']:<17}{r['normalization_type']:<11}{r['hidden_act']:<6}"
            f"{r['precision']:<13}{r['threads']:>4}{r['median_ms']:>11.2f}"
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
    return "\n".join(lines)
