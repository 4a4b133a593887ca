"""One stage's distillation loss as a distributable objective (the protocol of
`mbert_lib.train.objectives`): the teacher in inference mode, the student training.

For a stage with transferred student layers 𝓛 (teacher layer t_l for l ∈ 𝓛):

    L = Σ_{l∈𝓛} [ FMT(H^T_{t_l}, H^S_l) + w_AT · AT(A^T_{t_l}, A^S_l) ]     (layer-wise terms)
      + [ α·MLM + (1−α)·KD + NSP ]                                        (PD stage / AKT)

with the layer-wise sum divided by |𝓛| = L when `layer_mean` (the original
code's AKT). The teacher runs with training=False (no dropout), the student
with dropout unless `student_dropout` is false (the original code), and
only as deep as the stage needs; in PD, a model's last block runs only at the positions the heads
read ([CLS] and the masked positions) unless a layer-wise term reads it
(`Pretrainer`'s heads_only: the same logits, most of a block's work skipped).
The teacher's outputs are constants (stop_gradient in the losses), and
its variables are in no optimizer. Every mean divides by global counts
(real tokens, real predictions, examples: the `denominators`), so under R
replicas the R loss shares sum to the one-device loss.

Held-out evaluation reports, per transferred layer, the FMT terms and the
AT KL divergence, and, when the stage trains the MLM head, the student's
MLM / NSP accuracy and perplexity.
"""

from __future__ import annotations

import tensorflow as tf

from mbert_lib.distill.losses import (
    FmtWeights,
    attention_transfer,
    feature_map_transfer,
    pretraining_distillation,
)
from mbert_lib.distill.plan import Stage
from mbert_lib.train.objectives import PretrainingObjective, model_inputs

FMT_TERMS = ("fmt", "fmt_mse", "fmt_mean", "fmt_var", "fmt_paper_mse")


class DistillationObjective:
    """The loss of `stage` between a frozen teacher and a student Pretrainer.

    layer_map[l] is the teacher layer of student layer l; `layer_wise` and
    `pretrain` are the experiment's LayerWiseSection / PretrainDistillSection;
    student_dropout / layer_mean as in the module docstring.
    """

    def __init__(
        self,
        teacher,
        student,
        stage: Stage,
        layer_map,
        layer_wise,
        pretrain,
        student_dropout: bool = True,
        layer_mean: bool = False,
    ):
        self.teacher, self.student, self.stage = teacher, student, stage
        self.student_dropout = student_dropout
        self.layer_scale = (
            1.0 / len(stage.transfer_layers) if layer_mean and stage.layer_wise else 1.0
        )
        self.layer_map = tuple(layer_map)
        self.fmt_weights = FmtWeights.of(layer_wise)
        self.attention_weight = layer_wise.attention_weight
        self.pretrain = pretrain
        self._student_metrics = PretrainingObjective(student)

    # ------------------------------------------------------------------ forward
    def _needs_teacher_logits(self) -> bool:
        return self.stage.use_pd and self.pretrain.distill_ground_truth_ratio < 1.0

    @staticmethod
    def _heads_only(model, layers_read) -> bool:
        """Whether `model`'s last block may run only where the MLM / NSP heads
        read: true unless a layer-wise term reads that block's full output."""
        return model.config.num_hidden_layers - 1 not in layers_read

    def _forward(self, batch, training):
        """(teacher outputs or None, student outputs) for this stage."""
        inputs = model_inputs(batch)
        stage = self.stage
        training = training and self.student_dropout
        if stage.use_pd:
            student = self.student(
                inputs,
                training=training,
                heads_only=self._heads_only(self.student, stage.transfer_layers),
            )
            teacher = None
            if self._needs_teacher_logits():
                teacher = self.teacher(
                    inputs,
                    training=False,
                    heads_only=self._heads_only(
                        self.teacher, [self.layer_map[i] for i in stage.transfer_layers]
                    ),
                )
            elif stage.layer_wise:
                teacher = self.teacher.encoder(
                    inputs,
                    training=False,
                    num_layers=max(self.layer_map[i] for i in stage.transfer_layers) + 1,
                )
            return teacher, student
        deepest = max(stage.transfer_layers)
        teacher = self.teacher.encoder(
            inputs,
            training=False,
            num_layers=max(self.layer_map[i] for i in stage.transfer_layers) + 1,
        )
        student = self.student.encoder(inputs, training=training, num_layers=deepest + 1)
        return teacher, student

    def _layer_terms(self, teacher, student, mask, token_count) -> dict:
        """{f"layer_{l}/<term>": value} for every transferred layer l."""
        out = {}
        for layer in self.stage.transfer_layers:
            t = self.layer_map[layer]
            fmt = feature_map_transfer(
                teacher["encoder_outputs"][t],
                student["encoder_outputs"][layer],
                mask,
                self.fmt_weights,
                token_count=token_count,
            )
            for name in FMT_TERMS:
                out[f"layer_{layer}/{name}"] = fmt[name]
            out[f"layer_{layer}/at"] = attention_transfer(
                teacher["attention_scores"][t],
                student["attention_scores"][layer],
                mask,
                token_count=token_count,
            )
        return out

    # ------------------------------------------------------------ the protocol
    def denominators(self, batch):
        return {
            "tokens": tf.reduce_sum(tf.cast(batch["input_mask"], tf.float32)),
            "mlm_weight": tf.reduce_sum(tf.cast(batch["masked_lm_weights"], tf.float32)),
            "examples": tf.cast(tf.shape(batch["input_mask"])[0], tf.float32),
        }

    def loss(self, batch, denominators, training=True):
        teacher, student = self._forward(batch, training)
        stage, metrics = self.stage, {}
        loss = tf.constant(0.0)
        if stage.layer_wise:
            terms = self._layer_terms(teacher, student, batch["input_mask"], denominators["tokens"])
            for layer in stage.transfer_layers:
                if stage.use_fmt:
                    loss += self.layer_scale * terms[f"layer_{layer}/fmt"]  # FMT_l, eq. 1
                if stage.use_attention:
                    loss += (
                        self.layer_scale
                        * self.attention_weight  # AT_l, eq. 2
                        * terms[f"layer_{layer}/at"]
                    )
            for name in FMT_TERMS + ("at",):
                metrics[name] = tf.add_n(
                    [terms[f"layer_{layer}/{name}"] for layer in stage.transfer_layers]
                )
            if len(stage.transfer_layers) > 1:
                metrics.update({k: v for k, v in terms.items() if k.endswith(("/fmt", "/at"))})
        if stage.use_pd:
            pd = pretraining_distillation(  # PD, eq. 3
                student["mlm_logits"],
                teacher["mlm_logits"] if self._needs_teacher_logits() else None,
                batch["masked_lm_ids"],
                batch["masked_lm_weights"],
                student["nsp_logits"] if self.pretrain.use_nsp else None,
                batch["next_sentence_labels"] if self.pretrain.use_nsp else None,
                alpha=self.pretrain.distill_ground_truth_ratio,
                temperature=self.pretrain.temperature,
                counts=denominators,
            )
            loss += pd["loss"]
            metrics.update({f"{k}_loss": v for k, v in pd.items() if k != "loss"})
        return loss, metrics

    def eval_sums(self, batch):
        sums = {}
        if self.stage.layer_wise:
            teacher, student = self._forward(batch, training=False)
            # token_count 1: sums over real tokens (AT: divided by the N heads only).
            terms = self._layer_terms(teacher, student, batch["input_mask"], 1.0)
            sums.update(terms)
            sums["tokens"] = tf.reduce_sum(tf.cast(batch["input_mask"], tf.float32))
        if self.stage.use_pd:
            sums.update(self._student_metrics.eval_sums(batch))
        return sums

    def eval_metrics(self, sums: dict) -> dict:
        metrics = {}
        if "tokens" in sums:
            if sums["tokens"] <= 0:
                raise ValueError("the held-out set has no real tokens")
            metrics.update(
                {k: v / sums["tokens"] for k, v in sums.items() if k.startswith("layer_")}
            )
        if "mlm_weight" in sums:
            metrics.update(PretrainingObjective.eval_metrics(sums))
        return metrics
