"""Pre-training compute of an experiment, by arithmetic: tokens seen and training FLOPs.

For S steps of B sequences of T tokens with P MLM predictions each:

    tokens       = S · B · T
    forward      = flops(config, T)                 encoder, per sequence (anatomy.flops)
                 + 2 · P · (H² + V · H)             MLM head on the P targets: transform
                                                    H → H and the output layer H → V
                                                    (the 2 · H² of NSP's pooler is counted
                                                    by the encoder; its H → 2 layer is ignored)
    train FLOPs  ≈ 3 · forward · S · B              backward ≈ 2 × forward (the usual rule)

Letters: H hidden_size, V vocab_size. Elementwise ops are left out, as in
`anatomy.flops`.
"""

from __future__ import annotations

from mbert_lib.anatomy.flops import flops
from mbert_lib.anatomy.params import param_total

TRAIN_TO_FORWARD = 3  # forward + backward (≈ 2 × forward: gradients w.r.t. inputs and weights)


def pretraining_compute(experiment) -> dict:
    """Steps, batch, sequence length, tokens, parameters and training FLOPs of a
    `PretrainExperiment` (see the module docstring for the formulas)."""
    config = experiment.model.build_config()
    T, P = experiment.data.seq_length, experiment.data.max_predictions_per_seq
    S, B = experiment.trainer.train_steps, experiment.trainer.batch_size
    H, V = config.hidden_size, config.vocab_size
    encoder = flops(config, T)
    head = 2 * P * (H * H + V * H)
    return {
        "steps": S,
        "batch_size": B,
        "seq_length": T,
        "tokens": S * B * T,
        "params": param_total(config, heads=True),
        "forward_flops_per_sequence": encoder + head,
        "train_flops": TRAIN_TO_FORWARD * (encoder + head) * S * B,
    }
