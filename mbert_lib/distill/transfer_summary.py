"""Did each layer-wise objective do its job? Numbers around every layer's own stage.

For a finished progressive run and a held-out batch (B sequences, T tokens,
N heads; student layer k learns teacher layer t_k), per layer k:

    at_before / at_after     AT_k = mean KL(A^T_{t_k} ‖ A^S_k) over heads and real query
                             rows, at the start and at the end of layer k's stage
    mse_before / mse_after   the plain feature MSE of the paper's eq. (1),
                             mean over real tokens and H channels of (H^T_{t_k} − H^S_k)²
    spread_before / _after   the student's per-token std over H (mean over real tokens),
    spread_teacher           beside the teacher's: FMT should move the first toward it
    max_prob_after           mean over heads and real query rows of the largest attention
                             probability after the stage
    max_prob_uniform         the same statistic of uniform attention over the real keys
                             (1/n for a row with n real keys)
    max_prob_teacher         the same statistic of teacher layer t_k: how peaked the
                             attention the student layer learns from is

"Start of stage k" is the student after stage k − 1 (the initial student for k = 0).

`attention` follows each layer's attention map through the whole recipe, as its distance
to the teacher's (Jensen-Shannon and total variation, which stay finite where a
probability is 0, beside the floored KL; `analysis.attention_distance`): before its
stage, after it, after the last stage (the finished student), for the untrained student
(the initial one: copied embedding, random blocks) and for the finished student of the
run without attention transfer. A transfer that holds ends near "after_stage"; one that
later stages undo ends near "untrained" or "final_without_at".
`ablation_at_kl` compares the mean AT KL over all layers of two finished students
(with and without attention transfer) on the same batch, with the student's
probabilities floored at 1e-9: a float32 softmax rounds a probability to exactly 0
once its row's scores span more than about 100, which makes the exact KL infinite
(the laptop no-AT student has 4e-5 of its probabilities at 0).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

from mbert_lib.checkpoints import load_pretrainer
from mbert_lib.distill import analysis
from mbert_lib.distill.trainer import load_stage_student, read_run


def uniform_attention(mask, num_heads: int) -> np.ndarray:
    """[1, B, N, T, T] attention spread evenly over each row's real keys."""
    mask = np.asarray(mask, np.float64)  # [B, T]
    rows = mask[:, None, None, :] / mask.sum(-1)[:, None, None, None]  # [B, 1, 1, T]
    return np.broadcast_to(rows, (mask.shape[0], num_heads, mask.shape[1], mask.shape[1]))[None]


def _at_and_mse(teacher_out: dict, student_out: dict, mask, layer_map) -> dict:
    losses = analysis.transfer_losses(teacher_out, student_out, mask, layer_map)
    return {
        "at": losses["at"].to_numpy(),
        "mse": losses["fmt_paper_mse"].to_numpy(),
        "spread": analysis.feature_statistics(student_out, mask)["std"].to_numpy(),
    }


def layer_summary(
    teacher_out: dict, snapshots: list[dict], final_out: dict, mask, layer_map
) -> list[dict]:
    """Per layer k, the numbers of the module docstring.

    snapshots[j]: `analysis.encode` outputs of the student after stage j − 1
    (snapshots[0] is the initial student), so layer k's stage runs from
    snapshots[k] to snapshots[k + 1]; final_out: the finished student.
    """
    measured = [_at_and_mse(teacher_out, s, mask, layer_map) for s in snapshots]
    teacher_spread = analysis.feature_statistics(teacher_out, mask)["std"].to_numpy()
    heads = teacher_out["attention_scores"].shape[2]
    uniform = float(analysis.attention_sharpness(uniform_attention(mask, heads), mask)[0])
    teacher_sharp = analysis.attention_sharpness(teacher_out["attention_scores"], mask)
    rows = []
    for k, t in enumerate(layer_map):
        before, after = measured[k], measured[k + 1]
        sharp = analysis.attention_sharpness(snapshots[k + 1]["attention_scores"], mask)
        rows.append(
            {
                "layer": k,
                "teacher_layer": int(t),
                "at_before": float(before["at"][k]),
                "at_after": float(after["at"][k]),
                "mse_before": float(before["mse"][k]),
                "mse_after": float(after["mse"][k]),
                "spread_before": float(before["spread"][k]),
                "spread_after": float(after["spread"][k]),
                "spread_teacher": float(teacher_spread[t]),
                "max_prob_after": float(sharp[k]),
                "max_prob_uniform": uniform,
                "max_prob_teacher": float(teacher_sharp[t]),
                "at_final": float(_at_and_mse(teacher_out, final_out, mask, layer_map)["at"][k]),
            }
        )
    return rows


KL_FLOOR = analysis.KL_FLOOR


def attention_through_recipe(
    teacher_out: dict, snapshots: list[dict], final: dict, without: dict | None, mask, layer_map
) -> list[dict]:
    """Per student layer k: {"layer", "teacher_layer", <distance>: {"before", "after_stage",
    "final", "untrained", "final_without_at"}} for every distance of
    `analysis.DISTANCES` (final_without_at None without the no-AT run)."""
    rows = []
    for k, t in enumerate(layer_map):
        teacher = teacher_out["attention_scores"][t]
        points = {
            "before": snapshots[k],
            "after_stage": snapshots[k + 1],
            "final": final,
            "untrained": snapshots[0],
            "final_without_at": without,
        }
        row = {"layer": k, "teacher_layer": int(t)}
        for kind in analysis.DISTANCES:
            row[kind] = {
                name: None
                if out is None
                else analysis.attention_distance(teacher, out["attention_scores"][k], mask, kind)
                for name, out in points.items()
            }
        rows.append(row)
    return rows


def mean_attention_kl(
    teacher_out: dict, student_out: dict, mask, layer_map, floor: float = KL_FLOOR
) -> float:
    """Mean over student layers, heads and real query rows of KL(A^T ‖ max(A^S, floor))."""
    real = np.asarray(mask, bool)  # [B, T]
    values = []
    for layer, t in enumerate(layer_map):
        p = np.asarray(teacher_out["attention_scores"][t], np.float64)  # [B, N, T, T]
        q = np.maximum(np.asarray(student_out["attention_scores"][layer], np.float64), floor)
        kl = (p * (np.log(np.where(p > 0, p, 1.0)) - np.log(q))).sum(-1)  # [B, N, T]
        values.append(kl[np.broadcast_to(real[:, None, :], kl.shape)].mean())
    return float(np.mean(values))


def targets(summary: Mapping) -> dict:
    """The aims, each True / False: AT and MSE fall by half in the layer's own stage,
    attention after the stage at least 3x as peaked as uniform, and the no-AT student's
    final KL at least 2x the AT student's."""
    layers = summary["layers"]
    out = {
        "at_halves": all(r["at_after"] <= 0.5 * r["at_before"] for r in layers),
        "mse_halves": all(r["mse_after"] <= 0.5 * r["mse_before"] for r in layers),
        "peaked_3x": all(r["max_prob_after"] >= 3 * r["max_prob_uniform"] for r in layers),
        "spread_toward_teacher": all(
            abs(r["spread_after"] - r["spread_teacher"])
            < abs(r["spread_before"] - r["spread_teacher"])
            for r in layers
        ),
    }
    ablation = summary.get("ablation_at_kl")
    if ablation:
        out["ablation_2x"] = ablation["without_at"] >= 2 * ablation["with_at"]
    return out


def summarize_run(
    pkt_dir: str | os.PathLike, teacher, batch, ablation_dir: str | os.PathLike | None = None
) -> dict:
    """{"layers": [...], "ablation_at_kl": {"with_at", "without_at"} (when ablation_dir),
    "targets": {...}} for the progressive run in `pkt_dir` on a held-out `batch`."""

    experiment, stages = read_run(pkt_dir)
    if experiment.distillation.strategy != "progressive":
        raise ValueError(
            f"{pkt_dir}: a transfer summary needs a progressive run, this one is "
            f"{experiment.distillation.strategy!r}"
        )
    config = experiment.student.build_config()
    layer_map = experiment.distillation.transfer_teacher_layers or tuple(
        range(config.num_hidden_layers)
    )
    mask = np.asarray(batch["input_mask"])
    teacher_out = analysis.encode(teacher, batch)
    layer_stages = [s for s in stages if s.transfer_stage]
    snapshots = [analysis.encode(load_stage_student(pkt_dir, None, config), batch)]
    snapshots += [
        analysis.encode(load_stage_student(pkt_dir, s, config), batch) for s in layer_stages
    ]
    final = analysis.encode(load_pretrainer(pkt_dir), batch)
    summary = {"layers": layer_summary(teacher_out, snapshots, final, mask, layer_map)}
    without = None
    if ablation_dir is not None:
        without = analysis.encode(load_pretrainer(ablation_dir), batch)
        summary["ablation_at_kl"] = {
            "with_at": mean_attention_kl(teacher_out, final, mask, layer_map),
            "without_at": mean_attention_kl(teacher_out, without, mask, layer_map),
        }
    summary["attention"] = attention_through_recipe(
        teacher_out, snapshots, final, without, mask, layer_map
    )
    summary["targets"] = targets(summary)
    return summary
