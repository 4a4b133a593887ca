# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # 03 · Bottleneck blocks, stacked FFNs and the MHA:FFN balance: worked solutions (instructor copy)
#
# Worked answers to the exercises of `notebooks/03_bottleneck_blocks.ipynb`. Every
# number is computed when the notebook runs; the prose reads the printed values of the
# committed full run. Run times printed by `stopwatch` are wall times of that full run
# on the CPU printed in the first cell.

# %%
import mbert_lib  # noqa: F401  (first: silences TensorFlow's start-up logs)
from mbert_lib import anatomy, build_pretrainer, count_params, get_preset, paper
from mbert_lib import runtime
from mbert_lib import hardware
from mbert_lib.experiment.distill import load_distill_experiment
from mbert_lib.distill.losses import attention_transfer, feature_map_transfer
from mbert_lib.distill.objective import DistillationObjective
from mbert_lib.distill.plan import plan_stages
from mbert_lib.layers.transformer import MobileBertTransformer, block_kwargs

import numpy as np
import pandas as pd
import tensorflow as tf
from IPython.display import display

pd.set_option("display.width", 180)
pd.set_option("display.max_columns", 20)
pd.set_option("display.max_colwidth", 60)
tf.random.set_seed(0)
print(hardware.describe())
print("fast mode:", runtime.fast_mode())
mobilebert = get_preset("mobilebert")
B, T = 2, runtime.pick(128, 16)
x = tf.random.normal([B, T, mobilebert.hidden_size], seed=1)             # [B, T, H]
mask = tf.ones([B, T])                                                    # [B, T]
lo, hi = paper.MHA_FFN_RATIO_BAND

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 1 · Attention on the bottleneck, with four FFNs
#
# > Build a MobileBERT block with `use_bottleneck_attention=True` and
# > `key_query_shared_bottleneck=False` (MobileBERT_TINY's attention) but F = 4. Trace
# > it with `anatomy.trace_sublayers`: which shapes change? What does its MHA:FFN ratio
# > become, and how many FFNs would put it back in the 0.4–0.6 band?
#
# *Hint: line the two `compare_shape_trace` tables up by step; with Q, K and V all
# read from the 128-wide $a$, the MHA has $4(h^2 + h)$ parameters whatever the
# accounting.*
#
# $$\frac{N_\text{MHA}}{N_\text{FFN}} = \frac{4(h^2 + h)}{F\,(2hI + I + h)}
#   = \frac{66{,}048}{F \cdot 131{,}712} \approx \frac{0.50}{F}$$

# %%
on_bottleneck = mobilebert.replace(use_bottleneck_attention=True,
                                   key_query_shared_bottleneck=False)
with runtime.stopwatch("exercise 1"):
    traces = {}
    for name, cfg in (("mobilebert", mobilebert), ("attention on a, F = 4", on_bottleneck)):
        layer = MobileBertTransformer(**block_kwargs(cfg),
                                      name=name.split(",")[0].replace(" ", "_"))
        (y, probs), observed = anatomy.trace_sublayers(layer, x, mask)
        traces[name] = (layer, anatomy.compare_shape_trace(cfg, observed, B, T), y)
    side = pd.merge(traces["mobilebert"][1][["step", "shapes"]],
                    traces["attention on a, F = 4"][1][["step", "shapes", "match"]],
                    on="step", how="left", suffixes=(" (mobilebert)", " (on a)"))
    side["changed"] = side["shapes (mobilebert)"] != side["shapes (on a)"]
only_on_a = set(traces["attention on a, F = 4"][1].step) - set(side.step)
print(f"{int(side.changed.sum())} of MobileBERT's {len(side)} steps differ; steps only in the "
      f"variant: {sorted(only_on_a) or 'none'}")
side[side.changed]

# %%
sweep = anatomy.ffn_count_sweep(on_bottleneck, range(1, 7))
sweep["in band"] = sweep["ratio (Table 1 MHA)"].between(lo, hi)
sweep

# %%
block_a = traces["attention on a, F = 4"][0]
h, I = mobilebert.intra_bottleneck_size, mobilebert.intermediate_size
mha_weights = count_params(block_a.attention)
ffn_weights = sum(count_params(f.intermediate) + count_params(f.output_dense)
                  for f in block_a.ffns)
assert traces["attention on a, F = 4"][1].match.all() and not only_on_a
assert side[side.changed].step.tolist() == ["shared Q/K bottleneck", "query projection",
                                            "key projection", "value projection"]
assert mha_weights == 4 * (h * h + h) and ffn_weights == 4 * (2 * h * I + I + h)
ratio_f4 = anatomy.mha_ffn_ratio(on_bottleneck)
assert ratio_f4 == anatomy.mha_ffn_ratio(on_bottleneck, "built") == mha_weights / ffn_weights
assert sweep[sweep["in band"]].F.tolist() == [1]
assert tuple(block_a.attention.value.kernel.shape) == (h, 4, 32)        # V reads a, not x
assert count_params(block_a) == anatomy.param_breakdown(on_bottleneck).query(
    "group == 'block'")["each"].sum()
print(f"MHA {mha_weights:,} / FFNs {ffn_weights:,} = {ratio_f4:.3f} (built weights); "
      f"block {count_params(block_a):,} parameters vs MobileBERT's "
      f"{count_params(traces['mobilebert'][0]):,}")

# %% [markdown]
# **Answer.** One step disappears, the shared Q/K bottleneck, and three change their
# input: the query, key *and value* projections now read the input bottleneck's
# $a$ [B, T, 128] instead of $s$ (Q, K) and $x$ [B, T, 512] (V). Their outputs, the
# attention maps and everything after them keep their shapes. The MHA shrinks to
# $4(h^2 + h)$ = 66,048 parameters (both accountings agree: there is no shared
# bottleneck to count), so with four FFNs the ratio is 0.125, far below the band.
# Only **F = 1** brings it back (0.50, the sweep): attention on the narrow bottleneck
# needs one narrow FFN, not four. MobileBERT_TINY's F = 2 gives 0.25; the paper does
# not claim the band for TINY.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 2 · The factorisation for the keys, and why LayerNorm breaks it
#
# > Check the factorisation of section 2 for the keys: fold $W_s$, $\gamma_s$, $\beta_s$
# > into $W^K_\text{eff}$ and compare with `block.attention.key`. Why would the check fail
# > if the block used LayerNorm instead of NoNorm?
#
# *Hint: $K = \mathrm{Norm}(xW_s + b_s)W^K + b^K$; with NoNorm the whole map is affine in
# x, so an affine-combination test ($K(\lambda x_1 + (1-\lambda)x_2) = \lambda K(x_1) +
# (1-\lambda) K(x_2)$) passes; try it with LayerNorm.*
#
# $$K = \big((xW_s + b_s) \odot \gamma_s + \beta_s\big) W^K + b^K
#     = x\,\underbrace{W_s \operatorname{diag}(\gamma_s) W^K}_{W^K_\text{eff}}
#     + \underbrace{(b_s \odot \gamma_s + \beta_s) W^K + b^K}_{b^K_\text{eff}}$$

# %%
def randomise(block, rng):
    """Trained-looking γ, β and biases (at initialisation γ = 1, β = b = 0)."""
    for weight in block.weights:
        kind = weight.name.split("/")[-1].split(":")[0]
        if kind == "gamma":
            weight.assign(rng.normal(1.0, 0.2, weight.shape))
        elif kind in ("beta", "bias"):
            weight.assign(rng.normal(0.0, 0.2, weight.shape))


def folded_keys(block, x):
    """(K from the block's layers, K from W^K_eff and b^K_eff), each [B, T, N·d]."""
    dense_s, norm_s, key = block.bottleneck_attention, block.bottleneck_attention_norm, \
        block.attention.key
    n_d = key.num_heads * key.head_size
    k_kernel = tf.reshape(key.kernel, [-1, n_d])                          # [h, N·d]
    k_eff = dense_s.kernel @ (norm_s.gamma[:, None] * k_kernel)           # [H, N·d]
    k_bias = ((dense_s.bias * norm_s.gamma + norm_s.beta)[None] @ k_kernel)[0] \
        + tf.reshape(key.bias, [-1])
    from_block = tf.reshape(key(norm_s(dense_s(x))), [B, T, n_d])
    return from_block.numpy(), (tf.einsum("BTH,Hk->BTk", x, k_eff) + k_bias).numpy()


x2 = tf.random.normal(x.shape, mean=1.0, stddev=3.0, seed=2)             # other statistics
lam = 0.3
with runtime.stopwatch("exercise 2"):
    checks = {}
    for norm in ("no_norm", "layer_norm"):
        blk = MobileBertTransformer(**block_kwargs(mobilebert.replace(normalization_type=norm)),
                                    name=f"block_{norm}")
        blk(x, mask)
        randomise(blk, np.random.default_rng(0))
        k_block, k_folded = folded_keys(blk, x)

        def keys(inp, blk=blk):
            return folded_keys(blk, inp)[0]
        mix = keys(lam * x + (1 - lam) * x2) - (lam * keys(x) + (1 - lam) * keys(x2))
        scale = np.abs(k_block).max()
        checks[norm] = {"max |K − K_eff| / max |K|": np.abs(k_block - k_folded).max() / scale,
                        "affine-combination error / max |K|": np.abs(mix).max() / scale}
checks = pd.DataFrame(checks).T
checks.style.format("{:.1e}")

# %%
assert checks.loc["no_norm"].max() < 1e-5
assert checks.loc["layer_norm", "max |K − K_eff| / max |K|"] > 1e-2
assert checks.loc["layer_norm", "affine-combination error / max |K|"] > 1e-2
print("NoNorm: K == x W^K_eff + b^K_eff and K is affine in x; LayerNorm: neither")

# %% [markdown]
# **Answer.** With NoNorm the keys computed by the block equal $xW^K_\text{eff} +
# b^K_\text{eff}$ to float round-off, exactly as the queries did in section 2: both
# factor through the same $W_s \operatorname{diag}(\gamma_s)$. With LayerNorm the same fold
# is off by a large fraction of the keys' scale (table), because
# $\mathrm{LayerNorm}(z) = \gamma \odot (z - \mu(z))/\sigma(z) + \beta$ divides each
# token by its own $\sigma(z)$ and subtracts its own $\mu(z)$: the map from $x$ to $K$ is
# no longer affine (the affine-combination test fails too), so no single matrix
# $W^K_\text{eff}$ exists. The shared bottleneck is then a genuinely nonlinear
# projection, not a factorised linear one.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 3 · Same block size with h = 192 and one FFN
#
# > Keep MobileBERT's per-block parameter count (`anatomy.param_groups`) but choose
# > h = 192 and F = 1: which intermediate size I gives the same count, and where does its
# > ratio fall? (The paper's Table 3 explores such trade-offs.)
#
# *Hint: the block count is linear in I with slope $F(2h + 1)$; solve for I, round, and
# read both accountings of `anatomy.mha_ffn_ratio`.*
#
# For MobileBERT's block (shared Q/K bottleneck) with width h and F FFNs,
#
# $$N_\text{block} = \underbrace{3(Hh + h) + 2(h^2 + h) + (h^2 + h) + (hH + H)
#   + 2((3 + F)h + H)}_{N_0(h, F)} + F(2h + 1)\,I + Fh$$
#
# so $I^* = (N_\text{MobileBERT} - N_0 - Fh)/(F(2h + 1))$, rounded to an integer.

# %%
L = mobilebert.num_hidden_layers
target = int(anatomy.param_groups(mobilebert)["block"]) // L


def per_block(cfg):
    return int(anatomy.param_groups(cfg)["block"]) // cfg.num_hidden_layers


def matching_intermediate(h_, F_):
    """The I (integer) whose block is closest to MobileBERT's, from two library counts."""
    base = mobilebert.replace(intra_bottleneck_size=h_, num_feedforward_networks=F_)
    n1, n2 = per_block(base.replace(intermediate_size=1)), per_block(base.replace(
        intermediate_size=2))
    exact = 1 + (target - n1) / (n2 - n1)
    best = min((max(1, int(np.floor(exact))), int(np.ceil(exact))),
               key=lambda i: abs(per_block(base.replace(intermediate_size=i)) - target))
    return exact, base.replace(intermediate_size=best)


with runtime.stopwatch("exercise 3"):
    rows = []
    for h_, F_ in [(128, 4), (192, 1), (160, 2), (128, 2), (96, 6), (256, 1)]:
        exact, cfg = matching_intermediate(h_, F_)
        rows.append({"h": h_, "F": F_, "I (exact)": exact, "I": cfg.intermediate_size,
                     "params per block": per_block(cfg), "vs MobileBERT": per_block(cfg) - target,
                     "ratio (Table 1 MHA)": anatomy.mha_ffn_ratio(cfg, "table1"),
                     "ratio (built)": anatomy.mha_ffn_ratio(cfg, "built"),
                     "GFLOPs @T=128": anatomy.flops(cfg) / 1e9})
    designs = pd.DataFrame(rows)
designs.round(3)

# %%
H = mobilebert.hidden_size
h3, F3 = 192, 1
n0 = 3 * (H * h3 + h3) + 2 * (h3 * h3 + h3) + (h3 * h3 + h3) + (h3 * H + H) \
    + 2 * ((3 + F3) * h3 + H)
I_exact = (target - n0 - F3 * h3) / (F3 * (2 * h3 + 1))
row = designs[(designs.h == 192) & (designs.F == 1)].iloc[0]
assert abs(row["I (exact)"] - I_exact) < 1e-9 and row.I == round(I_exact)
assert designs.iloc[0].I == 512 and designs.iloc[0]["vs MobileBERT"] == 0   # MobileBERT itself
mha_t1 = 3 * (H * h3 + h3) + (h3 * h3 + h3)
ffn = F3 * (2 * h3 * row.I + row.I + h3)
assert abs(row["ratio (Table 1 MHA)"] - mha_t1 / ffn) < 1e-12
check_cfg = mobilebert.replace(intra_bottleneck_size=192, num_feedforward_networks=1,
                               intermediate_size=int(row.I))
check_block = MobileBertTransformer(**block_kwargs(check_cfg), name="h192_block")
check_block(x, mask)
assert count_params(check_block) == row["params per block"]
print(f"h = 192, F = 1: I* = {I_exact:.2f} → I = {int(row.I)}, {int(row['params per block']):,} "
      f"parameters per block ({int(row['vs MobileBERT']):+d}); ratio "
      f"{row['ratio (Table 1 MHA)']:.2f} (Table 1) / {row['ratio (built)']:.2f} (built); "
      f"built block checked")

# %% [markdown]
# **Answer.** With h = 192 and one FFN the block matches MobileBERT's 842,240 parameters
# at $I^* \approx 867.6$, i.e. **I = 868** (164 parameters over). Its MHA:FFN ratio is
# about **1.0** in the Table 1 accounting (0.92 counting the shared bottleneck), twice
# the top of the 0.4–0.6 band: one FFN has about $2hI \approx 1{,}736\,h$ parameters,
# the attention (Q, K, V from 512, output h → h) about $(3 \cdot 512 + h)\,h = 1{,}728\,h$,
# so the two sides are equal. The other rows show the
# trade-off the paper's architecture search walks along. At a fixed block size, more
# and narrower FFNs lower the ratio, wider bottlenecks raise it: in the Table 1
# accounting only the h = 128 designs are in the band (F = 4 with I = 512, or F = 2 with
# I = 1025, the same ratio: at h = 128 only F·I matters); h = 160 with two FFNs is just
# above (0.63; 0.56 with the shared bottleneck counted), h = 96 with six FFNs below,
# h = 192 and 256 with one FFN far above. The h = 192 block also needs slightly more
# FLOPs (5.50 against 5.39 GFLOPs per sequence), as attention works at width h.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 4 · When the $T^2$ terms outgrow the FFNs
#
# > Using `anatomy.flops_breakdown`, find the sequence length at which the attention's
# > $T^2$ terms cost more FLOPs than all four FFNs of a MobileBERT block.
#
# *Hint: per block, scores and context cost $2T^2h$ each and the F FFNs $4FThI$; the
# ratio is linear in T.*
#
# $$4T^2h > 4FThI \iff T > F\,I = 2{,}048$$
#
# (h cancels: the crossing depends only on the FFNs' total width.) Below, the first T
# where the breakdown's rows cross, found by bisection.

# %%
def attention_vs_ffns(cfg, T_):
    rows = anatomy.flops_breakdown(cfg, T_).query("group == 'block'")
    per = (rows.flops / rows["count"]).groupby(rows.op).sum()
    ffn_row = next(op for op in per.index if op.startswith("FFNs"))
    return int(per["scores QKᵀ"] + per["context AV"]), int(per[ffn_row])


def first_length_above(cfg, high=1 << 16):
    low = 1
    while low < high:
        mid = (low + high) // 2
        quadratic, ffns = attention_vs_ffns(cfg, mid)
        low, high = (mid + 1, high) if quadratic <= ffns else (low, mid)
    return low


with runtime.stopwatch("exercise 4"):
    crossing = pd.DataFrame([{
        "model": name, "F·I": cfg.num_feedforward_networks * cfg.intermediate_size,
        "first T with T² terms > FFNs": first_length_above(cfg),
        "T² / FFNs at T=128": np.divide(*attention_vs_ffns(cfg, 128)),
        "T² / FFNs at T=512": np.divide(*attention_vs_ffns(cfg, 512))}
        for name, cfg in (("mobilebert", mobilebert),
                          ("mobilebert_tiny", get_preset("mobilebert_tiny")),
                          ("bert_base", get_preset("bert_base")))]).set_index("model")
crossing.round(3)

# %%
t_star = crossing.loc["mobilebert", "first T with T² terms > FFNs"]
quad, ffns = attention_vs_ffns(mobilebert, 2048)
assert quad == ffns == 4 * 2048 * 2048 * h                               # equal at T = F·I
assert t_star == mobilebert.num_feedforward_networks * mobilebert.intermediate_size + 1
assert (crossing["first T with T² terms > FFNs"] == crossing["F·I"] + 1).all()
print(f"MobileBERT: equal at T = 2048 ({quad / 1e9:.2f} GFLOPs each per block), "
      f"T² terms larger from T = {t_star}")

# %% [markdown]
# **Answer.** At T = F·I = 2,048 the scores and context of a MobileBERT block cost
# exactly as much as its four FFNs; from T = 2,049 on they cost more. That is four times
# the 512 positions MobileBERT can read: at T = 128 the $T^2$ terms are 1/16 of the
# FFNs, at 512 a quarter (table). The same rule gives 1,024 for MobileBERT_TINY (two
# FFNs) and 3,072 for BERT_BASE.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 5 · Which rows layer-wise transfer of the last layer needs
#
# > Layer-wise transfer of the last layer compares the teacher's and the student's
# > last-block outputs and attention maps at every token. Which rows would it need?
# > `DistillationObjective` runs a model with `heads_only` only in stages with
# > pre-training distillation: why is it on in PKT's final PD stage but off in the
# > auxiliary (AKT) stage?
#
# *Hint: read `DistillationObjective._heads_only` and `_forward` beside the stages of
# `mbert_lib.distill.plan.plan_stages`; compare `encoder_outputs[-1]` with and without
# `heads_only`, and see which rows change the FMT and AT losses.*
#
# (The exercise originally said that *progressive* transfer of the last layer makes
# `DistillationObjective` switch `heads_only` off. A progressive layer stage has no PD
# term: it calls the encoders alone, with every row, and `heads_only` never comes up.
# The switch matters in a stage that has PD *and* a layer-wise term on the last layer,
# which is the auxiliary strategy; the wording is fixed in both notebooks.)
#
# First the stages of the three laptop strategies and what `_heads_only` returns for
# them (student and teacher have 4 blocks, layer $l$ learns teacher layer $l$):

# %%
student_cfg = get_preset("tiny_student").replace(vocab_size=runtime.pick(8192, 512))
teacher_cfg = get_preset("tiny_teacher").replace(vocab_size=student_cfg.vocab_size)
student, teacher = build_pretrainer(student_cfg), build_pretrainer(teacher_cfg)
L5 = student_cfg.num_hidden_layers
stage_rows = []
for strategy in ("pkt", "jkt", "akt"):
    experiment = load_distill_experiment(runtime.REPO_ROOT / "experiments"
                                         / f"distill_tiny_{strategy}.yaml")
    for stage in plan_stages(experiment.distillation, L5):
        on = {m: DistillationObjective._heads_only(model, stage.transfer_layers)
              if stage.use_pd else None for m, model in (("student", student),
                                                          ("teacher", teacher))}
        stage_rows.append({"strategy": strategy.upper(), "stage": stage.name,
                           "layer-wise terms of": list(stage.transfer_layers),
                           "PD": stage.use_pd,
                           "student heads_only": "— (encoder only, all rows)"
                           if on["student"] is None else on["student"],
                           "teacher heads_only": "— (encoder only, all rows)"
                           if on["teacher"] is None else on["teacher"]})
stages = pd.DataFrame(stage_rows)
stages

# %% [markdown]
# Then the rows themselves, on a batch whose second sequence ends in padding: the
# student's last block with and without `heads_only`, and the FMT and AT losses of the
# last layer when rows of the student's output are overwritten (padded rows; a real
# row that is not a masked position).

# %%
B5, T5, P5 = 2, runtime.pick(128, 32), runtime.pick(20, 5)
real = np.array([T5, 3 * T5 // 4])                                    # real tokens per row
mask5 = (np.arange(T5)[None] < real[:, None]).astype(np.int32)         # [B, T]
rng = np.random.default_rng(5)
word_ids = np.where(mask5 == 1, rng.integers(5, student_cfg.vocab_size, (B5, T5)), 0)
positions = np.stack([np.sort(rng.choice(np.arange(1, n), P5, replace=False)) for n in real])
batch = {"input_word_ids": tf.constant(word_ids, tf.int32), "input_mask": tf.constant(mask5),
         "input_type_ids": tf.zeros([B5, T5], tf.int32),
         "masked_lm_positions": tf.constant(positions, tf.int32)}              # [B, P]
with runtime.stopwatch("exercise 5"):
    full = student(batch, training=False)
    pruned = student(batch, training=False, heads_only=True)
    target_out = teacher.encoder(batch, training=False)
    h_s, a_s = full["encoder_outputs"][-1], full["attention_scores"][-1]    # [B,T,H], [B,N,T,T]
    h_t, a_t = target_out["encoder_outputs"][-1], target_out["attention_scores"][-1]

    def losses(h_student, a_student):
        return (float(feature_map_transfer(h_t, h_student, mask5)["fmt"]),
                float(attention_transfer(a_t, a_student, mask5)))

    pad = tf.constant((1 - mask5)[..., None], tf.float32)                   # [B, T, 1]
    free_row = next(t for t in range(1, T5) if t not in positions[0])       # real, not masked
    one_real = tf.constant(np.eye(T5)[free_row][None, :, None] * np.array([1, 0])[:, None, None],
                           tf.float32)                                      # [B, T, 1]
    peaked = tf.broadcast_to(0.9 * tf.one_hot(0, T5) + 0.1 / T5, a_s.shape)   # rows on key 0
    row_tests = pd.DataFrame({
        "as computed": losses(h_s, a_s),
        "padded rows overwritten": losses(h_s * (1 - pad) + 7.0 * pad,
                                          a_s * (1 - pad[:, None]) + peaked * pad[:, None]),
        f"real row {free_row} overwritten": losses(h_s * (1 - one_real) + 7.0 * one_real,
                                                   a_s * (1 - one_real[:, None])
                                                   + peaked * one_real[:, None]),
    }, index=["FMT (last layer)", "AT (last layer)"]).T
shapes = pd.DataFrame({
    "full forward": [tuple(h_s.shape), tuple(a_s.shape)],
    "heads_only=True": [tuple(pruned["encoder_outputs"][-1].shape),
                        tuple(pruned["attention_scores"][-1].shape)],
    "teacher (full)": [tuple(h_t.shape), tuple(a_t.shape)]},
    index=["last block output", "last attention map"])
display(shapes)
row_tests.round(6)

# %%
np.testing.assert_allclose(pruned["mlm_logits"].numpy(), full["mlm_logits"].numpy(),
                           rtol=1e-4, atol=1e-4)                            # same logits
assert pruned["encoder_outputs"][-1].shape == (B5, P5, student_cfg.hidden_size) != h_t.shape
np.testing.assert_allclose(row_tests.loc["padded rows overwritten"],
                           row_tests.loc["as computed"], rtol=1e-6)
assert (np.abs(row_tests.loc[f"real row {free_row} overwritten"]
               - row_tests.loc["as computed"]) > 1e-4 * row_tests.loc["as computed"]).all()
by_stage = stages.set_index(["strategy", "stage"])
assert by_stage.loc[("PKT", "pd"), "student heads_only"] is True
assert by_stage.loc[("AKT", "auxiliary"), "student heads_only"] is False
assert by_stage.loc[("AKT", "auxiliary"), "teacher heads_only"] is False
saving = 1 - anatomy.heads_only_flops(get_preset("tiny_student"), 128, 21) \
    / anatomy.flops(get_preset("tiny_student"), 128)
print(f"heads_only keeps {P5} of {T5} rows of the last block (same MLM logits); the losses "
      f"ignore padded rows but not real ones. For tiny_student at T = 128 with 21 query rows "
      f"it would save {saving:.0%} of the encoder's FLOPs, which AKT gives up.")

# %% [markdown]
# **Answer.** FMT and AT of the last layer need **every real (unpadded) row** of that
# block: FMT averages the feature-map differences over all real tokens, AT the KL
# divergence over all real query rows (each row a distribution over all T keys).
# Padded rows are weighted out (overwriting them leaves both losses unchanged), but any
# real row counts, masked position or not (overwriting one unmasked real row changes
# both). `heads_only` computes the last block only at [CLS] and the P masked positions,
# which is all the MLM and NSP heads read (identical logits) but not what a layer-wise
# term reads: its output is [B, P, H] against the teacher's [B, T, H].
#
# So `DistillationObjective._heads_only` returns true unless the stage's layer-wise
# terms read the model's last block. PKT's final PD stage has no layer-wise term, so
# both models run heads-only there; its layer stages (the last one included) have no
# PD term and call the encoders directly, with all rows. In AKT's single stage the
# PD loss comes with every layer's FMT and AT, the last included, so both student and
# teacher run their last block in full, giving up the saving printed above (most of one
# block in four for the laptop student).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# * Attention on the 128-wide bottleneck (MobileBERT_TINY's) drops the shared bottleneck
#   step and makes V read $a$; its MHA:FFN ratio is 0.50/F, so only F = 1 is in the band.
# * The key factorisation $K = xW^K_\text{eff} + b^K_\text{eff}$ holds exactly with
#   NoNorm and fails with LayerNorm, which is not affine per token.
# * At MobileBERT's block size, h = 192 with one FFN needs I = 868 and has an MHA:FFN
#   ratio near 1.0, outside the band.
# * The $T^2$ attention terms pass the FFNs at T > F·I = 2,048.
# * Last-layer FMT and AT need every real row of the last block; `heads_only` is off
#   exactly where a PD stage also has a layer-wise term on the last block (AKT).
