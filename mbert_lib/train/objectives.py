"""BERT's pre-training objectives, masked LM + next sentence, as a distributable objective.

For a global batch of B sequences with P prediction slots each, slot weights
w_bp ∈ {0, 1} (masked_lm_weights; 0 pads the slots of short sequences),
target tokens y_bp and NSP labels s_b (0 = real next segment, 1 = random):

    L_MLM = Σ_bp w_bp · CE(y_bp, mlm_logits_bp) / Σ_bp w_bp      mean over real predictions
    L_NSP = Σ_b CE(s_b, nsp_logits_b) / B
    L     = L_MLM + L_NSP                                        (BERT, Devlin et al. 2019)

Under a tf.distribute strategy each replica sees B / R sequences. The
denominators Σ w and B are summed over replicas first, so each replica's
loss is its exact share of the global loss: the shares sum to L and their
gradients sum to ∇L, whatever the number of replicas.

Losses are computed in float32 even when the model computes in bfloat16.

An objective, for `mbert_lib.train.loop`, has:
    denominators(batch) -> {name: local count}            summed over replicas
    loss(batch, denominators, training) -> (share, {metric: share})
    eval_sums(batch) -> {name: local sum}                  summed over replicas and batches
    eval_metrics(sums) -> {metric: float}
"""

from __future__ import annotations

import math

import tensorflow as tf

MODEL_INPUTS = ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")
BATCH_KEYS = MODEL_INPUTS + ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")


def model_inputs(batch: dict) -> dict:
    """The keys the Pretrainer accepts; labels and extra keys dropped."""
    return {k: batch[k] for k in MODEL_INPUTS}


def masked_lm_terms(mlm_logits, masked_lm_ids):
    """Per-slot cross-entropy [B, P] and correctness [B, P] (float32), unweighted."""
    logits = tf.cast(mlm_logits, tf.float32)  # [B, P, V]
    ce = tf.nn.sparse_softmax_cross_entropy_with_logits(masked_lm_ids, logits)  # [B, P]
    correct = tf.cast(
        tf.equal(tf.argmax(logits, -1, output_type=tf.int32), masked_lm_ids), tf.float32
    )  # [B, P]
    return ce, correct


def next_sentence_terms(nsp_logits, next_sentence_labels):
    """Per-example cross-entropy [B] and correctness [B] (float32)."""
    logits = tf.cast(nsp_logits, tf.float32)  # [B, 2]
    ce = tf.nn.sparse_softmax_cross_entropy_with_logits(next_sentence_labels, logits)
    correct = tf.cast(
        tf.equal(tf.argmax(logits, -1, output_type=tf.int32), next_sentence_labels), tf.float32
    )
    return ce, correct


class PretrainingObjective:
    """MLM + NSP loss and held-out metrics of a Pretrainer."""

    def __init__(self, model):
        self.model = model

    def _outputs(self, batch, training):
        # heads_only: the last block runs only at [CLS] and the masked positions, the
        # only rows the heads read (same logits; `anatomy.heads_only_flops` counts the saving)
        outputs = self.model(model_inputs(batch), training=training, heads_only=True)
        return outputs["mlm_logits"], outputs["nsp_logits"]

    def denominators(self, batch):
        weights = tf.cast(batch["masked_lm_weights"], tf.float32)
        return {
            "mlm_weight": tf.reduce_sum(weights),
            "examples": tf.cast(tf.shape(batch["next_sentence_labels"])[0], tf.float32),
        }

    def loss(self, batch, denominators, training=True):
        mlm_logits, nsp_logits = self._outputs(batch, training)
        weights = tf.cast(batch["masked_lm_weights"], tf.float32)  # [B, P]
        mlm_ce, _ = masked_lm_terms(mlm_logits, batch["masked_lm_ids"])
        nsp_ce, _ = next_sentence_terms(nsp_logits, batch["next_sentence_labels"])
        # L_MLM: weighted mean over the real predictions of the global batch
        mlm = tf.reduce_sum(mlm_ce * weights) / tf.maximum(denominators["mlm_weight"], 1.0)
        nsp = tf.reduce_sum(nsp_ce) / denominators["examples"]  # L_NSP
        return mlm + nsp, {"mlm_loss": mlm, "nsp_loss": nsp}  # L = L_MLM + L_NSP

    def eval_sums(self, batch):
        mlm_logits, nsp_logits = self._outputs(batch, training=False)
        weights = tf.cast(batch["masked_lm_weights"], tf.float32)
        mlm_ce, mlm_correct = masked_lm_terms(mlm_logits, batch["masked_lm_ids"])
        nsp_ce, nsp_correct = next_sentence_terms(nsp_logits, batch["next_sentence_labels"])
        return {
            "mlm_ce": tf.reduce_sum(mlm_ce * weights),
            "mlm_correct": tf.reduce_sum(mlm_correct * weights),
            "mlm_weight": tf.reduce_sum(weights),
            "nsp_ce": tf.reduce_sum(nsp_ce),
            "nsp_correct": tf.reduce_sum(nsp_correct),
            "examples": tf.cast(tf.size(nsp_ce), tf.float32),
        }

    @staticmethod
    def eval_metrics(sums: dict) -> dict:
        """MLM / NSP accuracy and loss; perplexity = exp(mean MLM cross-entropy)."""
        if sums["mlm_weight"] <= 0 or sums["examples"] <= 0:
            raise ValueError("the held-out set has no masked predictions or no examples")
        mlm_loss = sums["mlm_ce"] / sums["mlm_weight"]
        return {
            "mlm_accuracy": sums["mlm_correct"] / sums["mlm_weight"],
            "mlm_loss": mlm_loss,
            "perplexity": math.exp(mlm_loss),
            "nsp_accuracy": sums["nsp_correct"] / sums["examples"],
            "nsp_loss": sums["nsp_ce"] / sums["examples"],
            "predictions": sums["mlm_weight"],
            "examples": sums["examples"],
        }
