"""The deployment sections of REPORT.md (Table 6, Table 7, the latency and size ratios) as
markdown, from the `tflite` and `latency` step records (tables in mbert_lib.tables)."""

from __future__ import annotations

import os

import pandas as pd

from mbert_lib import paper
from mbert_lib.anatomy.flops import flops
from mbert_lib.config import PRESETS, get_preset
from mbert_lib.report import run
from mbert_lib.report.markdown import not_run, table
from mbert_lib.step_records import Records, result
from mbert_lib.tables import speed_size
from mbert_lib.tables.table6_quantization import table6_with_targets
from mbert_lib.tables.table7_norm_act import table7_by_threads

RATIO_COLUMNS = {
    "model_fp32_ms": "model fp32 (ms)",
    "baseline_fp32_ms": "baseline fp32 (ms)",
    "latency_ratio_fp32": "baseline / model, fp32 medians",
    "latency_ratio_fp32_min": "same, fastest runs",
    "fastest_precision": "fastest precision",
    "fastest_ms": "fastest (ms)",
    "fastest_speedup": "baseline fp32 / fastest",
    "size_ratio_fp32": "size ratio fp32",
    "size_ratio_dynamic_int8": "size ratio dynamic_int8",
}


def table6_section(records: Records) -> str:
    tflite = result(records, "tflite")
    if tflite is None:
        return not_run("tflite", "TFLite export and quantization")
    frame = table6_with_targets(tflite)
    smaller = frame[frame["precision"] != "fp32"].dropna(subset=["fp32 size / size"])
    ours = ", ".join(
        f"{m} {p} {r:.2f}×"
        for m, p, r in zip(smaller["model"], smaller["precision"], smaller["fp32 size / size"])
    )
    return "\n\n".join(
        [
            f"Task {tflite['task']}, seq {tflite.get('seq_length')}; the LiteRT interpreter on the "
            "dev set beside the Keras model.",
            table(frame),
            f"Paper: {paper.TABLE6_FINDING}; its per-task numbers are not confirmed, so only the "
            "claim is compared. Ours, "
            f"fp32 size / size: {ours or 'no quantized variant exported'}.",
        ]
    )


def _load_note(records: Records, step: str) -> str:
    """The 1-minute load when `step` started and ended (or, failing that, the per-record
    `load_1min` of its result's records), and whether that means a busy CPU."""
    times = run.wall_time_table({step: records[step]}, os.cpu_count() or 1).iloc[0]
    if times["load at start"] is None or pd.isna(times["load at start"]):
        loads = [
            r["load_1min"]
            for r in (result(records, step) or {}).get("records", [])
            if r.get("load_1min") is not None
        ]
        if not loads:
            return f"The `{step}` record has no load average (made before loads were recorded)."
        threshold = run.busy_threshold(records[step].get("cpu_count") or os.cpu_count() or 1)
        return (
            f"1-minute load average during `{step}` (per measurement): {min(loads):g} to "
            f"{max(loads):g}: "
            + (
                "**busy machine**, other work competed for the CPU; "
                "these times are inflated, compare ratios only."
                if max(loads) > threshold
                else "quiet enough."
            )
        )
    return (
        f"1-minute load average when `{step}` started / ended: {times['load at start']:g} / "
        f"{times['load at end']:g}: "
        + (
            "**busy machine**, other work competed for the "
            "CPU; these times are inflated, compare ratios "
            "only."
            if times["busy machine"] == "yes"
            else "quiet enough."
        )
    )


def _throughput(recs) -> str:
    """Matmul GFLOP/s the fp32 encoders reached (FLOPs of their presets, mbert_lib.anatomy):
    a check that the times are physically plausible for the CPU."""

    parts = []
    for r in recs:
        if r["precision"] == "fp32" and r["model"] in PRESETS:
            config = get_preset(r["model"])
            if (config.normalization_type, config.hidden_act) == (
                r["normalization_type"],
                r["hidden_act"],
            ):
                gflop = flops(config, int(r["seq_length"])) / 1e9
                parts.append(
                    f"{r['model']} {r['threads']} thread(s): {gflop:.2f} GFLOP in "
                    f"{r['median_ms']:g} ms = {gflop / r['median_ms'] * 1e3:.0f} GFLOP/s"
                )
    return (
        (
            "Matmul throughput of the fp32 encoders (FLOPs from `mbert_lib.anatomy`): "
            + "; ".join(parts)
            + "."
        )
        if parts
        else ""
    )


def _latency_records(records: Records) -> list | None:
    latency = result(records, "latency")
    return None if latency is None else latency.get("records", [])


def table7_section(records: Records) -> str:
    recs = _latency_records(records)
    if recs is None:
        return not_run("latency", "TFLite latency benchmark")
    frame = table7_by_threads(recs)
    if frame is None:
        return "_not run: the latency records hold no complete norm × activation grid._"
    model = frame["model"].iloc[0]
    return "\n\n".join(
        [
            f"Model `{model}`, fp32, seq {recs[0].get('seq_length')}, batch 1, median of "
            f"{recs[0].get('repeats', '?')} runs:",
            table(frame.drop(columns="model"), decimals=2),
            _load_note(records, "latency"),
        ]
    )


def ratios_section(records: Records) -> str:
    recs = _latency_records(records)
    if recs is None:
        return not_run("latency", "TFLite latency benchmark")
    frame = speed_size.ratios(recs)
    if frame.empty:
        return "_not run: the latency records hold no model/baseline pair._"
    goals = speed_size.targets_summary(frame, result(records, "tflite"))
    lines = [
        table(frame.rename(columns=RATIO_COLUMNS), decimals=2),
        f"Paper (Pixel 4, 4 threads): {paper.FASTER_THAN_BERT_BASE}× faster, "
        f"{paper.SMALLER_THAN_BERT_BASE}× smaller than BERT_BASE.",
        _throughput(recs),
    ]
    lines.append(_load_note(records, "latency"))
    if goals.empty:
        lines.append(
            "The project's latency targets (paper-size `mobilebert` vs `bert_base`, 2 threads): "
            "not applicable, these records are of other models."
        )
    else:
        lines += ["The project's latency targets (2 threads):", table(goals)]
    return "\n\n".join(lines)
