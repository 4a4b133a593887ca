"""Parameter counts of a config by arithmetic, and the MHA:FFN parameter ratio.

Closed forms of a `MobileBertConfig` (no model is built), so the
294M-parameter teacher is counted in microseconds; tests/test_anatomy.py and
notebook 03 check them against built Keras models.

Letters: V vocab, E embedding_size, H hidden_size (inter-block), h intra-block
width, w attention width (h with bottlenecks, H without), I intermediate_size,
F FFNs, L layers, P max positions, S token types.

Two accountings of the attention: "built" counts the layers the config
builds; "table1" counts the MHA as the paper's Table 1 draws it, Q, K and V
each projected from the MHA input (512-d for MobileBERT, "MHA 512/4/128").
The released code factorises MobileBERT's 512 -> 128 query and key
projections through one shared 512 -> 128 bottleneck
(key_query_shared_bottleneck), which is smaller and cheaper.
"""

from __future__ import annotations

import pandas as pd

from mbert_lib.config import MobileBertConfig

ACCOUNTINGS = ("built", "table1")
MHA_COMPONENTS = ("shared Q/K bottleneck", "query", "key", "value", "attention output")
FFN_PATTERN = r"FFN \d+ \(W1, W2\)"


def table1_view(config: MobileBertConfig) -> MobileBertConfig:
    """The config as Table 1 draws it: Q and K from the MHA input, no shared Q/K bottleneck."""
    if config.key_query_shared_bottleneck:
        return config.replace(key_query_shared_bottleneck=False)
    return config


def check_accounting(accounting: str) -> None:
    """Raises ValueError unless `accounting` is one of ACCOUNTINGS."""
    if accounting not in ACCOUNTINGS:
        raise ValueError(f"accounting must be one of {ACCOUNTINGS}, got {accounting!r}")


def block_widths(c: MobileBertConfig) -> tuple[int, int, int]:
    """(w, query/key input width, value input width) of a block."""
    w = c.attention_width
    qk_in = w if (c.use_bottleneck_attention or c.key_query_shared_bottleneck) else c.hidden_size
    v_in = w if c.use_bottleneck_attention else c.hidden_size
    return w, qk_in, v_in


def embedding_input_width(c: MobileBertConfig) -> int | None:
    """Input width of the embedding projection (3E with trigrams), None if there is none."""
    if c.trigram_input:
        return 3 * c.embedding_size
    return c.embedding_size if c.embedding_size != c.hidden_size else None


# ------------------------------------------------------------------ parameters
def param_breakdown(config: MobileBertConfig, heads: bool = False) -> pd.DataFrame:
    """One row per component: group, component, formula, each, count, total.

    `each` is the parameters of one instance, `count` how many there are (L
    for block components), `total = each · count`. The encoder's rows sum to
    `count_params(build_encoder(config))`; with `heads=True` the MLM and NSP
    heads are added, summing to `count_params(build_pretrainer(config))`.
    """
    c = config
    rows = _embedding_rows(c) + _block_rows(c)
    if c.classifier_activation:
        H = c.hidden_size
        rows.append(_row("pooler", "pooler (dense + tanh)", "H·H + H", H * H + H))
    if heads:
        rows += _head_rows(c)
    return pd.DataFrame(rows)


def _row(group: str, component: str, formula: str, each, count=1) -> dict:
    """One row of `param_breakdown`: its columns, total = each · count."""
    return {
        "group": group,
        "component": component,
        "formula": formula,
        "each": int(each),
        "count": int(count),
        "total": int(each) * int(count),
    }


def _embedding_rows(c: MobileBertConfig) -> list[dict]:
    """The embedding's rows: token table, projection (if any), position and token-type
    tables, norm."""
    V, E, H = c.vocab_size, c.embedding_size, c.hidden_size
    rows = [_row("embedding", "token table", "V·E", V * E)]
    d_in = embedding_input_width(c)
    if d_in is not None:
        rows.append(
            _row(
                "embedding",
                "trigram projection" if c.trigram_input else "embedding projection",
                ("3E" if c.trigram_input else "E") + "·H + H",
                d_in * H + H,
            )
        )
    rows.append(_row("embedding", "position table", "P·H", c.max_position_embeddings * H))
    rows.append(_row("embedding", "token-type table", "S·H", c.type_vocab_size * H))
    rows.append(_row("embedding", "embedding norm", "2H", 2 * H))
    return rows


def _block_rows(c: MobileBertConfig) -> list[dict]:
    """The rows of the L blocks' components (count L each), in the block's order."""
    H, L = c.hidden_size, c.num_hidden_layers
    w, qk_in, v_in = block_widths(c)
    I, h = c.intermediate_size, c.intra_bottleneck_size
    w_sym = "h" if c.use_bottleneck else "H"
    qk_sym = w_sym if qk_in == w else "H"
    v_sym = w_sym if v_in == w else "H"
    rows = []
    if c.use_bottleneck:
        rows.append(_row("block", "input bottleneck (linear in)", "H·h + h", H * h + h, L))
        rows.append(_row("block", "input bottleneck norm", "2h", 2 * h, L))
    if c.key_query_shared_bottleneck:
        rows.append(_row("block", "shared Q/K bottleneck", "H·h + h", H * h + h, L))
        rows.append(_row("block", "shared Q/K bottleneck norm", "2h", 2 * h, L))
    for name, d, sym in (("query", qk_in, qk_sym), ("key", qk_in, qk_sym), ("value", v_in, v_sym)):
        rows.append(_row("block", name, f"{sym}·{w_sym} + {w_sym}", d * w + w, L))
    rows.append(_row("block", "attention output", f"{w_sym}·{w_sym} + {w_sym}", w * w + w, L))
    rows.append(_row("block", "attention norm", f"2{w_sym}", 2 * w, L))
    for k in range(c.num_feedforward_networks):
        rows.append(
            _row("block", f"FFN {k} (W1, W2)", f"2·{w_sym}·I + I + {w_sym}", 2 * w * I + I + w, L)
        )
        rows.append(_row("block", f"FFN {k} norm", f"2{w_sym}", 2 * w, L))
    if c.use_bottleneck:
        rows.append(_row("block", "output bottleneck (linear out)", "h·H + H", h * H + H, L))
        rows.append(_row("block", "output bottleneck norm", "2H", 2 * H, L))
    return rows


def _head_rows(c: MobileBertConfig) -> list[dict]:
    """The pre-training heads' rows: the MLM head's, then the NSP classifier's."""
    V, E, H = c.vocab_size, c.embedding_size, c.hidden_size
    rows = [
        _row("mlm_head", "MLM transform", "H·H + H", H * H + H),
        _row("mlm_head", "MLM transform LayerNorm", "2H", 2 * H),
    ]
    if H > E:
        rows.append(_row("mlm_head", "extra_output_weights", "V·(H − E)", V * (H - E)))
    rows.append(_row("mlm_head", "MLM output bias", "V", V))
    rows.append(_row("nsp_head", "NSP classifier", "2H + 2", 2 * H + 2))
    return rows


def param_total(config: MobileBertConfig, pooler: bool = True, heads: bool = False) -> int:
    """Total parameters: the encoder (with its pooler if it has one), optionally the heads."""
    df = param_breakdown(config, heads=heads)
    if not pooler:
        df = df[df.group != "pooler"]
    return int(df.total.sum())


def param_groups(config: MobileBertConfig, heads: bool = False) -> pd.Series:
    """Total parameters per group (embedding, block, pooler, heads)."""
    return param_breakdown(config, heads=heads).groupby("group", sort=False).total.sum()


# ------------------------------------------------------------ MHA : FFN ratio
def mha_ffn_ratio(config: MobileBertConfig, accounting: str = "table1") -> float:
    """Parameters of one block's MHA divided by those of its F FFNs (kernels + biases).

    MHA = Q, K, V and output projections, plus the shared Q/K bottleneck
    when the accounting is "built" and the config has one; FFN = all F
    FFNs. Norms and the input/output bottlenecks (Table 1's "linear in/out")
    count for neither. BERT: 4H²/(8H²) ≈ 0.5.
    """
    check_accounting(accounting)
    c = table1_view(config) if accounting == "table1" else config
    df = param_breakdown(c)
    mha = df.component.isin(MHA_COMPONENTS)
    ffn = df.component.str.match(FFN_PATTERN)
    return float(df[mha].each.sum() / df[ffn].each.sum())


def mha_ffn_table(configs: dict[str, MobileBertConfig]) -> pd.DataFrame:
    """Per named config: w, I, F, MHA and FFN parameters per block, both ratios."""
    rows = []
    for name, c in configs.items():
        built = param_breakdown(c)
        rows.append(
            {
                "config": name,
                "H": c.hidden_size,
                "w": c.attention_width,
                "I": c.intermediate_size,
                "F": c.num_feedforward_networks,
                "MHA params (built)": int(built[built.component.isin(MHA_COMPONENTS)].each.sum()),
                "FFN params": int(built[built.component.str.match(FFN_PATTERN)].each.sum()),
                "ratio (Table 1 MHA)": mha_ffn_ratio(c, "table1"),
                "ratio (built)": mha_ffn_ratio(c, "built"),
            }
        )
    return pd.DataFrame(rows).set_index("config")


def ffn_count_sweep(config: MobileBertConfig, counts=range(1, 7)) -> pd.DataFrame:
    """MHA:FFN ratio of `config` with F = each of `counts` stacked FFNs (both accountings)."""
    rows = []
    for f in counts:
        c = config.replace(num_feedforward_networks=f)
        per_block = int(param_groups(c)["block"]) // c.num_hidden_layers
        rows.append(
            {
                "F": f,
                "params per block": per_block,
                "ratio (Table 1 MHA)": mha_ffn_ratio(c, "table1"),
                "ratio (built)": mha_ffn_ratio(c, "built"),
            }
        )
    return pd.DataFrame(rows)
