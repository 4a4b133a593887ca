"""FLOPs to encode one sequence, by arithmetic on a config.

The count the paper's "5.7B FLOPs at sequence length 128" is compared with
(`mbert_lib.paper.FLOPS_B`): 2 × the multiply-adds of every matrix product.
Counted: the embedding projection, every dense / per-head projection of every
block, the attention scores QKᵀ and the context AV (the T² terms), the pooler
on the [CLS] token. Not counted: embedding lookups (free), and the
non-matmul ops, which `flops_breakdown` lists separately as rough
"elementwise" rows so their size can be seen (about 1% for MobileBERT).
Heads (MLM, NSP) are not part of encoding.

Letters as in `mbert_lib.anatomy.params`; T tokens per sequence.
"""

from __future__ import annotations

import pandas as pd

from mbert_lib.anatomy.params import (
    block_widths,
    check_accounting,
    embedding_input_width,
    table1_view,
)
from mbert_lib.config import MobileBertConfig

# Rough costs in FLOPs per element of the non-matmul ops ("elementwise" rows).
NORM_FLOPS = {"no_norm": 2, "layer_norm": 5}  # γx+β | mean, centre, variance, scale, shift
ACTIVATION_FLOPS = {"relu": 1, "relu6": 2, "linear": 0}  # any other (gelu, tanh, swish): 8
SOFTMAX_FLOPS = 5  # scale, mask, exp, sum, divide, per score


def flops_breakdown(
    config: MobileBertConfig, seq_length: int = 128, accounting: str = "built"
) -> pd.DataFrame:
    """FLOPs to encode one sequence of T = seq_length tokens, one row per operation.

    Columns: group, op, kind ("matmul" or "elementwise"), count (L for block
    ops), flops (total over the count). accounting "table1" counts the
    attention as Table 1 draws it (Q and K from the 512-d block input).
    """
    check_accounting(accounting)
    if isinstance(seq_length, bool) or not isinstance(seq_length, int) or seq_length < 1:
        raise ValueError(f"seq_length must be a positive integer, got {seq_length!r}")
    c = table1_view(config) if accounting == "table1" else config
    T, H, L, N = seq_length, c.hidden_size, c.num_hidden_layers, c.num_attention_heads
    w, qk_in, v_in = block_widths(c)
    I, F, h = c.intermediate_size, c.num_feedforward_networks, c.intra_bottleneck_size
    norm = NORM_FLOPS[c.normalization_type]
    act = ACTIVATION_FLOPS.get(c.hidden_act, 8)
    rows = []

    def add(group, op, kind, flops, count=1):
        rows.append(
            {"group": group, "op": op, "kind": kind, "count": count, "flops": int(flops) * count}
        )

    d_in = embedding_input_width(c)
    if d_in is not None:
        add(
            "embedding",
            "trigram projection" if c.trigram_input else "projection",
            "matmul",
            2 * T * d_in * H,
        )
        add("embedding", "projection bias", "elementwise", T * H)
    add("embedding", "position + type adds, norm", "elementwise", T * H * (2 + norm))

    bias_width = 4 * w + F * (I + w)  # outputs of Q, K, V, O and the FFNs
    norm_width = (1 + F) * w  # attention norm and the FFN norms
    if c.use_bottleneck:
        add("block", "input bottleneck", "matmul", 2 * T * H * h, L)
        bias_width, norm_width = bias_width + h + H, norm_width + h + H
    if c.key_query_shared_bottleneck:
        add("block", "shared Q/K bottleneck", "matmul", 2 * T * H * h, L)
        bias_width, norm_width = bias_width + h, norm_width + h
    add("block", "query", "matmul", 2 * T * qk_in * w, L)
    add("block", "key", "matmul", 2 * T * qk_in * w, L)
    add("block", "value", "matmul", 2 * T * v_in * w, L)
    add("block", "scores QKᵀ", "matmul", 2 * T * T * w, L)  # N heads × [T, d]·[d, T]
    add("block", "context AV", "matmul", 2 * T * T * w, L)  # N heads × [T, T]·[T, d]
    add("block", "attention output", "matmul", 2 * T * w * w, L)
    add("block", f"FFNs (×{F})", "matmul", F * 2 * (2 * T * w * I), L)
    if c.use_bottleneck:
        add("block", "output bottleneck", "matmul", 2 * T * w * H, L)
    residual_width = (1 + F) * w + (H if c.use_bottleneck else 0)
    add("block", "bias adds", "elementwise", T * bias_width, L)
    add("block", "residual adds", "elementwise", T * residual_width, L)
    add("block", "norms", "elementwise", T * norm_width * norm, L)
    add("block", "activations", "elementwise", T * F * I * act, L)
    add("block", "softmax", "elementwise", N * T * T * SOFTMAX_FLOPS, L)
    if c.classifier_activation:
        add("pooler", "pooler", "matmul", 2 * H * H)
    return pd.DataFrame(rows)


def flops(
    config: MobileBertConfig,
    seq_length: int = 128,
    accounting: str = "built",
    elementwise: bool = False,
) -> int:
    """Matmul FLOPs per sequence (plus the rough elementwise rows if `elementwise`)."""
    df = flops_breakdown(config, seq_length, accounting)
    if not elementwise:
        df = df[df.kind == "matmul"]
    return int(df.flops.sum())


def heads_only_flops(config: MobileBertConfig, seq_length: int, queries: int) -> int:
    """Matmul FLOPs per sequence when the last block keeps only `queries` query rows.

    `Pretrainer(..., heads_only=True)` runs its last block at [CLS] and the P
    masked positions only (queries = P + 1): the key and value projections (and
    the shared Q/K bottleneck, or the input bottleneck when Q, K, V come from
    it) still see all T tokens; every other product of that block shrinks by
    queries / T. With queries = T this is `flops`.
    """
    if not 1 <= queries <= seq_length:
        raise ValueError(f"queries must be in [1, seq_length = {seq_length}], got {queries}")
    rows = flops_breakdown(config, seq_length)
    rows = rows[(rows.kind == "matmul") & (rows.group == "block")]
    key_side = {"key", "value", "shared Q/K bottleneck"}
    if config.use_bottleneck_attention:
        key_side.add("input bottleneck")
    shrinking = rows[~rows.op.isin(key_side)]
    one_layer = shrinking.flops / shrinking["count"]
    return flops(config, seq_length) - int(round((one_layer * (1 - queries / seq_length)).sum()))
