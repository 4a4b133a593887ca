"""The knowledge-transfer steps of `python -m mbert_lib reproduce` (settings: recipes/*.yaml).

    pkt                    the main student: progressive transfer (FMT + AT per layer), then PD
    jkt, akt               paper Table 8: joint and auxiliary transfer, same number of steps
    no_transfer            paper Table 9, "bare" row: MLM + NSP only, no teacher at all
                           (the student without transfer everywhere in the project)
    ablation_copy          not in the paper: no_transfer + the embedding and MLM head
                           copied from the teacher (what +PD also has)
    ablation_pd            Table 9 "+PD": ablation_copy + the teacher's MLM distribution
                           in the loss (pre-training distillation)
    ablation_pd_fmt        Table 9 "+PD+FMT": PKT without attention transfer, then PD
                           (Table 9's "+PD+FMT+AT" row is `pkt` itself)
    ablation_fmt_at        not in the paper: PKT's layer-wise stages without the PD stage
    transfer               did each objective do its job? <out>/pkt/transfer.json: every
                           layer's AT KL, eq. 1 MSE and feature spread around its own
                           stage, its attention sharpness, and the final AT KL of pkt
                           against ablation_pd_fmt (the same run without AT), on one
                           held-out batch (`mbert_lib.distill.transfer_summary`)

A full run trains pkt, no_transfer and ablation_pd_fmt (MAIN_ROWS); the rows that
only fill Tables 8 and 9 are optional steps, run when named (notebook 06 names them):

    python -m mbert_lib reproduce --data-dir ../shared/data \
        --steps jkt,akt,ablation_copy,ablation_pd,ablation_fmt_at,report

Each Table 9 row differs from the one above it in one thing: no_transfer →
ablation_copy (copy_embeddings) → ablation_pd (α < 1: knowledge distillation) →
ablation_pd_fmt (layer-wise FMT stages) → pkt (AT in those stages). Every run
but ablation_fmt_at makes the same number of student updates (rows without
layer-wise stages spend them all in PD); each writes a model directory
under runs/<recipe>/<step> and records its held-out MLM accuracy,
perplexity and NSP accuracy (on the held-out split of the pre-training data)
in its step result. Settings (experiments/recipes/<recipe>.yaml) name an
experiment yaml and dotted overrides.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from mbert_lib import atomic, strict_json
from mbert_lib.checkpoints import CONFIG_FILE, load_pretrainer
from mbert_lib.config_tree import apply_overrides
from mbert_lib.data import make_pretraining_dataset
from mbert_lib.distill.trainer import run_distillation
from mbert_lib.distill.transfer_summary import summarize_run
from mbert_lib.experiment import ModelSection
from mbert_lib.experiment.distill import load_distill_experiment
from mbert_lib.paired import paired_difference
from mbert_lib.pipeline.core import Context, Step
from mbert_lib.pipeline.steps import data_overrides, shipped_teacher
from mbert_lib.pipeline.teacher_choice import shipped_dir
from mbert_lib.runtime import REPO_ROOT
from mbert_lib.train.evaluation import mlm_correct

HEADLINE = ("mlm_accuracy", "perplexity", "nsp_accuracy", "mlm_loss")


def load_distill_step_experiment(ctx: Context, settings: Mapping[str, Any]):
    """The yaml a distillation step names, with the data step's and the step's overrides."""

    pairs = []
    for key, value in data_overrides(ctx):
        if key == "model.overrides.vocab_size":
            pairs += [
                ("teacher.overrides.vocab_size", value),
                ("student.overrides.vocab_size", value),
            ]
        else:
            pairs.append((key, value))
    experiment = load_distill_experiment(REPO_ROOT / settings["config_file"])
    experiment = apply_overrides(experiment, pairs + list(settings["overrides"].items()))
    if shipped_teacher(ctx):  # the teacher is what was shipped, whatever the yaml's shape
        config = shipped_dir(ctx.settings["teacher"]) / CONFIG_FILE
        teacher = ModelSection(preset=None, bert_config_file=str(config))
        experiment = dataclasses.replace(experiment, teacher=teacher)
    return experiment


def _runner(name: str):
    def run(ctx: Context, settings: Mapping[str, Any]) -> dict:

        experiment = load_distill_step_experiment(ctx, settings)
        done = run_distillation(
            experiment,
            ctx.step_dir("teacher"),
            ctx.step_dir(name),
            show_progress=ctx.show_progress,
            log=ctx.log,
        )
        metrics = done.get("eval") or {}
        ctx.log(
            f"{name}: held-out "
            + ", ".join(f"{k} {metrics[k]:.4g}" for k in HEADLINE if k in metrics)
        )
        return {
            "model_dir": str(ctx.step_dir(name)),
            "strategy": experiment.distillation.strategy,
            "description": settings["description"],
            "train_steps": done.get("train_steps"),
            "eval": metrics,
            "stages": [
                {k: s[k] for k in ("stage", "train_steps", "seconds") if k in s}
                for s in done.get("stages", [])
            ],
        }

    return run


_ROWS = [
    (
        "no_transfer",
        "no knowledge transfer: MLM + NSP pre-training only (Table 9)",
        "experiments/distill_tiny_pkt.yaml",
        {
            "distillation.strategy": "none",
            "distillation.copy_embeddings": False,
            "distillation.pretrain.distill_ground_truth_ratio": 1.0,
        },
    ),
    (
        "pkt",
        "progressive knowledge transfer (FMT + AT per layer), then PD: the main student",
        "experiments/distill_tiny_pkt.yaml",
        {},
    ),
    (
        "jkt",
        "joint knowledge transfer (all layers' FMT + AT together), then PD (Table 8)",
        "experiments/distill_tiny_jkt.yaml",
        {},
    ),
    (
        "akt",
        "auxiliary knowledge transfer (FMT + AT + PD in one loss) (Table 8)",
        "experiments/distill_tiny_akt.yaml",
        {},
    ),
    (
        "ablation_copy",
        "no transfer, but the embedding and MLM head copied from the teacher (not in the paper)",
        "experiments/distill_tiny_pkt.yaml",
        {"distillation.strategy": "none", "distillation.pretrain.distill_ground_truth_ratio": 1.0},
    ),
    (
        "ablation_pd",
        "pre-training distillation only (Table 9 +PD)",
        "experiments/distill_tiny_pkt.yaml",
        {"distillation.strategy": "none"},
    ),
    (
        "ablation_pd_fmt",
        "PKT with FMT only, then PD (Table 9 +PD+FMT)",
        "experiments/distill_tiny_pkt.yaml",
        {"distillation.layer_wise.use_attention": False},
    ),
    (
        "ablation_fmt_at",
        "PKT's layer-wise stages (FMT + AT) without PD (not in the paper)",
        "experiments/distill_tiny_pkt.yaml",
        {"distillation.pretrain.steps": 0},
    ),
]

TRANSFER_FILE = "transfer.json"


def run_gate(ctx: Context, settings: Mapping[str, Any]) -> dict:
    """Is there anything to transfer? The teacher against the untaught student (no_transfer)
    on the held-out MLM targets, paired target by target (`mbert_lib.paired`)."""

    def hits(step: str) -> np.ndarray:
        batches = make_pretraining_dataset(
            ctx.result("data")["examples_dir"], settings["batch_size"], split="eval"
        )
        return mlm_correct(load_pretrainer(ctx.result(step)["model_dir"]), batches)

    teacher, student = hits("teacher"), hits("no_transfer")
    d = paired_difference(teacher.astype(np.float64), student.astype(np.float64))
    lead = (
        f"{100 * d.mean:+.2f} points (95 % CI {100 * d.low:+.2f} to {100 * d.high:+.2f}, "
        f"s.e. {100 * d.se:.2f}, {len(teacher):,} held-out MLM targets)"
    )
    accuracies = f"{100 * teacher.mean():.2f} % against {100 * student.mean():.2f} %"
    text = (
        f"the teacher beats the untaught student, {accuracies}: {lead}; there is something "
        "to transfer"
        if d.verdict == "beats"
        else f"the teacher does NOT beat the untaught student, {accuracies}: {lead}. There "
        "is nothing to transfer: what the distilled students gain or lose below is not the "
        "teacher's knowledge"
    )
    ctx.log(f"teacher gate: {text}")
    return {
        "verdict": d.verdict,
        "teacher_mlm_accuracy": float(teacher.mean()),
        "untaught_mlm_accuracy": float(student.mean()),
        "difference": d.to_dict(),
        "predictions": int(len(teacher)),
        "text": text,
    }


def run_transfer(ctx: Context, settings: Mapping[str, Any]) -> dict:

    batch = next(
        iter(
            make_pretraining_dataset(
                ctx.result("data")["examples_dir"], settings["batch_size"], split="eval"
            )
        )
    )
    summary = summarize_run(
        ctx.step_dir("pkt"),
        load_pretrainer(ctx.step_dir("teacher")),
        batch,
        ablation_dir=ctx.step_dir("ablation_pd_fmt"),
    )
    path = ctx.step_dir("pkt") / TRANSFER_FILE
    atomic.write_text(path, strict_json.dumps(summary, indent=2) + "\n")
    for row in summary["layers"]:
        ctx.log(
            f"transfer: layer {row['layer']}: AT {row['at_before']:.3f} -> "
            f"{row['at_after']:.3f}, MSE {row['mse_before']:.3f} -> {row['mse_after']:.3f}, "
            f"max prob {row['max_prob_after'] / row['max_prob_uniform']:.1f}x uniform"
        )
    ctx.log(f"transfer: aims {summary['targets']}")
    return {"path": str(path), **summary}


ROW_NAMES = tuple(name for name, *_ in _ROWS)
# What a full run needs: the main student, its run without AT (the transfer step's
# ablation), the student without transfer and the copy-only student (the payoff's
# comparisons, steps_payoff.py). The other rows only fill Tables 8 and 9: optional, like
# their extra seeds (steps_seeds.py).
MAIN_ROWS = ("pkt", "no_transfer", "ablation_copy", "ablation_pd_fmt")
STEPS = [
    Step(name, title, _runner(name), ("teacher",), optional=name not in MAIN_ROWS)
    for name, title, _, _ in _ROWS
]
STEPS.insert(
    1,
    Step(
        "teacher_gate",
        "the teacher gate: does the teacher beat the untaught student on held-out MLM?",
        run_gate,
        ("data", "teacher", "no_transfer"),
    ),
)
STEPS.append(
    Step(
        "transfer",
        "each layer around its own stage, and the AT ablation",
        run_transfer,
        ("data", "teacher", "pkt", "ablation_pd_fmt"),
    )
)
