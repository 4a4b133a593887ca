"""A fake run directory for tests/test_report_*.py: step records in the pipeline's format
(data, teacher, distillation rows, baselines, finetune, tflite, latency) with known numbers."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

FINETUNE_VALUES = {
    "teacher": [0.84, 0.86, 0.85],
    "pkt": [0.81, 0.83, 0.86],
    "no_transfer": [0.78, 0.80, 0.79],
    "bert_baseline": [0.77],
    "jkt": [0.82],
}
PARAMS = {
    "teacher": 4_000_000,
    "pkt": 556_160,
    "no_transfer": 556_160,
    "bert_baseline": 558_256,
    "jkt": 556_160,
}
DISTILL = {
    "pkt": 0.3012,
    "jkt": 0.2950,
    "akt": 0.2950,
    "no_transfer": 0.2001,
    "ablation_copy": 0.2300,
    "ablation_pd": 0.2500,
    "ablation_pd_fmt": 0.2900,
    "ablation_fmt_at": 0.1000,
}
PREDICTIONS = 12_386
TRANSFER = {
    "layers": [
        {
            "layer": k,
            "teacher_layer": k,
            "at_before": 0.9,
            "at_after": 0.3,
            "mse_before": 2.0,
            "mse_after": 0.5,
            "spread_before": 0.2,
            "spread_after": 0.8,
            "spread_teacher": 1.3,
            "max_prob_after": 0.2,
            "max_prob_uniform": 0.02,
            "at_final": 0.35,
        }
        for k in range(4)
    ],
    "ablation_at_kl": {"with_at": 0.35, "without_at": 0.8},
    "targets": {
        "at_halves": True,
        "mse_halves": True,
        "peaked_3x": True,
        "spread_toward_teacher": True,
        "ablation_2x": True,
    },
}
# The payoff step's result: per-seed lists in one seed order (results/payoff.json's schema).
PAYOFF = {
    "task": "sst2",
    "train_sentences": 67349,
    "teacher": {"source": "shipped", "mlm_accuracy": 0.33, "gate": "beats"},
    "mlm": {
        "pkt": [0.301, 0.305, 0.303],
        "copy_only": [0.281, 0.287, 0.284],
        "no_transfer": [0.081, 0.079, 0.082],
    },
    "label_budget": {
        "500": {
            "teacher": [0.71, 0.70, 0.73, 0.72, 0.70],
            "pkt": [0.66, 0.65, 0.68, 0.66, 0.64],
            "copy_only": [0.64, 0.65, 0.66, 0.63, 0.64],
            "no_transfer": [0.58, 0.60, 0.61, 0.57, 0.59],
        }
    },
    "task_distillation": {
        "labels": 1000,
        "temperature": 2.0,
        "teacher": [0.80] * 3,
        "labels_only": [0.66, 0.68, 0.67],
        "soft_labels": [0.78, 0.77, 0.785],
        "pseudo_labels": [0.76, 0.765, 0.77],
    },
    "attention": [
        {
            "layer": 0,
            "distance": "js",
            "before": 0.30,
            "after_stage": 0.05,
            "final": 0.08,
            "untrained": 0.30,
            "final_without_at": 0.25,
        }
    ],
}
SECONDS = {"data": 20.0, "teacher": 600.0, "pkt": 300.0, "finetune": 420.0}
# latency: (model, norm, act, precision, threads) -> (median_ms, min_ms, size_bytes)
LATENCY = {
    ("mobilebert", "no_norm", "relu", "fp32", 2): (46.0, 44.0, 97_000_000),
    ("mobilebert", "no_norm", "relu", "dynamic_int8", 2): (30.0, 29.0, 26_000_000),
    ("mobilebert", "layer_norm", "gelu", "fp32", 2): (80.0, 78.0, 97_000_000),
    ("mobilebert", "layer_norm", "relu", "fp32", 2): (70.0, 69.0, 97_000_000),
    ("mobilebert", "no_norm", "gelu", "fp32", 2): (55.0, 54.0, 97_000_000),
    ("bert_base", "layer_norm", "gelu", "fp32", 2): (176.0, 170.0, 434_000_000),
    ("bert_base", "layer_norm", "gelu", "dynamic_int8", 2): (120.0, 118.0, 110_000_000),
}
TFLITE = {
    "task": "sst2",
    "source": "local",
    "seq_length": 64,
    "models": {
        "pkt": {
            "keras_accuracy": 0.8200,
            "variants": {
                "fp32": {
                    "accuracy": 0.8200,
                    "max_abs_logit_diff": 5e-5,
                    "size_bytes": 2_400_000,
                    "path": "x",
                },
                "dynamic_int8": {
                    "accuracy": 0.8050,
                    "max_abs_logit_diff": 0.2,
                    "size_bytes": 800_000,
                    "path": "x",
                },
                "float16": {
                    "accuracy": 0.8190,
                    "max_abs_logit_diff": 0.01,
                    "size_bytes": 1_200_000,
                    "path": "x",
                },
                "int8": {"error": "FULLY_CONNECTED: int8 unsupported here"},
            },
        }
    },
}


def _write(
    out: Path,
    step: str,
    result: dict,
    seconds: float = 10.0,
    load=((1.0, 1.0, 1.0), (1.5, 1.0, 1.0)),
) -> None:
    directory = out / step
    directory.mkdir(parents=True, exist_ok=True)
    record = {
        "step": step,
        "title": step,
        "result": result,
        "seconds": seconds,
        "fingerprint": "f" * 16,
        "settings": {"seed": 12345} if step == "data" else {},
        "finished": "2026-11-29 15:00:00",
        "load_average": {"start": list(load[0]), "end": list(load[1])},
        "cpu_count": 2,
    }
    (directory / "step.json").write_text(json.dumps(record))


def make_run(out: Path, steps=None) -> Path:
    """Writes the records of `steps` (default: all) under `out`; returns `out`."""
    everything = [
        "data",
        "teacher",
        *DISTILL,
        "transfer",
        "teacher_gate",
        "label_budget",
        "payoff",
        "bert_baseline",
        "finetune",
        "tflite",
        "latency",
    ]
    steps = everything if steps is None else steps
    for step in steps:
        _write(
            out,
            step,
            _result(out, step),
            SECONDS.get(step, 10.0),
            ((5.0, 4.0, 3.0), (4.0, 4.0, 3.0))
            if step == "teacher"
            else ((1.0, 1.0, 1.0), (1.5, 1.0, 1.0)),
        )
    return out


def _result(out: Path, step: str) -> dict:
    """The result `step` records in a run under `out` (the data step's also writes its
    manifest and sources beside it); KeyError for a step the fixture does not know."""
    if step in DISTILL:
        return _distill_result(out, step)
    return _RESULTS[step](out, step)


def _data_result(out: Path, step: str) -> dict:
    """The data step's result; writes the examples' manifest and the corpus' sources."""
    examples = out / "data" / "examples"
    examples.mkdir(parents=True, exist_ok=True)
    (examples / "manifest.json").write_text(
        json.dumps(
            {
                "corpus": "local-wikitext-2+sst2",
                "key": {
                    "train_text_sha256": "aa" * 32,
                    "heldout_text_sha256": "bb" * 32,
                    "tokenizer_sha256": "cc" * 32,
                },
            }
        )
    )
    (out / "data" / "corpus").mkdir(exist_ok=True)
    (out / "data" / "corpus" / "sources.json").write_text(
        json.dumps(
            {
                "files": [
                    {
                        "name": "/d/wikitext-2/valid.txt",
                        "size_bytes": 1121681,
                        "sha256": "ee" * 32,
                        "expected_sha256": "ee" * 32,
                    }
                ]
            }
        )
    )
    return {
        "source": "local",
        "data_dir": "/d",
        "examples_dir": str(examples),
        "counts": {"train": 1000, "eval": 50},
    }


def _distill_result(out: Path, step: str) -> dict:
    """A distillation step's result: its MLM accuracy from DISTILL."""
    return {
        "model_dir": str(out / step),
        "train_steps": 600,
        "eval": {
            "mlm_accuracy": DISTILL[step],
            "perplexity": 100.0,
            "nsp_accuracy": 0.6,
            "predictions": PREDICTIONS,
        },
    }


def _teacher_result(out: Path, step: str) -> dict:
    """The teacher step's result: the shipped teacher."""
    return {
        "model_dir": str(out / step),
        "eval": {"mlm_accuracy": 0.35, "perplexity": 90.0},
        "source": "shipped",
        "shipped": {"train_steps": 15000, "wall_seconds": 11700.0, "hardware": "Test CPU"},
    }


def _finetune_result(out: Path, step: str) -> dict:
    """The finetune step's result: FINETUNE_VALUES per model, and akt missing."""
    return {
        "task": "sst2",
        "source": "local",
        "models": {
            **{
                m: {
                    "status": "done",
                    "metric": "accuracy",
                    "values": v,
                    "mean": statistics.mean(v),
                    "std": statistics.stdev(v) if len(v) > 1 else float("nan"),
                    "seeds": list(range(len(v))),
                    "params": PARAMS[m],
                    "train_seconds": [30.0 + i for i in range(len(v))],
                    "best_epochs": [1] * len(v),
                    "histories": [[x] for x in v],
                    "model_dirs": ["x"] * len(v),
                }
                for m, v in FINETUNE_VALUES.items()
            },
            "akt": {"status": "missing", "reason": "no finished step 'akt'"},
        },
    }


def _latency_result(out: Path, step: str) -> dict:
    """The latency step's result: one record per LATENCY entry."""
    return {
        "records_path": "x",
        "records": [
            {
                "model": m,
                "normalization_type": n,
                "hidden_act": a,
                "precision": p,
                "threads": t,
                "seq_length": 128,
                "median_ms": ms,
                "min_ms": lo,
                "size_bytes": size,
                "repeats": 30,
                "params": 24_581_888 if m == "mobilebert" else 109_482_240,
            }
            for (m, n, a, p, t), (ms, lo, size) in LATENCY.items()
        ],
    }


# step -> its result's maker (out, step) -> dict; the distillation steps: _distill_result
_RESULTS = {
    "data": _data_result,
    "transfer": lambda out, step: {"path": str(out / "pkt" / "transfer.json"), **TRANSFER},
    "teacher": _teacher_result,
    "bert_baseline": lambda out, step: {
        "model_dir": str(out / step),
        "eval": {"mlm_accuracy": 0.35, "perplexity": 90.0},
    },
    "finetune": _finetune_result,
    "tflite": lambda out, step: TFLITE,
    "payoff": lambda out, step: {"path": str(out / "payoff.json"), **PAYOFF},
    "teacher_gate": lambda out, step: {
        "verdict": "beats",
        "text": "the teacher beats the untaught student",
    },
    "label_budget": lambda out, step: {
        "task": "sst2",
        "available": 67349,
        "budgets": {},
        "opens_at": "500",
    },
    "latency": _latency_result,
}
