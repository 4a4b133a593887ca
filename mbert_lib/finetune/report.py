"""Reading a fine-tuning comparison: mean ± std tables beside the paper, the aim, the errors,
what each model got in pre-training, and how the models' mistakes overlap.

`result` is what the reproduce pipeline's `finetune` step returns: {"task",
"source", "models": {step name: {"status": "done", "values": [...], "mean",
"std", "params", "train_seconds", ...} or {"status": "missing", "reason"}}}.
Metric values are fractions; tables show them × 100.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import yaml

from mbert_lib.data.glue import GlueExample
from mbert_lib.paired import paired_difference
from mbert_lib.paper import PaperValue
from mbert_lib.train.shipped_teacher import INSTALLED_RECORD


def mean_std_text(mean: float, std: float | None, scale: float = 100.0) -> str:
    """ "83.1 ± 0.4" (std omitted when undefined, i.e. one seed: NaN, or null in a record)."""
    if std is None or math.isnan(std):
        return f"{scale * mean:.1f}"
    return f"{scale * mean:.1f} ± {scale * std:.1f}"


def results_table(
    result: Mapping,
    names: Mapping[str, str] | None = None,
    paper_rows: Sequence[tuple[str, float]] = (),
) -> pd.DataFrame:
    """One row per model (in the order of the result), then the paper's rows.

    names: step name -> what the row calls it. paper_rows: (label, value in %), the value
    a number or a `mbert_lib.paper.PaperValue` (shown with "≈" when approximate).
    """
    names = names or {}
    done = [e for e in result["models"].values() if e["status"] == "done"]
    column = f"dev {done[0]['metric'] if done else 'metric'} (mean ± std)"
    rows, empty = [], {"encoder params": "", "seeds": "", "per seed": "", "fine-tuning s/run": ""}
    for step, entry in result["models"].items():
        row = {
            "model": names.get(step, step),
            "step": step,
            **empty,
            column: "no result: the step has not run",
        }
        if entry["status"] == "done":
            row.update(
                {
                    "encoder params": f"{entry['params']:,}",
                    column: mean_std_text(entry["mean"], entry["std"]),
                    "seeds": len(entry["values"]),
                    "per seed": ", ".join(f"{100 * v:.1f}" for v in entry["values"]),
                    "fine-tuning s/run": round(float(np.mean(entry["train_seconds"])), 1),
                }
            )
        rows.append(row)
    for label, value in paper_rows:
        text = (
            ("≈" if value.approx else "") + f"{value.value:g}"
            if isinstance(value, PaperValue)
            else f"{value:g}"
        )
        rows.append({"model": label, "step": "paper", **empty, column: text})
    return pd.DataFrame(rows)[["model", "step", "encoder params", column, *list(empty)[1:]]]


def aim_check(
    result: Mapping, student: str = "pkt", teacher: str = "teacher", baseline: str = "no_transfer"
) -> dict:
    """Does the order teacher > student > baseline hold, each model beating the next over
    the same fine-tuning seeds (`mbert_lib.paired`: seed i of one model against seed i of
    the other, its 95 % CI above zero)?
    {"status": "met" | "not met" | "cannot check", "text", "gap_to_teacher",
    "lead_over_baseline", "gaps": {"teacher − pkt": PairedDifference.to_dict() in points}}
    (gap_to_teacher = teacher − student and lead_over_baseline = student − baseline, as
    fractions of the means)."""
    models = result["models"]
    missing = [m for m in (student, teacher, baseline) if models.get(m, {}).get("status") != "done"]
    if missing:
        return {
            "status": "cannot check",
            "text": f"cannot check the aim: no fine-tuning results for {missing}",
        }
    values = {m: [100 * v for v in models[m]["values"]] for m in (student, teacher, baseline)}
    n = min(len(v) for v in values.values())
    if n < 2:
        return {
            "status": "cannot check",
            "text": f"cannot check the aim: {n} fine-tuning seed(s) per model; pairing needs 2",
        }
    gaps = {
        f"{high} − {low}": paired_difference(values[high][:n], values[low][:n])
        for high, low in ((teacher, student), (student, baseline))
    }
    met = all(g.verdict == "beats" for g in gaps.values())
    text = "; ".join(f"{name} = {g.describe(digits=1)} points" for name, g in gaps.items())
    text += (
        f". Aim ({teacher} > {student} > {baseline}, each beating the next over the same "
        f"seeds): {'met' if met else 'NOT met'}"
    )
    return {
        "status": "met" if met else "not met",
        "text": text,
        "gaps": {name: g.to_dict() for name, g in gaps.items()},
        "gap_to_teacher": models[teacher]["mean"] - models[student]["mean"],
        "lead_over_baseline": models[student]["mean"] - models[baseline]["mean"],
    }


def misclassified(
    examples: Sequence[GlueExample],
    labels: np.ndarray,
    probabilities: np.ndarray,
    label_names: Sequence[str],
    limit: int = 10,
) -> pd.DataFrame:
    """The `limit` most confident mistakes: text, true label, the model's probability of it."""
    labels = np.asarray(labels)
    predicted = np.argmax(probabilities, axis=-1)
    wrong = np.flatnonzero(predicted != labels)
    p_true = probabilities[np.arange(len(labels)), labels]
    order = wrong[np.argsort(p_true[wrong], kind="stable")][:limit]
    return pd.DataFrame(
        {
            "sentence": [
                examples[i].text_a + (f"  ||  {examples[i].text_b}" if examples[i].text_b else "")
                for i in order
            ],
            "true label": [label_names[labels[i]] for i in order],
            "P(true label)": np.round(p_true[order], 3),
            "predicted": [label_names[predicted[i]] for i in order],
        }
    )


def error_rates(
    correct: np.ndarray, groups: Sequence[str], order: Sequence[str] | None = None
) -> pd.DataFrame:
    """Examples, errors and error rate per group (e.g. a length bucket), groups in `order`."""
    frame = pd.DataFrame({"group": list(groups), "error": ~np.asarray(correct, bool)})
    table = frame.groupby("group")["error"].agg(["size", "sum", "mean"])
    table.columns = ["examples", "errors", "error rate"]
    if order is not None:
        table = table.reindex([g for g in order if g in table.index])
    return table.round(3)


def length_buckets(lengths: np.ndarray, seq_length: int) -> tuple[list[str], list[str]]:
    """Each example's length group (up to T/4, T/2, T tokens, or truncated: > T) and the
    groups in order."""
    edges = [seq_length // 4, seq_length // 2, seq_length]
    names = [
        f"<= {edges[0]} tokens",
        f"{edges[0] + 1}-{edges[1]}",
        f"{edges[1] + 1}-{edges[2]}",
        f"> {seq_length} (truncated)",
    ]
    return [names[int(np.searchsorted(edges, n))] for n in np.asarray(lengths)], names


def pretraining_summary(records: Mapping[str, Mapping]) -> pd.DataFrame:
    """What each model got before fine-tuning, from the pipeline's step records.

    records: step name -> its step.json record ({"result": {"model_dir", "train_steps",
    "eval"}, "seconds"}). Per model: updates S (all stages of a distillation), batch B and
    length T (the model directory's experiment.yaml), sequences S·B, wall time, and the
    held-out MLM / NSP accuracy the step recorded. A teacher the step installed from
    teachers/ (result "source": "shipped") was trained elsewhere: its batch and length come
    from the record installed beside its weights (shipped_teacher.json's experiment), its
    wall time is that training's (the record's), not the seconds the installation took.
    """
    rows = []
    for step, record in records.items():
        result = record["result"]
        shipped = result.get("source") == "shipped"
        name = INSTALLED_RECORD if shipped else "experiment.yaml"
        path = os.path.join(result["model_dir"], name)
        try:
            with open(path, encoding="utf-8") as f:
                experiment = json.load(f)["experiment"] if shipped else yaml.safe_load(f)
            batch, length = experiment["trainer"]["batch_size"], experiment["data"]["seq_length"]
        except (OSError, KeyError, TypeError, ValueError) as e:
            raise ValueError(
                f"{path}: expected trainer.batch_size and data.seq_length of the "
                f"step {step!r} ({type(e).__name__}: {e})"
            ) from None
        seconds = result["shipped"]["wall_seconds"] if shipped else record["seconds"]
        steps, metrics = int(result["train_steps"]), result.get("eval") or {}
        rows.append(
            {
                "step": step,
                "updates": steps,
                "batch": batch,
                "seq_length": length,
                "sequences": steps * batch,
                "wall s": round(float(seconds)),
                "held-out MLM acc": metrics.get("mlm_accuracy", math.nan),
                "held-out NSP acc": metrics.get("nsp_accuracy", math.nan),
            }
        )
    return pd.DataFrame(rows).set_index("step").round(4)


def agreement(
    predicted: Mapping[str, np.ndarray], labels: np.ndarray, reference: str
) -> pd.DataFrame:
    """How each model's dev predictions relate to the `reference` model's.

    Per model: accuracy; agreement (the share of examples where it predicts what the
    reference predicts); its errors; and the share of its errors the reference makes
    too (both wrong on the same example).
    """
    labels = np.asarray(labels)
    wrong_ref = np.asarray(predicted[reference]) != labels
    rows = []
    for model, guess in predicted.items():
        guess = np.asarray(guess)
        if guess.shape != labels.shape:
            raise ValueError(
                f"predictions of {model!r} have shape {guess.shape}, expected "
                f"{labels.shape} (one per dev example)"
            )
        wrong = guess != labels
        rows.append(
            {
                "model": model,
                "accuracy": 1 - wrong.mean(),
                f"agrees with {reference}": np.mean(guess == predicted[reference]),
                "errors": int(wrong.sum()),
                f"errors {reference} also makes": (
                    np.sum(wrong & wrong_ref) / wrong.sum() if wrong.any() else math.nan
                ),
            }
        )
    return pd.DataFrame(rows).set_index("model").round(3)
