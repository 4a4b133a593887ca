"""The lab's five student variants, each a list of stages with the paper's loss terms.

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
from collections.abc import Callable

import numpy as np
import tensorflow as tf

from mbert_lib.distill import losses
from mbert_lib.distill.plan import variable_groups
from mbert_lib.lab.data import MODEL_INPUTS

VARIANTS = ("pkt", "fmt_only", "at_only", "copy_only", "no_transfer")
AT_VARIANTS = ("pkt", "at_only")
LABELS = {
    "pkt": "PKT",
    "fmt_only": "FMT only",
    "at_only": "AT only",
    "copy_only": "copy only",
    "no_transfer": "no transfer",
}


@dataclasses.dataclass(frozen=True)
class Variant:
    """How one variant trains its student: the copy from the teacher, the terms of each
    layer's stage, and the final stage's."""

    copy: bool
    layer_terms: tuple[str, ...]  # "fmt", "at" in each layer's stage; () none
    distill: bool  # the final stage's KD term
    final_at: bool  # AT of every layer in the final stage

    def layer_weights(self, at_weight: float = 1.0) -> dict[str, float]:
        """Each layer stage's loss weights: FMT_l (1 or 0) and AT_l (at_weight or 0)."""
        return {
            "fmt": float("fmt" in self.layer_terms),
            "at": at_weight * ("at" in self.layer_terms),
        }

    def final_weights(self, at_weight: float = 1.0) -> dict[str, float]:
        """The final stage's: α·MLM + (1 − α)·KD, α = 1/2 with KD and 1 without; AT
        (at_weight or 0)."""
        alpha = 0.5 if self.distill else 1.0
        return {"mlm": alpha, "kd": 1.0 - alpha, "at": at_weight * self.final_at}


# The Variant behind each name in VARIANTS (`run.train_student` trains it).
VARIANT_SPECS = {
    "pkt": Variant(True, ("fmt", "at"), True, True),
    "fmt_only": Variant(True, ("fmt",), True, False),
    "at_only": Variant(True, ("at",), True, True),
    "copy_only": Variant(True, (), False, False),
    "no_transfer": Variant(False, (), False, False),
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


def _term(weight, value: Callable[[], tf.Tensor]) -> tf.Tensor:
    """weight · value(), and 0 without computing value() when the weight is 0: a term a
    variant leaves out can be infinite (an attention probability the student never
    trained can round to 0 inside AT's log), and 0 · inf would be NaN."""
    return tf.cond(weight > 0, lambda: weight * value(), lambda: tf.constant(0.0))


def layer_loss(student, layer: int):
    """(batch, weights) -> weights["fmt"]·FMT_l + weights["at"]·AT_l between the teacher's
    block `layer` (read from the batch, `teacher_targets`) and the student's. The weights
    are tensors, so one compiled step serves every variant's stage of that layer."""

    def loss(batch, weights):
        s_out = student(_inputs(batch), training=True)
        mask = batch["input_mask"]
        fmt = _term(
            weights["fmt"],
            lambda: losses.feature_map_transfer(
                batch[f"teacher/features_{layer}"], s_out["encoder_outputs"][layer], mask
            )["fmt"],
        )
        at = _term(
            weights["at"],
            lambda: losses.attention_transfer(
                batch[f"teacher/attention_{layer}"], s_out["attention_scores"][layer], mask
            ),
        )
        return fmt + at

    return loss


def final_loss(student):
    """(batch, weights) -> the final stage's loss: weights["mlm"]·MLM + weights["kd"]·KD
    + NSP + weights["at"]·Σ_l AT_l (`Variant.final_weights`)."""

    def loss(batch, weights):
        s_out = student(_inputs(batch), training=True)
        labels = (batch["masked_lm_ids"], batch["masked_lm_weights"])
        mlm_nsp = losses.pretraining_distillation(
            s_out["mlm_logits"],
            None,
            *labels,
            s_out["nsp_logits"],
            batch["next_sentence_labels"],
            alpha=1.0,
        )
        kd = _term(
            weights["kd"],
            lambda: losses.masked_lm_cross_entropy(
                s_out["mlm_logits"],
                tf.nn.softmax(batch["teacher/mlm_logits"], -1),
                batch["masked_lm_weights"],
            ),
        )
        at = _term(
            weights["at"],
            lambda: tf.add_n(
                [
                    losses.attention_transfer(
                        batch[f"teacher/attention_{layer}"], s_probs, batch["input_mask"]
                    )
                    for layer, s_probs in enumerate(s_out["attention_scores"])
                ]
            ),
        )
        return weights["mlm"] * mlm_nsp["mlm"] + mlm_nsp["nsp"] + kd + at

    return loss


def mlm_loss(model):
    """(batch, weights) -> MLM + NSP of `model` alone (the teacher's pre-training; no
    weights)."""

    def loss(batch, weights):
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


def stage_key(layer: int | None) -> str:
    """The compiled step a stage runs: one per layer, one for the final stage."""
    return "final" if layer is None else f"layer{layer}"
