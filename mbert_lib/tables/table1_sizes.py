"""Table 1 (model sizes) and the paper's headline FLOPs beside the counts of this project:
the presets by arithmetic (`mbert_lib.anatomy`), and the models a run built (its step
records, `mbert_lib.step_records`).
"""

from __future__ import annotations

import math

import pandas as pd

from mbert_lib.anatomy.flops import flops
from mbert_lib.anatomy.params import block_widths, param_total, table1_view
from mbert_lib.config import PRESETS, get_preset
from mbert_lib.paper import FLOPS_B, TABLE1
from mbert_lib.step_records import Records, result
from mbert_lib.tables.sst2_finetuning import SST2_MODELS


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


def table1(records: Records) -> pd.DataFrame:
    """Paper Table 1 parameter counts beside the presets' encoders (closed form), and the
    encoders the latency step built (when it ran), in millions."""
    built = {
        r["model"]: r["params"]
        for r in (result(records, "latency") or {}).get("records", [])
        if "params" in r
    }
    rows = []
    for name, row in TABLE1.items():
        ours = param_total(get_preset(name)) / 1e6
        rows.append(
            {
                "model": name,
                "layers": row["layers"],
                "paper (M)": row["params_m"],
                "ours, encoder (M)": ours,
                "ours, built by the latency step (M)": built.get(name, math.nan) / 1e6
                if name in built
                else math.nan,
                "ours vs paper (%)": 100 * (ours / row["params_m"] - 1),
            }
        )
    return pd.DataFrame(rows)


def run_sizes(records: Records) -> pd.DataFrame | None:
    """Encoder parameters of the models this run fine-tuned (built models), and each one's
    size relative to the teacher beside the paper's MobileBERT / IB-BERT_LARGE."""
    finetune = result(records, "finetune")
    if finetune is None:
        return None
    done = {m: e for m, e in finetune["models"].items() if e.get("status") == "done"}
    teacher = done.get("teacher", {}).get("params")
    ratio = TABLE1["ibbert_large"]["params_m"] / TABLE1["mobilebert"]["params_m"]
    rows = [
        {
            "model": SST2_MODELS.get(m, (m,))[0],
            "step": m,
            "encoder params": f"{int(e['params']):,}",
            "teacher / model": teacher / e["params"] if teacher else math.nan,
            "paper: IB-BERT_LARGE / MobileBERT": ratio if m == "pkt" else math.nan,
        }
        for m, e in done.items()
    ]
    return pd.DataFrame(rows)
