"""Figures of notebook 09: accuracy per precision (Table 6), size and latency vs BERT_BASE
("4.3× smaller, 5.5× faster"), and the NoNorm / relu latency grid (Table 7), from the
results of the pipeline's `tflite` and `latency` steps (tables in mbert_lib.tables).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from mbert_lib import paper
from mbert_lib.bench.tflite_latency import MODELS, TABLE7_GRID, summarize
from mbert_lib.export.quantization import dequantize, fake_quantize, quantize_weights
from mbert_lib.tables.table7_norm_act import combination_label, table7
from mbert_lib.viz import style

PRECISION_COLORS = {
    "fp32": style.OURS,
    "dynamic_int8": style.ALT,
    "float16": "#2ca02c",
    "int8": "#9467bd",
}


def plot_table6(result: Mapping, names: Mapping[str, str] | None = None, path=None):
    """Left: dev accuracy per model and precision through the interpreter, the Keras model's
    as a black tick. Right: the largest logit difference from Keras (log scale)."""
    style.apply()
    models = list(result["models"])
    precisions = list(dict.fromkeys(p for m in models for p in result["models"][m]["variants"]))
    fig, (left, right) = plt.subplots(1, 2, figsize=(16, 5.8))
    width = 0.8 / len(precisions)
    x = np.arange(len(models))
    for k, precision in enumerate(precisions):
        centers = x + (k - (len(precisions) - 1) / 2) * width
        variants = [
            result["models"][m]["variants"].get(precision, {"error": "absent"}) for m in models
        ]
        acc = [100 * v["accuracy"] if "error" not in v else np.nan for v in variants]
        diff = [v["max_abs_logit_diff"] if "error" not in v else np.nan for v in variants]
        color = PRECISION_COLORS.get(precision, style.GREY)
        bars = left.bar(centers, acc, width, color=color, label=precision)
        left.bar_label(
            bars,
            ["not exported" if np.isnan(a) else f"{a:.1f}" for a in acc],
            padding=3,
            fontsize=10,
            rotation=90,
        )
        # a log axis has no zero for bars to start from: one marker per value
        right.scatter(centers, diff, s=120, color=color, edgecolor="black", label=precision)
    keras = [100 * result["models"][m]["keras_accuracy"] for m in models]
    left.scatter(
        x, keras, marker="_", s=2500, color="black", linewidths=3, zorder=3, label="Keras model"
    )
    labels = [(names or {}).get(m, m) for m in models]
    left.set_xticks(x, labels)
    left.set_ylim(0, 112)  # bars start at zero
    left.set_ylabel(f"{result['task']} dev accuracy (%)")
    left.set_title(
        f"Accuracy through the LiteRT interpreter (T = {result['seq_length']})\n"
        f"paper Table 6: 8-bit, {paper.QUANTIZATION_COMPRESSION:g}× smaller, "
        '"nearly no degradation"',
        fontsize=13,
    )
    left.legend(loc="upper center", ncol=len(precisions) + 1, fontsize=11, markerscale=0.3)
    right.set_yscale("log")
    right.set_xticks(x, labels)
    right.set_ylabel("max |logit − Keras logit| over the dev set (log scale)")
    right.set_title("How far the exported logits move (not in the paper)")
    right.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    style.save(fig, path)
    return fig


def _own(records: Sequence[Mapping], model: str) -> list[Mapping]:
    config = MODELS[model][0]
    return [
        r
        for r in records
        if r["model"] == model
        and (r["normalization_type"], r["hidden_act"])
        == (config.normalization_type, config.hidden_act)
    ]


def plot_size_latency(records: Sequence[Mapping], path=None, hardware: str = "this CPU"):
    """Left: .tflite size per model and precision. Middle: median latency per model,
    precision and thread count. Right: BERT_BASE fp32 latency / each MobileBERT variant's,
    beside the paper's 5.5× (Pixel 4) and this project's 4.5× target."""
    style.apply()
    pairs = summarize(records)
    pair = next((s for s in pairs if s["model"] == "mobilebert"), pairs[0])
    model, baseline = pair["model"], pair["baseline"]
    threads = sorted({r["threads"] for r in records})
    precisions = list(dict.fromkeys(r["precision"] for r in _own(records, model)))
    fig, axes = plt.subplots(1, 3, figsize=(21, 6))
    width = 0.8 / len(precisions)
    for k, precision in enumerate(precisions):
        color = PRECISION_COLORS.get(precision, style.GREY)
        sizes = [
            next(r["size_bytes"] for r in _own(records, m) if r["precision"] == precision) / 1e6
            for m in (model, baseline)
        ]
        bars = axes[0].bar(
            np.arange(2) + (k - (len(precisions) - 1) / 2) * width,
            sizes,
            width,
            color=color,
            label=precision,
        )
        axes[0].bar_label(bars, [f"{s:.1f}" for s in sizes], padding=3)
        groups = [(m, n) for m in (model, baseline) for n in threads]
        ms = [
            next(
                r["median_ms"]
                for r in _own(records, m)
                if r["precision"] == precision and r["threads"] == n
            )
            for m, n in groups
        ]
        bars = axes[1].bar(
            np.arange(len(groups)) + (k - (len(precisions) - 1) / 2) * width,
            ms,
            width,
            color=color,
            label=precision,
        )
        axes[1].bar_label(bars, [f"{v:.0f}" if v >= 10 else f"{v:.2f}" for v in ms], padding=3)
        base = {
            n: next(
                r["median_ms"]
                for r in _own(records, baseline)
                if r["precision"] == "fp32" and r["threads"] == n
            )
            for n in threads
        }
        speed = [
            base[n]
            / next(
                r["median_ms"]
                for r in _own(records, model)
                if r["precision"] == precision and r["threads"] == n
            )
            for n in threads
        ]
        bars = axes[2].bar(
            np.arange(len(threads)) + (k - (len(precisions) - 1) / 2) * width,
            speed,
            width,
            color=color,
            label=precision,
        )
        axes[2].bar_label(bars, [f"{s:.2f}×" for s in speed], padding=3)
    axes[0].set_xticks(range(2), [model, baseline])
    axes[0].set_ylabel("size of the .tflite file (MB)")
    axes[0].set_title(
        f"Size: {baseline} / {model} = {pair['size_ratio_fp32']:.2f}× (fp32)\n"
        f"paper abstract: {paper.SMALLER_THAN_BERT_BASE:g}× (parameters)"
    )
    axes[1].set_xticks(
        range(len(groups)), [f"{m}\n{n} thread{'s' if n > 1 else ''}" for m, n in groups]
    )
    axes[1].set_ylabel("median latency (ms), batch 1")
    axes[1].set_title(
        f"Latency on {hardware}, T = {records[0]['seq_length']}\n"
        f"paper (Pixel 4, 4 threads): {paper.PIXEL4_LATENCY_MS['mobilebert']:g} vs "
        f"{paper.PIXEL4_LATENCY_MS['bert_base']:g} ms"
    )
    axes[2].axhline(
        paper.FASTER_THAN_BERT_BASE,
        color=style.PAPER,
        ls="--",
        lw=2,
        label=f"paper: {paper.FASTER_THAN_BERT_BASE:g}× (Pixel 4)",
    )
    axes[2].axhline(4.5, color=style.GREY, ls=":", lw=2, label="target fp32: 4.5×")
    axes[2].set_xticks(range(len(threads)), [f"{n} thread{'s' if n > 1 else ''}" for n in threads])
    axes[2].set_ylabel(f"{baseline} fp32 ms / {model} ms")
    axes[2].set_title(f"Speed-up over {baseline} fp32")
    axes[2].set_ylim(0, max(paper.FASTER_THAN_BERT_BASE, *axes[2].get_ylim()) * 1.2)
    for ax in axes:
        ax.set_ylim(0, ax.get_ylim()[1] * 1.15)
        ax.legend(loc="upper left")
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    style.save(fig, path)
    return fig


def plot_table7(
    records: Sequence[Mapping], model: str = "mobilebert", path=None, hardware: str = "this CPU"
):
    """Left: fp32 median latency per normalization × activation and thread count. Right:
    the ratio to LayerNorm + gelu, ours per thread count beside the paper's Pixel 4."""
    style.apply()
    table = table7(records, model)
    threads = sorted(set(table.threads))
    labels = [combination_label(n, a) for n, a in TABLE7_GRID]
    x = np.arange(len(TABLE7_GRID))
    fig, (left, right) = plt.subplots(1, 2, figsize=(17, 6))
    width = 0.8 / (len(threads) + 1)
    colors = [style.OURS, style.ALT, "#2ca02c", "#9467bd"]
    for k, n in enumerate(threads):
        rows = table[table.threads == n].set_index(["normalization", "activation"])
        ms = [rows.loc[c, "median ms"] for c in TABLE7_GRID]
        ratio = [rows.loc[c, "ratio to LN+gelu"] for c in TABLE7_GRID]
        centers = x + (k - (len(threads) - 1) / 2) * (0.8 / len(threads))
        bars = left.bar(
            centers,
            ms,
            0.8 / len(threads),
            color=colors[k % 4],
            label=f"{n} thread{'s' if n > 1 else ''}",
        )
        left.bar_label(bars, [f"{m:.1f}" if m >= 1 else f"{m:.2f}" for m in ms], padding=3)
        bars = right.bar(
            x + (k + 1 - len(threads) / 2) * width,
            ratio,
            width,
            color=colors[k % 4],
            label=f"ours, {n} thread{'s' if n > 1 else ''}",
        )
        right.bar_label(bars, [f"{r:.2f}" for r in ratio], padding=3, fontsize=11)
    base = paper.TABLE7_MS[("layer_norm", "gelu")]
    cells = [paper.TABLE7_MS[c] for c in TABLE7_GRID]
    bars = right.bar(
        x - len(threads) / 2 * width,
        [c.value / base.value for c in cells],
        width,
        color=style.PAPER,
        label="paper: Pixel 4 (Table 7)",
    )
    right.bar_label(
        bars,
        [("≈" if c.approx else "") + f"{c.value / base.value:.2f}" for c in cells],
        padding=3,
        fontsize=11,
    )
    left.set_xticks(x, labels)
    left.set_ylim(0, table["median ms"].max() * 1.25)
    left.set_ylabel("median latency (ms), fp32, batch 1")
    left.set_title(f"{model} shape on {hardware}, T = {records[0]['seq_length']} (paper Table 7)")
    right.axhline(1.0, color=style.GREY, lw=1, ls="--")
    right.set_xticks(x, labels)
    right.set_ylabel("latency / latency of LayerNorm + gelu")
    right.set_title("Relative to LayerNorm + gelu (≈: paper cell not confirmed)")
    right.set_ylim(0, max(1.0, table["ratio to LN+gelu"].max()) * 1.3)
    for ax in (left, right):
        ax.legend(loc="upper right")
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    style.save(fig, path)
    return fig


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def plot_int8_rules(
    kernel: np.ndarray, scores: Mapping[str, np.ndarray], real: int, path=None, title: str = ""
):
    """Left: the rounding error of int8 weights in units of their channel's step (uniform in
    ±½). Right: one query's attention weights over its keys in float and after its scores
    pass through int8 (range = the row's own min..max), for each masking in `scores`
    ({label: [S] scores}); the first `real` keys are real tokens, the rest padding."""

    style.apply()
    q, scale = quantize_weights(kernel)
    steps = (dequantize(q, scale) - kernel) / scale  # [in, out]
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(17, 5.8), gridspec_kw={"width_ratios": [1, 1.5]}
    )
    left.hist(steps.ravel(), bins=np.linspace(-0.6, 0.6, 49), color=style.OURS)
    for edge in (-0.5, 0.5):
        left.axvline(edge, color=style.PAPER, ls="--", lw=2)
    left.set_xlabel("(ŵ − w) / s  for every weight (s = its channel's step)")
    left.set_ylabel("weights")
    left.set_title(
        f"int8 weights, {kernel.shape[0]}×{kernel.shape[1]} kernel:\n"
        f"max |ŵ − w| = {np.max(np.abs(steps)):.3f} s ≤ s/2"
    )
    keys = np.arange(len(next(iter(scores.values()))))
    first = next(iter(scores.values()))
    right.bar(keys, _softmax(first), 0.8, color=style.GREY, alpha=0.5, label="float32 (any mask)")
    markers = ["o", "s", "^"]
    for k, (label, row) in enumerate(scores.items()):
        int8 = _softmax(fake_quantize(row, row.min(), row.max()))
        right.plot(
            keys,
            int8,
            markers[k % 3],
            ms=7,
            label=f"int8 scores, {label}",
            color=(style.OURS, style.PAPER, style.ALT)[k % 3],
        )
    right.axvspan(real - 0.5, keys[-1] + 0.5, color=style.GREY, alpha=0.12, label="padded keys")
    right.set_xlabel("key position")
    right.set_ylabel("attention weight of one query")
    right.set_title(title or "Attention through int8: the mask sets the range")
    right.legend(loc="upper right")
    fig.tight_layout()
    style.save(fig, path)
    return fig
