"""The presets and the paper's Table 1 / headline FLOPs beside the counts computed here."""

from __future__ import annotations

import math

import pandas as pd

from mbert_lib.anatomy.flops import flops
from mbert_lib.anatomy.params import block_widths, param_total, table1_view
from mbert_lib.config import PRESETS, get_preset
from mbert_lib.paper import FLOPS_B, TABLE1


def preset_table(names=None, seq_length: int = 128) -> pd.DataFrame:
    """One row per preset: L, H, h, E, N, F, I, norm, act, params, GFLOPs, paper values.

    `params` is the encoder as `build_encoder` builds it (pooler included
    when the config has one); `GFLOPs` the matmul count at T = seq_length
    (`flops`, "built" accounting). Paper columns are NaN where the paper has
    no number (laptop presets, Table 7 variants).
    """
    rows = []
    for name in list(PRESETS) if names is None else names:
        c = get_preset(name)
        paper = TABLE1.get(name, {})
        rows.append(
            {
                "preset": name,
                "L": c.num_hidden_layers,
                "H": c.hidden_size,
                "h": c.attention_width,
                "E": c.embedding_size,
                "N": c.num_attention_heads,
                "F": c.num_feedforward_networks,
                "I": c.intermediate_size,
                "norm": c.normalization_type,
                "act": c.hidden_act,
                "params": param_total(c),
                "params (M)": param_total(c) / 1e6,
                "paper params (M)": paper.get("params_m", math.nan),
                f"GFLOPs @T={seq_length}": flops(c, seq_length) / 1e9,
                "paper GFLOPs": FLOPS_B.get(name, math.nan) if seq_length == 128 else math.nan,
            }
        )
    return pd.DataFrame(rows).set_index("preset")


def table1_params_comparison() -> pd.DataFrame:
    """Paper Table 1 parameter counts beside the counts of several conventions, in millions.

    Columns: paper; encoder (as built, pooler if the config has one); encoder
    without pooler; encoder with the attention as Table 1 draws it
    (`table1_view`); pretrainer (encoder + MLM head with extra_output_weights
    + NSP head); and the encoder's gap to the paper in percent.
    """
    rows = []
    for name, paper in TABLE1.items():
        c = get_preset(name)
        encoder = param_total(c) / 1e6
        rows.append(
            {
                "model": name,
                "paper (M)": paper["params_m"],
                "encoder (M)": encoder,
                "encoder w/o pooler (M)": param_total(c, pooler=False) / 1e6,
                "encoder, Table 1 MHA (M)": param_total(table1_view(c)) / 1e6,
                "pretrainer (M)": param_total(c, heads=True) / 1e6,
                "encoder vs paper (%)": 100 * (encoder / paper["params_m"] - 1),
            }
        )
    return pd.DataFrame(rows).set_index("model")


def flops_comparison(seq_length: int = 128) -> pd.DataFrame:
    """Paper GFLOPs (T = 128) beside matmul counts (built, Table 1 MHA) and with elementwise ops."""
    rows = []
    for name, paper in FLOPS_B.items():
        c = get_preset(name)
        built = flops(c, seq_length) / 1e9
        rows.append(
            {
                "model": name,
                "paper (GFLOPs)": paper,
                "matmul, built": built,
                "matmul, Table 1 MHA": flops(c, seq_length, "table1") / 1e9,
                "+ elementwise, Table 1 MHA": flops(c, seq_length, "table1", elementwise=True)
                / 1e9,
                "built vs paper (%)": 100 * (built / paper - 1),
            }
        )
    return pd.DataFrame(rows).set_index("model")


def table1_shapes(names=tuple(TABLE1)) -> pd.DataFrame:
    """The paper's Table 1 rows, filled in from the configs (one column per model).

    MHA "in" is the width Q, K and V are projected from as Table 1 draws it
    (`table1_view`); params are the encoder's, in millions.
    """
    columns = {}
    for name in names:
        c = get_preset(name)
        H, h, E = c.hidden_size, c.intra_bottleneck_size, c.embedding_size
        w, qk_in, _ = block_widths(table1_view(c))
        embedding = f"{E}, 3-conv → {H}" if c.trigram_input else f"{E} → {H}" if E != H else f"{E}"
        columns[name] = {
            "embedding": embedding,
            "inter-block size": f"{H}",
            "linear in": f"{H} → {h}" if c.use_bottleneck else "–",
            "MHA in/heads/out": f"{qk_in}/{c.num_attention_heads}/{w}",
            "FFN in/hidden/out × count": (
                f"{w}/{c.intermediate_size}/{w} ×{c.num_feedforward_networks}"
            ),
            "linear out": f"{h} → {H}" if c.use_bottleneck else "–",
            "layers / params": f"{c.num_hidden_layers} / {param_total(c) / 1e6:.2f}M",
        }
    return pd.DataFrame(columns)
