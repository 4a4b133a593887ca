"""The fine-tuning loss of a Classifier, as an objective for `mbert_lib.train.loop`.

For a global batch of B examples with logits z_b (the classification head
on the pooled output) and labels y_b:

    classes:     L = Σ_b −log softmax(z_b)[y_b] / B        cross-entropy
    regression:  L = Σ_b (z_b − y_b)² / B                  squared error (STS-B, one output)
    distillation L = Σ_b τ_b² · H(q_b, softmax(z_b / τ_b)) / B
                 with each example's target distribution q_b and temperature τ_b in the
                 batch ("target", "temperature"): mbert_lib.finetune.task_distill

The denominator B is summed over replicas first, so each replica's share
is exact (see mbert_lib.train.objectives). Only the training half of the
objective protocol is here (`denominators`, `loss`): dev-set metrics such
as MCC or Spearman's ρ need every prediction, not per-batch sums, so they
are computed by `mbert_lib.finetune.evaluate` from the logits.
"""

from __future__ import annotations

import tensorflow as tf

from mbert_lib.models import INPUT_NAMES


class ClassificationObjective:
    """Cross-entropy (or squared error) of `model`'s logits against batch["label"]."""

    def __init__(self, model, regression: bool = False):
        self.model = model
        self.regression = regression

    def denominators(self, batch):
        return {"examples": tf.cast(tf.shape(batch["label"])[0], tf.float32)}

    def loss(self, batch, denominators, training=True):
        logits = self.model({k: batch[k] for k in INPUT_NAMES}, training=training)["logits"]
        logits = tf.cast(logits, tf.float32)  # [B, C]
        if self.regression:
            per_example = tf.square(logits[:, 0] - tf.cast(batch["label"], tf.float32))  # [B]
            return tf.reduce_sum(per_example) / denominators["examples"], {}
        labels = tf.cast(batch["label"], tf.int32)  # [B]
        if "target" in batch:  # output distillation: soft (or one-hot) targets q, [B, C]
            tau = tf.cast(batch["temperature"], tf.float32)[:, None]  # [B, 1]
            log_p = tf.nn.log_softmax(logits / tau, axis=-1)  # [B, C]
            per_example = -tf.square(tau[:, 0]) * tf.reduce_sum(batch["target"] * log_p, -1)
        else:
            per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels), tf.float32)
        n = denominators["examples"]
        return tf.reduce_sum(per_example) / n, {"accuracy": tf.reduce_sum(correct) / n}
