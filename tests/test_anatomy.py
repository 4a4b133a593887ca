"""mbert_lib.anatomy: closed forms against built Keras models and against hand arithmetic."""

import math

import pandas as pd
import pytest
import tensorflow as tf

from mbert_lib import anatomy, build_encoder, build_pretrainer, count_params, get_preset, tables
from mbert_lib.layers.transformer import MobileBertTransformer, block_kwargs
from mbert_lib.paper import MHA_FFN_RATIO_BAND

SMALL = dict(vocab_size=97, num_hidden_layers=2, max_position_embeddings=32)


def small(preset, **changes):
    return get_preset(preset).replace(**{**SMALL, **changes})


# Every code path of the block and the embedding: trigram or not, E < H or
# E = H, bottleneck or not, shared Q/K bottleneck, bottleneck attention,
# teacher shape (h > H), pooler or not, F = 1..4.
SMALL_CONFIGS = {
    "mobilebert": small(
        "mobilebert",
        hidden_size=64,
        intra_bottleneck_size=16,
        intermediate_size=32,
        embedding_size=16,
    ),
    "mobilebert_tiny": small(
        "mobilebert_tiny",
        hidden_size=64,
        intra_bottleneck_size=16,
        intermediate_size=32,
        embedding_size=16,
    ),
    "ibbert_large": small(
        "ibbert_large",
        hidden_size=32,
        intra_bottleneck_size=64,
        intermediate_size=96,
        embedding_size=8,
    ),
    "bert_base": small(
        "bert_base",
        hidden_size=48,
        embedding_size=48,
        intra_bottleneck_size=48,
        num_attention_heads=4,
        intermediate_size=96,
    ),
    "bert_small_embedding": small(
        "bert_base",
        hidden_size=48,
        embedding_size=16,
        intra_bottleneck_size=48,
        num_attention_heads=4,
        intermediate_size=96,
    ),
    "tiny_teacher": small("tiny_teacher"),
    "tiny_student": small("tiny_student"),
    "tiny_student_f3_pooler": small(
        "tiny_student", num_feedforward_networks=3, classifier_activation=True, type_vocab_size=3
    ),
}


@pytest.fixture(scope="module")
def encoders():
    return {name: build_encoder(c) for name, c in SMALL_CONFIGS.items()}


@pytest.mark.parametrize("name", sorted(SMALL_CONFIGS))
def test_param_total_equals_built_encoder(encoders, name):
    assert anatomy.param_total(SMALL_CONFIGS[name]) == count_params(encoders[name])


@pytest.mark.parametrize("name", ["mobilebert", "ibbert_large", "bert_small_embedding"])
def test_param_total_with_heads_equals_built_pretrainer(name):
    c = SMALL_CONFIGS[name]
    assert anatomy.param_total(c, heads=True) == count_params(build_pretrainer(c))


def test_each_block_component_equals_its_built_sublayer(encoders):
    """Component by component, not only the sum (errors could cancel in a total)."""
    block = encoders["mobilebert"].blocks[0]
    att = block.attention
    built = {
        "input bottleneck (linear in)": block.bottleneck_input,
        "input bottleneck norm": block.bottleneck_input_norm,
        "shared Q/K bottleneck": block.bottleneck_attention,
        "shared Q/K bottleneck norm": block.bottleneck_attention_norm,
        "query": att.query,
        "key": att.key,
        "value": att.value,
        "attention output": att.attention_output,
        "attention norm": block.attention_norm,
        "output bottleneck (linear out)": block.bottleneck_output,
        "output bottleneck norm": block.bottleneck_output_norm,
    }
    for k, ffn in enumerate(block.ffns):
        built[f"FFN {k} norm"] = ffn.norm
    df = anatomy.param_breakdown(SMALL_CONFIGS["mobilebert"]).set_index("component")
    for component, layer in built.items():
        assert df.loc[component, "each"] == count_params(layer), component
    for k, ffn in enumerate(block.ffns):
        assert df.loc[f"FFN {k} (W1, W2)", "each"] == (
            count_params(ffn.intermediate) + count_params(ffn.output_dense)
        )
    assert df[df.group == "block"].each.sum() == count_params(block)


def test_big_presets_match_the_known_totals():
    assert anatomy.param_total(get_preset("mobilebert")) == 24_581_888
    assert anatomy.param_total(get_preset("mobilebert_tiny")) == 15_485_696
    assert anatomy.param_total(get_preset("ibbert_large")) == 294_467_840
    assert anatomy.param_total(get_preset("ibbert_large"), pooler=False) == 294_205_184
    assert anatomy.param_total(get_preset("bert_base")) == 109_482_240


def test_mobilebert_by_hand():
    """MobileBERT written out with numbers only (V 30522, E 128, H 512, h 128, I 512, F 4)."""
    embedding = 30522 * 128 + (384 * 512 + 512) + 512 * 512 + 2 * 512 + 2 * 512
    linear_in = 512 * 128 + 128
    qk_shared = 512 * 128 + 128
    attention = 2 * (128 * 128 + 128) + (512 * 128 + 128) + (128 * 128 + 128)
    ffns = 4 * (128 * 512 + 512 + 512 * 128 + 128)
    linear_out = 128 * 512 + 512
    norms = 2 * (128 + 128 + 128 + 4 * 128 + 512)
    block = linear_in + qk_shared + attention + ffns + linear_out + norms
    assert embedding + 24 * block == 24_581_888
    assert anatomy.param_total(get_preset("mobilebert")) == embedding + 24 * block
    heads = (512 * 512 + 512) + 2 * 512 + 30522 * (512 - 128) + 30522 + (2 * 512 + 2)
    assert anatomy.param_total(get_preset("mobilebert"), heads=True) == 24_581_888 + heads
    groups = anatomy.param_groups(get_preset("mobilebert"))
    assert groups["embedding"] == embedding and groups["block"] == 24 * block


# ------------------------------------------------------------------------ shapes
@pytest.mark.parametrize("name", ["mobilebert", "mobilebert_tiny", "ibbert_large", "bert_base"])
def test_shape_trace_matches_a_run_of_the_layer(name):
    c = get_preset(name)
    layer = MobileBertTransformer(**block_kwargs(c))
    x, mask = tf.random.normal([2, 5, c.hidden_size]), tf.ones([2, 5])
    y_plain, _ = layer(x, mask)
    (y, probs), observed = anatomy.trace_sublayers(layer, x, mask)
    cmp = anatomy.compare_shape_trace(c, observed, batch_size=2, seq_length=5)
    assert cmp.match.all(), cmp[~cmp.match]
    # Q, K, V, probabilities, context, output, add & norm; 2 per FFN; linear in/out; s.
    expected_rows = (
        7
        + 2 * c.num_feedforward_networks
        + (2 if c.use_bottleneck else 0)
        + (1 if c.key_query_shared_bottleneck else 0)
    )
    assert len(cmp) == expected_rows
    tf.debugging.assert_equal(y, y_plain)  # tracing does not change the computation
    assert all("call" not in vars(sub) for sub in layer._flatten_layers())  # wrappers removed


def test_shape_comparison_detects_a_wrong_config():
    c = get_preset("mobilebert")
    layer = MobileBertTransformer(**block_kwargs(c))
    _, observed = anatomy.trace_sublayers(layer, tf.zeros([1, 4, 512]), tf.ones([1, 4]))
    cmp = anatomy.compare_shape_trace(c.replace(intra_bottleneck_size=256), observed, 1, 4)
    assert not cmp.match.all()


def test_mobilebert_trace_text():
    rows = anatomy.block_shape_trace(get_preset("mobilebert")).set_index("step").shapes
    assert rows["input bottleneck (linear in)"] == "x [B,T,512] → a [B,T,128]"
    assert rows["shared Q/K bottleneck"] == "x [B,T,512] → s [B,T,128]"
    assert rows["value projection"] == "x [B,T,512] → V [B,T,4,32]"
    assert rows["query projection"] == "s [B,T,128] → Q [B,T,4,32]"


# ------------------------------------------------------------------------- ratio
def test_bert_ratio_is_four_h_squared_over_eight():
    H, I = 768, 3072
    expected = 4 * (H * H + H) / (2 * H * I + I + H)
    for accounting in anatomy.ACCOUNTINGS:
        assert anatomy.mha_ffn_ratio(get_preset("bert_base"), accounting) == pytest.approx(expected)


def test_mobilebert_ratio_by_hand_and_against_built_layers(encoders):
    mb = get_preset("mobilebert")
    ffn = 4 * (2 * 128 * 512 + 512 + 128)
    table1 = 3 * (512 * 128 + 128) + (128 * 128 + 128)  # Q, K, V from 512, O
    built = (512 * 128 + 128) + 2 * (128 * 128 + 128) + (512 * 128 + 128) + (128 * 128 + 128)
    assert anatomy.mha_ffn_ratio(mb, "table1") == pytest.approx(table1 / ffn)
    assert anatomy.mha_ffn_ratio(mb, "built") == pytest.approx(built / ffn)
    lo, hi = MHA_FFN_RATIO_BAND
    assert lo <= anatomy.mha_ffn_ratio(mb, "table1") <= hi
    assert anatomy.mha_ffn_ratio(mb.replace(num_feedforward_networks=1)) > hi
    # The same ratio from a built block's weights (small shape).
    block = encoders["mobilebert"].blocks[0]
    mha = count_params(block.attention) + count_params(block.bottleneck_attention)
    ffns = sum(count_params(f.intermediate) + count_params(f.output_dense) for f in block.ffns)
    assert anatomy.mha_ffn_ratio(SMALL_CONFIGS["mobilebert"], "built") == pytest.approx(mha / ffns)


def test_table1_view_builds_the_table1_shape():
    c = SMALL_CONFIGS["mobilebert"]
    view = anatomy.table1_view(c)
    assert not view.key_query_shared_bottleneck
    assert anatomy.param_total(view) == count_params(build_encoder(view))
    assert anatomy.table1_view(get_preset("bert_base")) == get_preset("bert_base")


# ------------------------------------------------------------------------- FLOPs
def test_mobilebert_flops_by_hand():
    T = 128
    per_block = (
        T * 512 * 128 * 2  # input bottleneck, shared Q/K bottleneck
        + T * 128 * 128 * 2  # Q, K from the 128-d shared bottleneck
        + T * 512 * 128  # V from the 512-d input
        + T * T * 128 * 2  # scores, context
        + T * 128 * 128  # attention output
        + 4 * 2 * T * 128 * 512  # 4 FFNs
        + T * 128 * 512
    )  # output bottleneck
    macs = T * 384 * 512 + 24 * per_block  # + trigram projection
    assert anatomy.flops(get_preset("mobilebert"), T) == 2 * macs


def test_heads_only_flops_by_hand():
    """The last block at q = 21 query rows ([CLS] + 20 masked positions) of T = 128."""
    T, q = 128, 21

    def block(queries):
        return (
            queries * 512 * 128  # input bottleneck (the attention residual)
            + T * 512 * 128  # shared Q/K bottleneck: keys need every token
            + queries * 128 * 128  # Q
            + T * 128 * 128  # K
            + T * 512 * 128  # V from the 512-d input
            + queries * T * 128 * 2  # scores, context
            + queries * 128 * 128  # attention output
            + 4 * 2 * queries * 128 * 512  # 4 FFNs
            + queries * 128 * 512
        )  # output bottleneck

    c = get_preset("mobilebert")
    macs = T * 384 * 512 + 23 * block(T) + block(q)
    assert anatomy.heads_only_flops(c, T, q) == 2 * macs
    assert anatomy.heads_only_flops(c, T, T) == anatomy.flops(c, T)
    with pytest.raises(ValueError, match="queries"):
        anatomy.heads_only_flops(c, T, T + 1)


@pytest.mark.parametrize(
    "name", ["mobilebert", "ibbert_large", "bert_base", "tiny_student_f3_pooler"]
)
def test_matmul_flops_from_built_kernel_sizes(encoders, name):
    """2·T·(kernel entries) for every projection + 4·T²·w per block for scores and context."""
    T, c, enc = 16, SMALL_CONFIGS[name], encoders[name]
    kernels = sum(
        int(tf.size(v)) for v in enc.weights if "kernel" in v.name and "pooler" not in v.name
    )
    pooler = 2 * c.hidden_size**2 if c.classifier_activation else 0
    attention = c.num_hidden_layers * 4 * T * T * c.attention_width
    assert anatomy.flops(c, T) == 2 * T * kernels + attention + pooler


def test_flops_elementwise_rows_are_small_and_presets_near_the_paper():
    for name in ("mobilebert", "mobilebert_tiny", "bert_base"):
        c = get_preset(name)
        matmul, total = anatomy.flops(c), anatomy.flops(c, elementwise=True)
        assert matmul < total < 1.02 * matmul
    table = tables.flops_comparison()
    assert (table["built vs paper (%)"].abs() < 6).all()
    assert abs(table.loc["bert_base", "built vs paper (%)"]) < 1


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="accounting"):
        anatomy.mha_ffn_ratio(get_preset("mobilebert"), "paper")
    with pytest.raises(ValueError, match="seq_length"):
        anatomy.flops(get_preset("mobilebert"), 0)


def test_tables_cover_the_paper_numbers():
    presets = tables.preset_table()
    assert presets.loc["mobilebert", "params"] == 24_581_888
    assert presets.loc["mobilebert", "paper params (M)"] == 25.3
    assert math.isnan(presets.loc["tiny_student", "paper params (M)"])
    t1 = tables.table1_params_comparison()
    assert set(t1.index) == {"bert_base", "ibbert_large", "mobilebert", "mobilebert_tiny"}
    assert t1.loc["mobilebert", "pretrainer (M)"] * 1e6 == pytest.approx(36_597_564)
    assert (t1["encoder vs paper (%)"].abs() < 3).all()
    assert isinstance(anatomy.mha_ffn_table({"m": get_preset("mobilebert")}), pd.DataFrame)


def test_figures_are_written(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from mbert_lib.viz import anatomy as viz

    mb = get_preset("mobilebert")
    viz.plot_preset_sizes(
        tables.preset_table(["mobilebert", "tiny_student"]), tmp_path / "presets.png"
    )
    viz.plot_mha_ffn_ratio(
        anatomy.mha_ffn_table({"mobilebert": mb}),
        MHA_FFN_RATIO_BAND,
        anatomy.ffn_count_sweep(mb, range(1, 4)),
        tmp_path / "ratio.png",
    )
    for name in ("presets.png", "ratio.png"):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"
