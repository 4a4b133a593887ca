"""Anatomy of a MobileBERT config, by arithmetic, checked against built models.

params   per-component parameter counts, totals, the MHA:FFN ratio
flops    FLOPs per sequence (matmuls; elementwise ops listed apart), also with the
         last block at the heads' positions only
shapes   a block traced shape by shape, and the shapes a built layer produces
compute  tokens and training FLOPs of a pre-training experiment
"""

from mbert_lib.anatomy.flops import flops, flops_breakdown, heads_only_flops
from mbert_lib.anatomy.params import (
    ACCOUNTINGS,
    ffn_count_sweep,
    mha_ffn_ratio,
    mha_ffn_table,
    param_breakdown,
    param_groups,
    param_total,
    table1_view,
)
from mbert_lib.anatomy.shapes import block_shape_trace, compare_shape_trace, trace_sublayers

__all__ = [
    "ACCOUNTINGS",
    "block_shape_trace",
    "compare_shape_trace",
    "ffn_count_sweep",
    "flops",
    "flops_breakdown",
    "heads_only_flops",
    "mha_ffn_ratio",
    "mha_ffn_table",
    "param_breakdown",
    "param_groups",
    "param_total",
    "table1_view",
    "trace_sublayers",
]
