"""The five students of the lab, each a list of stages with the paper's loss terms.

    pkt          copy; per layer l: FMT_l + AT_l (paper eqs. 1-2); then PD + AT
    fmt_only     copy; per layer l: FMT_l; then PD
    at_only      copy; per layer l: AT_l; then PD + AT
    copy_only    copy; then MLM + NSP
    no_transfer  MLM + NSP from a random start

copy: the teacher's embedding and MLM head into the student (`copy_from_teacher`).
PD: α·MLM + (1 − α)·KD(teacher's MLM logits) + NSP, α = 1/2 (paper eq. 3). "+ AT" keeps
every layer's attention transfer in the final stage, as the pipeline's PKT student does.
In layer l's stage only block l trains: the embedding and the blocks below are frozen,
as in the paper's progressive transfer (the pipeline trains them at a tenth of the rate).
Training the copied embedding there lets attention transfer pull it away from the token
identities the copied MLM head reads (in the lab's first runs the AT-only student then
fell below the copy-only one).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mbert_lib.distill import losses
from mbert_lib.distill.plan import variable_groups
from mbert_lib.lab.data import MODEL_INPUTS

VARIANTS = ("pkt", "fmt_only", "at_only", "copy_only", "no_transfer")
AT_VARIANTS = ("pkt", "at_only")


@dataclasses.dataclass(frozen=True)
class Recipe:
    copy: bool
    layer_terms: tuple[str, ...]  # "fmt", "at" in each layer's stage; () none
    distill: bool  # the final stage's KD term
    final_at: bool  # AT of every layer in the final stage


RECIPES = {
    "pkt": Recipe(True, ("fmt", "at"), True, True),
    "fmt_only": Recipe(True, ("fmt",), True, False),
    "at_only": Recipe(True, ("at",), True, True),
    "copy_only": Recipe(True, (), False, False),
    "no_transfer": Recipe(False, (), False, False),
}


def _inputs(batch):
    return {k: batch[k] for k in MODEL_INPUTS}


def teacher_targets(teacher, arrays: dict, num_layers: int, batch_size: int = 500) -> dict:
    """What the students read from the fixed teacher, computed once for every example:
    teacher/features_l [n, T, H] and teacher/attention_l [n, N, T, T] per block l, and
    teacher/mlm_logits [n, P, V] (float32 numpy arrays)."""
    n = len(arrays["input_word_ids"])
    parts: dict[str, list] = {}
    for start in range(0, n, batch_size):
        out = teacher(
            {k: arrays[k][start : start + batch_size] for k in MODEL_INPUTS}, training=False
        )
        for l in range(num_layers):
            parts.setdefault(f"teacher/features_{l}", []).append(out["encoder_outputs"][l].numpy())
            parts.setdefault(f"teacher/attention_{l}", []).append(
                out["attention_scores"][l].numpy()
            )
        parts.setdefault("teacher/mlm_logits", []).append(out["mlm_logits"].numpy())
    return {k: np.concatenate(v) for k, v in parts.items()}


def layer_loss(student, layer: int, terms: tuple[str, ...]):
    """batch -> FMT and/or AT between the teacher's block `layer` (read from the batch,
    `teacher_targets`) and the student's."""

    def loss(batch):
        s_out = student(_inputs(batch), training=True)
        total = 0.0
        if "fmt" in terms:
            total += losses.feature_map_transfer(
                batch[f"teacher/features_{layer}"],
                s_out["encoder_outputs"][layer],
                batch["input_mask"],
            )["fmt"]
        if "at" in terms:
            total += losses.attention_transfer(
                batch[f"teacher/attention_{layer}"],
                s_out["attention_scores"][layer],
                batch["input_mask"],
            )
        return total

    return loss


def final_loss(student, recipe: Recipe):
    """batch -> the final stage's loss: MLM + NSP, with KD and AT as the recipe says."""

    def loss(batch):
        s_out = student(_inputs(batch), training=True)
        terms = losses.pretraining_distillation(
            s_out["mlm_logits"],
            batch["teacher/mlm_logits"] if recipe.distill else None,
            batch["masked_lm_ids"],
            batch["masked_lm_weights"],
            s_out["nsp_logits"],
            batch["next_sentence_labels"],
            alpha=0.5 if recipe.distill else 1.0,
        )
        total = terms["loss"]
        if recipe.final_at:
            for layer, s_probs in enumerate(s_out["attention_scores"]):
                total += losses.attention_transfer(
                    batch[f"teacher/attention_{layer}"], s_probs, batch["input_mask"]
                )
        return total

    return loss


def mlm_loss(model):
    """batch -> MLM + NSP of `model` alone (the teacher's pre-training)."""

    def loss(batch):
        out = model(_inputs(batch), training=True)
        return losses.pretraining_distillation(
            out["mlm_logits"],
            None,
            batch["masked_lm_ids"],
            batch["masked_lm_weights"],
            out["nsp_logits"],
            batch["next_sentence_labels"],
            alpha=1.0,
        )["loss"]

    return loss


def stage_variables(student, layer: int | None) -> list | None:
    """What a stage trains: block `layer` alone, or everything (None) in the final stage."""
    return None if layer is None else variable_groups(student)[f"block_{layer}"]


def stage_key(recipe: Recipe, layer: int | None) -> str:
    if layer is not None:
        return f"layer{layer}:{'+'.join(recipe.layer_terms)}"
    return f"final:kd={recipe.distill}:at={recipe.final_at}"
