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
# # 05 · Progressive knowledge transfer: every stage loss, layer by layer
#
# *Paper sections 3.5 (knowledge-transfer objectives) and 3.6 (training strategies),
# Figure 2; equations (1)–(3).*
#
# MobileBERT is not trained from scratch. An IB-BERT teacher with the same 24-block,
# 512-wide skeleton is trained first, and its knowledge is transferred into the thin
# student *layer by layer*. In the paper's terms (paraphrased): the teacher's feature
# maps, and its attention distributions, are the knowledge transferred to the student
# (section 3.5); the transfer is progressive, one layer per stage, with the layers below
# frozen or tuned with a small learning rate (section 3.6); a final pre-training
# distillation on masked-LM and next-sentence prediction follows.
#
# This notebook takes the laptop pair from notebook 04 (`tiny_teacher`, 4 IB-BERT blocks,
# inter-block H = 128, intra-block 256, LayerNorm + gelu → `tiny_student`, 4 MobileBERT
# blocks, intra-block 32, 4 FFNs, NoNorm + relu) and
#
# 1. computes each stage loss on real teacher/student activations, with its equation:
#    feature-map transfer (FMT, and the decomposition tf-models trains), attention
#    transfer (AT, a KL divergence between probabilities) and pre-training distillation (PD);
# 2. copies the embedding and the MLM head from teacher to student *by role*;
# 3. runs progressive knowledge transfer (PKT) through the pipeline and plots each
#    stage's losses (`figures/05_stage_curves.png`);
# 4. shows the attention maps of teacher and student, per layer, before and after that
#    layer's stage (`figures/05_attention_transfer.png`, `figures/05_attention_heads.png`);
# 5. follows every layer's AT and FMT loss through the stages
#    (`figures/05_layer_losses_by_stage.png`) and the feature statistics μ and σ per layer
#    (`figures/05_feature_statistics.png`).
#
# The paper has no figure of these; they illustrate its equations (1)–(3) and Figure 2's
# progressive strategy on our own run. Shapes use B batch, T tokens, H inter-block width,
# h intra-block width, N heads, L layers, P masked predictions, V vocabulary.

# %%
import inspect

import mbert_lib  # noqa: F401  (TensorFlow's start-up notices kept out of the outputs)
import numpy as np
import pandas as pd
import tensorflow as tf
from IPython.display import display

from mbert_lib import runtime
from mbert_lib.checkpoints import load_pretrainer
from mbert_lib.data import load_tokenizer, make_pretraining_dataset
from mbert_lib.distill import analysis, gradient_share
from mbert_lib.distill.initialize import copy_from_teacher
from mbert_lib.distill.losses import (FmtWeights, attention_transfer, feature_map_transfer,
                                      masked_lm_cross_entropy, pretraining_distillation)
from mbert_lib.distill.objective import DistillationObjective
from mbert_lib.distill.progressive import TransferPlan, progressive_transfer
from mbert_lib.distill.trainer import load_stage_student, read_run
from mbert_lib.models import build_pretrainer
from mbert_lib.pipeline import ensure, notebook_context
from mbert_lib.train.objectives import model_inputs
from mbert_lib.viz import transfer as transfer_viz
from mbert_lib.viz.attention_explorer import AttentionExplorer, draw, explore

pd.set_option("display.width", 180)
pd.set_option("display.precision", 4)
print("fast mode:", runtime.fast_mode())

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 0. The artifacts: data, teacher, and the PKT student
#
# `ensure(["pkt"], ctx)` runs the pipeline steps the PKT student needs (data → teacher →
# pkt) unless they are finished; a full run uses the `laptop` recipe under `runs/laptop`
# (real text when `MBERT_DATA_DIR` points at `../shared/data`), fast mode the tiny
# `smoke` recipe in a scratch directory. A full run first installs the trained steps of
# `bundles/laptop.tar.xz` (the teacher, this student, the no-AT ablation; 24 MB, checked
# by sha256, `mbert_lib/pipeline/bundle.py`; it needs `MBERT_DATA_DIR`, the data it was
# trained on): only the data step then runs, about a minute, instead of the teacher's
# quarter of an hour (the log below says how long each
# step took when it ran). Everything is resumable and shared with the other notebooks.

# %%
ctx = notebook_context()
results = ensure(["pkt"], ctx)
data, teacher_result, pkt = ctx.result("data"), ctx.result("teacher"), results["pkt"]
experiment, stages = read_run(pkt["model_dir"])
teacher = load_pretrainer(teacher_result["model_dir"])
student_config = experiment.student.build_config()
layer_map = experiment.distillation.transfer_teacher_layers or tuple(
    range(student_config.num_hidden_layers))
print(f"teacher: {runtime.shown_path(teacher_result['model_dir'])}\nstudent: "
      f"{runtime.shown_path(pkt['model_dir'])}")
print(f"data: {data['source']} ({data['data_dir'] or 'builtin corpus'})")
teacher_config = experiment.teacher.build_config()
print(pd.DataFrame({name: {"L layers": c.num_hidden_layers, "H inter-block": c.hidden_size,
                           "h intra-block": c.intra_bottleneck_size,
                           "N heads": c.num_attention_heads, "FFNs": c.num_feedforward_networks,
                           "norm": c.normalization_type, "act": c.hidden_act}
                    for name, c in [("teacher", teacher_config),
                                    ("student", student_config)]}).to_string())
print("student layer -> teacher layer:", dict(enumerate(layer_map)))
pd.DataFrame([{"stage": s.name, "loss": s.describe().split(": ", 1)[1],
               "trained (rate multiplier)": ", ".join(f"{g} ×{r:g}" for g, r in s.rates.items())}
              for s in stages])

# %% [markdown]
# **Is there anything to transfer?** A teacher is worth distilling only if it knows more
# than the student learns without it. The pipeline's `teacher_gate` step compares the
# teacher with the *untaught* student (`no_transfer`: the same architecture and 600
# updates of MLM + NSP, no teacher) on every held-out MLM target, target by target:
# with $d_j = \mathbb 1[\text{teacher right at } j] - \mathbb 1[\text{student right at } j]$,
# the mean $\bar d$ and its 95 % interval $\bar d \pm t_{0.975}\, s_d/\sqrt M$ over the
# $M$ targets (`mbert_lib.paired`).

# %%
gate = ensure(["teacher_gate"], ctx)["teacher_gate"]
print(f"teacher ({teacher_result['source']}): {gate['text']}")

# %%
g = gate["difference"]
assert gate["verdict"] == ("beats" if g["low"] > 0 else "behind" if g["high"] < 0 else "level")
np.testing.assert_allclose(g["mean"], gate["teacher_mlm_accuracy"] - gate["untaught_mlm_accuracy"],
                           atol=1e-9)

# %% [markdown]
# A held-out batch of the pre-training data (never trained on) for every measurement below:

# %%
held_out = next(iter(make_pretraining_dataset(data["examples_dir"], runtime.pick(64, 16),
                                              split="eval")))
mask = held_out["input_mask"].numpy()                                     # [B, T]
initial = load_stage_student(pkt["model_dir"], None, student_config)      # before any stage
t_out = analysis.encode(teacher, held_out)
s0_out = analysis.encode(initial, held_out)
print("encoder_outputs", t_out["encoder_outputs"].shape, "(L, B, T, H);",
      "attention_scores", t_out["attention_scores"].shape, "(L, B, N, T, T)")

# %%
L, B, T, H = s0_out["encoder_outputs"].shape
assert s0_out["attention_scores"].shape == (L, B, student_config.num_attention_heads, T, T)
assert t_out["encoder_outputs"].shape[1:] == (B, T, H)
assert H == teacher_config.hidden_size == student_config.hidden_size   # FMT needs equal H
np.testing.assert_allclose(t_out["attention_scores"].sum(-1), 1.0, rtol=1e-4)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. Feature-map transfer (FMT)
#
# Teacher and student share the inter-block width H, so the output of every student
# block can be compared with the output of its teacher block, token by token. For layer
# $\ell$ and $T$ real tokens (paper eq. 1):
#
# $$\mathcal{L}^\ell_{FMT} = \frac{1}{TH} \sum_{t=1}^{T} \sum_{n=1}^{H}
#   \big(H^{tr}_{t,\ell,n} - H^{st}_{t,\ell,n}\big)^2$$
#
# The released code (and tf-models) does not train this plain MSE. It trains three terms
# that separate the *shape*, the *level* and the *spread* of each token's feature vector,
# with μ and σ² the mean and variance over the H channels and LN the parameter-free
# standardisation:
#
# $$\mathcal{L}^\ell_{FMT} \approx 100 \cdot \overline{\mathrm{MSE}\big(\mathrm{LN}(H^{tr}_t), \mathrm{LN}(H^{st}_t)\big)}
#   + 5000 \cdot \overline{(\mu^{st}_t - \mu^{tr}_t)^2} + 5 \cdot \overline{\left|\sigma^{2,st}_t - \sigma^{2,tr}_t\right|}$$
#
# The split is not arbitrary: per token, the plain MSE *is* these three ingredients,
#
# $$\mathrm{MSE}(H^{tr}_t, H^{st}_t) = (\mu^{tr}_t - \mu^{st}_t)^2 + (\sigma^{tr}_t - \sigma^{st}_t)^2
#   + \sigma^{tr}_t \sigma^{st}_t \cdot \mathrm{MSE}\big(\mathrm{LN}(H^{tr}_t), \mathrm{LN}(H^{st}_t)\big),$$
#
# so the practical loss re-weights the level, the spread and the shape. Computed here on
# layer 0, teacher vs the student *before* its stage (`analysis.fmt_decomposition` in
# float64, `feature_map_transfer` from the library's losses):

# %%
decomposition = analysis.fmt_decomposition(t_out["encoder_outputs"][layer_map[0]],
                                           s0_out["encoder_outputs"][0], mask)
fmt0 = feature_map_transfer(tf.constant(t_out["encoder_outputs"][layer_map[0]]),
                            tf.constant(s0_out["encoder_outputs"][0]), mask,
                            FmtWeights(100.0, 5000.0, 5.0))
pd.DataFrame({"value": {**decomposition, **{f"library {k}": float(v) for k, v in fmt0.items()}}})

# %%
assert decomposition["max_abs_error"] < 1e-9 * max(1.0, decomposition["paper_mse"])
np.testing.assert_allclose(decomposition["sum_of_terms"], decomposition["paper_mse"], rtol=1e-9)
np.testing.assert_allclose(float(fmt0["fmt_paper_mse"]), decomposition["paper_mse"], rtol=1e-4)
np.testing.assert_allclose(float(fmt0["fmt"]), 100 * float(fmt0["fmt_mse"])
                           + 5000 * float(fmt0["fmt_mean"]) + 5 * float(fmt0["fmt_var"]),
                           rtol=1e-5)
print("MSE = mean term + std term + shape term holds per token to "
      f"{decomposition['max_abs_error']:.1e}")

# %% [markdown]
# The three terms by hand, in NumPy, over the real tokens (the library's ε = 1e-6 in LN):

# %%
h_t = t_out["encoder_outputs"][layer_map[0]].astype(np.float64)            # [B, T, H]
h_s = s0_out["encoder_outputs"][0].astype(np.float64)
mu_t, mu_s = h_t.mean(-1), h_s.mean(-1)                                    # [B, T]
var_t, var_s = h_t.var(-1), h_s.var(-1)                                    # [B, T]
ln = lambda h, mu, var: (h - mu[..., None]) / np.sqrt(var[..., None] + 1e-6)  # noqa: E731
real = mask > 0                                                            # [B, T]
by_hand = {"fmt_mse": ((ln(h_t, mu_t, var_t) - ln(h_s, mu_s, var_s)) ** 2).mean(-1)[real].mean(),
           "fmt_mean": ((mu_s - mu_t) ** 2)[real].mean(),
           "fmt_var": np.abs(var_s - var_t)[real].mean(),
           "fmt_paper_mse": ((h_t - h_s) ** 2).mean(-1)[real].mean()}
for name, value in by_hand.items():
    np.testing.assert_allclose(float(fmt0[name]), value, rtol=1e-4)
print("NumPy = library:", {k: f"{v:.5g}" for k, v in by_hand.items()})

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Attention transfer (AT)
#
# Attention decides which tokens a layer mixes; the student should learn the teacher's
# choices. Per layer, the KL divergence between the teacher's and the student's attention
# distributions, averaged over the N heads and the T query tokens (paper eq. 2):
#
# $$\mathcal{L}^\ell_{AT} = \frac{1}{TN} \sum_{t=1}^{T} \sum_{a=1}^{N}
#   D_{KL}\big(a^{tr}_{t,\ell,a} \,\|\, a^{st}_{t,\ell,a}\big)$$
#
# Our encoders return attention *probabilities* $a = \mathrm{softmax}(QK^\top/\sqrt{d})$
# (each row sums to 1), and `attention_transfer` computes the KL on them directly: **no
# second softmax**. tf-models' distillation applies a softmax to these probabilities a
# *second* time and trains
#
# $$\mathcal{L}^{\ell}_{AT,\,\text{tf-models}} = \frac{1}{TN}\sum_{t,a}
#   D_{KL}\big(\mathrm{softmax}(a^{tr}_{t,\ell,a}) \,\|\, \mathrm{softmax}(a^{st}_{t,\ell,a})\big).$$
#
# Since every probability lies in [0, 1], $\mathrm{softmax}(a)$ over the T keys stays within a
# factor $e$ of uniform, so the KL between two such rows is nearly zero whatever the maps
# look like: the attention term barely trains. Both versions, on layer 0, teacher vs the
# student before its stage (`a` of shape [B, N, T, T], padded keys masked out):

# %%
a_t = tf.constant(t_out["attention_scores"][layer_map[0]])                 # [B, N, T, T]
a_s = tf.constant(s0_out["attention_scores"][0])
kl = float(attention_transfer(a_t, a_s, mask))                          # ours: on probabilities
masked_softmax = lambda p: tf.nn.softmax(tf.where(mask[:, None, None, :] > 0, p, -1e9))  # noqa: E731
kl_double = float(attention_transfer(masked_softmax(a_t), masked_softmax(a_s), mask))  # tf-models
real_keys = mask.sum(-1)
double = masked_softmax(a_t).numpy()
spread = double.max(-1)[mask[:, None, :].repeat(double.shape[1], 1) > 0].mean()
print(f"AT layer 0, on probabilities: {kl:.4f}\n"
      f"AT after a second softmax (tf-models): {kl_double:.6f}  ({kl / kl_double:,.0f}x smaller)\n"
      f"largest weight per row after the second softmax: {spread:.4f} "
      f"(uniform would be {np.mean(1 / real_keys):.4f})")

# %%
# eq. 2 by hand: Σ_keys p log(p/q) per query row, mean over heads and real query rows
p_t, p_s = a_t.numpy().astype(np.float64), a_s.numpy().astype(np.float64)  # [B, N, T, T]
with np.errstate(divide="ignore", invalid="ignore"):
    rows = np.where(p_t > 0, p_t * np.log(p_t / p_s), 0.0).sum(-1)          # [B, N, T]
kl_by_hand = rows.transpose(0, 2, 1)[mask > 0].mean()                      # real query rows
np.testing.assert_allclose(kl, kl_by_hand, rtol=1e-4)
assert kl > 10 * kl_double > 0
assert spread < np.e * np.max(1 / real_keys)        # softmax of values in [0, 1]: ≤ e × uniform
np.testing.assert_allclose(float(attention_transfer(a_t, a_t, mask)), 0.0, atol=1e-6)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Pre-training distillation (PD)
#
# After the layer-wise stages, the whole student is trained on BERT's objectives with the
# teacher's masked-LM distribution as a second target (paper eq. 3, α =
# `distill_ground_truth_ratio` = 0.5):
#
# $$\mathcal{L}_{PD} = \alpha\, \mathcal{L}_{MLM} + (1-\alpha)\, \mathcal{L}_{KD} + \mathcal{L}_{NSP},
# \qquad \mathcal{L}_{KD} = -\frac{1}{P}\sum_{p} \sum_{v} p^{tr}_{p,v} \log p^{st}_{p,v}$$
#
# tf-models writes it as one cross-entropy against the mixed labels
# $\alpha\,\text{one-hot} + (1-\alpha)\,p^{tr}$: the same number, by linearity.
# On the held-out batch, for the finished PKT student:

# %%
final = load_pretrainer(pkt["model_dir"])
inputs = model_inputs(held_out)
t_logits = teacher(inputs, training=False)                   # mlm_logits [B, P, V]
s_logits = final(inputs, training=False)                     # nsp_logits [B, 2]
pd_terms = pretraining_distillation(
    s_logits["mlm_logits"], t_logits["mlm_logits"], held_out["masked_lm_ids"],
    held_out["masked_lm_weights"], s_logits["nsp_logits"], held_out["next_sentence_labels"],
    alpha=0.5)
vocab = s_logits["mlm_logits"].shape[-1]
mixed = 0.5 * tf.one_hot(held_out["masked_lm_ids"], vocab) + 0.5 * tf.nn.softmax(
    t_logits["mlm_logits"], -1)
mixed_ce = float(masked_lm_cross_entropy(s_logits["mlm_logits"], mixed,
                                         held_out["masked_lm_weights"]))
print({k: round(float(v), 4) for k, v in pd_terms.items()},
      f"| tf-models' mixed-label CE {mixed_ce:.4f}")

# %%
np.testing.assert_allclose(float(pd_terms["loss"] - pd_terms["nsp"]), mixed_ce, rtol=1e-5)
# eq. 3's KD term by hand: −Σ_v p^tr log p^st, weighted mean over the masked positions
log_q = tf.nn.log_softmax(s_logits["mlm_logits"], -1).numpy().astype(np.float64)   # [B, P, V]
p_tr = tf.nn.softmax(t_logits["mlm_logits"], -1).numpy().astype(np.float64)
w = held_out["masked_lm_weights"].numpy().astype(np.float64)                       # [B, P]
kd_by_hand = (-(p_tr * log_q).sum(-1) * w).sum() / w.sum()
np.testing.assert_allclose(float(pd_terms["kd"]), kd_by_hand, rtol=1e-4)
assert float(pd_terms["kd"]) >= 0 and float(pd_terms["mlm"]) > 0

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Copying the embedding and the MLM head *by role*
#
# Teacher and student have the same embedding and MLM head shapes, so the student starts
# with the teacher's (section 3.6). `copy_from_teacher` copies every weight to the
# variable with the same *role* (token table, trigram projection, position and type
# tables, norm γ and β, MLM transform and output bias). tf-models copies with
# `get_weights()` / `set_weights()`, i.e. by position; its NoNorm creates its variables
# in the order (β, γ) while LayerNormalization creates (γ, β), so the student's γ
# receives the teacher's β and vice versa. This library's NoNorm happens to create
# (γ, β), but a copy by role does not depend on such an accident:

# %%
fresh = build_pretrainer(student_config)
t_norm, s_norm = teacher.encoder.embedding.norm, fresh.encoder.embedding.norm
print("teacher embedding norm:", type(t_norm).__name__,
      [w.name.split("/")[-1] for w in t_norm.weights])
print("student embedding norm:", type(s_norm).__name__,
      [w.name.split("/")[-1] for w in s_norm.weights])
copied = copy_from_teacher(teacher, fresh)
print(f"copied by role ({len(copied)}):", ", ".join(copied))

# %% [markdown]
# What the swap does. NoNorm is an element-wise affine map of the embedding $h$ [B, T, H]:
#
# $$\mathrm{NoNorm}(h) = \gamma \odot h + \beta .$$
#
# A positional copy from LayerNorm's `get_weights()` = [γ_T, β_T] into a NoNorm whose
# variables are ordered (β, γ), as tf-models' are, gives the student
# $\beta_T \odot h + \gamma_T$: the teacher's (typically small) shift now multiplies every
# embedding and its (typically ≈ 1) scale is added to it. The teacher's trained values:

# %%
print(f"teacher embedding LayerNorm: mean |γ| = {np.abs(t_norm.gamma.numpy()).mean():.3f}, "
      f"mean |β| = {np.abs(t_norm.beta.numpy()).mean():.3f}")


def embedding_spread(model):
    out = model.encoder.embedding(one_batch["input_word_ids"], one_batch["input_type_ids"],
                                  training=False).numpy()[0]            # [T, H]
    return float(out.std(0).mean())                                     # spread across tokens


one_batch = {k: held_out[k][:1] for k in ("input_word_ids", "input_type_ids")}
by_role = embedding_spread(fresh)
for variable, value in zip([s_norm.beta, s_norm.gamma], t_norm.get_weights()):
    variable.assign(value)              # tf-models: NoNorm (β, γ) <- LayerNorm (γ, β), by position
swapped = embedding_spread(fresh)
copy_from_teacher(teacher, fresh)       # back to the copy by role
print(f"student embedding output, mean std across tokens: copied by role {by_role:.4f}, "
      f"positional copy (γ/β swapped) {swapped:.4f} ({by_role / swapped:.1f}x less spread)")

# %%
np.testing.assert_array_equal(s_norm.gamma.numpy(), t_norm.gamma.numpy())
np.testing.assert_array_equal(s_norm.beta.numpy(), t_norm.beta.numpy())
assert swapped < 0.5 * by_role
np.testing.assert_array_equal(initial.encoder.embedding.word_embeddings.embeddings.numpy(),
                              teacher.encoder.embedding.word_embeddings.embeddings.numpy())

# %% [markdown]
# Even the correct copy cannot make the student's embedding output equal the teacher's.
# LayerNorm standardises each token's vector before applying γ and β,
# $\mathrm{LN}(h) = \gamma \odot (h - \mu_h)/\sigma_h + \beta$; NoNorm applies them to $h$
# as it is. Same weights, different function: per-token spread (std over the H channels)
# of the two embedding outputs on the held-out batch:

# %%
def per_token_std(model):
    out = model.encoder.embedding(held_out["input_word_ids"], held_out["input_type_ids"],
                                  training=False).numpy()               # [B, T, H]
    return float(out.std(-1)[mask > 0].mean())


emb_std = {"teacher (LayerNorm)": per_token_std(teacher),
           "student, copied by role (NoNorm)": per_token_std(fresh)}
print(", ".join(f"{k}: {v:.3f}" for k, v in emb_std.items()),
      f"-> the student starts {emb_std['teacher (LayerNorm)'] / emb_std['student, copied by role (NoNorm)']:.1f}x "
      "narrower; FMT's spread term has to close that gap (section 8)")
assert all(v > 0 for v in emb_std.values())

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Progressive knowledge transfer, stage by stage
#
# The pipeline's `pkt` step ran the stages listed in section 0: stage ℓ minimises
# $\mathcal{L}^\ell_{FMT} + w_{AT}\,\mathcal{L}^\ell_{AT}$ and trains block ℓ at
# `current_lr_multiplier` × the stage's rate, the blocks below at 0.1× that, and neither
# the embedding nor the heads (the original code's recipe; LAMB and Adam normalise the
# gradient, so a slower layer needs its own learning rate, not a scaled gradient: the
# trainer gives each rate its own optimizer). Where the laptop recipe departs from the
# original code (the current layer at 30× instead of 3×, the plain MSE of eq. (1) added
# to FMT, AT weighted ×100) and why is in `docs/laptop_recipe.md` and section 7 below.
# The teacher runs in inference mode and is never updated.
#
# The whole algorithm is one library function, `progressive_transfer`
# (`mbert_lib/distill/progressive.py`): for each stage of the plan, take the variables the
# stage trains (every other one is frozen), build its loss, minimise. The trainer's
# `minimise` also resumes, checkpoints and records each stage; `minimise_in_steps` is the
# bare loop, and `tests/test_distill_progressive.py` checks that both end on the same
# student.

# %%
print(inspect.getsource(progressive_transfer))
plan = TransferPlan.of(experiment.distillation, student_config.num_hidden_layers,
                       teacher_config.num_hidden_layers)
assert plan.stages == tuple(stages) and plan.layer_map == tuple(layer_map)

# %% [markdown]
# Wall time per stage of the run (2 CPU cores, shared with other work, so only indicative):

# %%
stage_table = pd.DataFrame(pkt["stages"]).set_index("stage")
stage_table["tokens/s"] = (stage_table.train_steps * experiment.trainer.batch_size
                           * experiment.data.seq_length / stage_table.seconds).round(0)
print(f"{int(stage_table.train_steps.sum())} student steps of batch "
      f"{experiment.trainer.batch_size} × {experiment.data.seq_length} tokens in "
      f"{stage_table.seconds.sum() / 60:.1f} minutes")
stage_table

# %%
curves = analysis.stage_curves(pkt["model_dir"])
fig = transfer_viz.plot_stage_curves(
    curves, runtime.figure_path("05_stage_curves.png"),
    title="PKT on the laptop pair: each stage trains one layer, then PD trains all "
          "(paper §3.6, Figure 2)")

# %%
per_stage = curves[curves.metric.isin(["fmt", "at"])].groupby(["stage", "metric"])["value"]
drop = (per_stage.first() / per_stage.last()).unstack()
print("first / last logged training value per stage:\n", drop)
assert set(curves.stage) == {f"{s.index:02d}_{s.name}" for s in stages}
# FMT is trained only in the layer-wise stages; PD (which may keep AT) only logs it
fmt_stages = [f"{s.index:02d}_{s.name}" for s in stages if s.transfer_stage and s.use_fmt]
assert (drop.loc[fmt_stages, "fmt"] > 1).all(), "FMT did not fall in some layer-wise stage"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Attention maps: teacher vs student, before and after each stage
#
# One sentence, every layer. Columns: the teacher's map (teacher layer $t_\ell$), the
# student's layer ℓ *before* its stage (after the stages below it), right *after* its
# stage, and after the final PD stage, then the teacher − student difference after the
# stage (red: the teacher attends more). The head shown per layer is the one whose teacher
# map is sharpest (lowest mean entropy); the KL of that head on this sentence is in each
# title. Each panel has its own colour scale: a nearly uniform map would otherwise be one
# flat colour. Look for whether the student's maps take on the teacher's structure;
# section 7 measures how much they did on the whole held-out batch, and why.

# %%
tokenizer = load_tokenizer(teacher_result["model_dir"])
sentence = "the film is a charming and often affecting journey ."
ids = [tokenizer.token_to_id("[CLS]")] + tokenizer.encode(sentence) + [
    tokenizer.token_to_id("[SEP]")]
tokens = [tokenizer.vocab[i] for i in ids]
one = {"input_word_ids": tf.constant([ids]), "input_mask": tf.ones([1, len(ids)], tf.int32),
       "input_type_ids": tf.zeros([1, len(ids)], tf.int32)}
one_mask = np.ones(len(ids))
layer_stages = [s for s in stages if s.transfer_stage]       # not PD, even when it keeps AT
snapshots = {"teacher": analysis.encode(teacher, one)}
for k, stage in enumerate(layer_stages):
    before = initial if k == 0 else load_stage_student(pkt["model_dir"], layer_stages[k - 1],
                                                         student_config)
    after = load_stage_student(pkt["model_dir"], stage, student_config)
    snapshots[("before", k)] = analysis.encode(before, one)
    snapshots[("after", k)] = analysis.encode(after, one)
snapshots["final"] = analysis.encode(final, one)
print(len(tokens), "tokens:", " ".join(tokens))

# %%
rows, kl_rows = [], []
for k, stage in enumerate(layer_stages):
    t_maps = snapshots["teacher"]["attention_scores"][layer_map[k], 0]       # [N, T, T]
    entropy = -(t_maps * np.log(t_maps + 1e-12)).sum(-1).mean(-1)          # [N]
    head = int(np.argmin(entropy))
    maps = [(f"teacher layer {layer_map[k]}", t_maps[head])]
    for label, key in [("before stage", ("before", k)), ("after stage", ("after", k)),
                       ("after PD", "final")]:
        s_maps = snapshots[key]["attention_scores"][k, 0]
        per_head = analysis.attention_kl_per_head(t_maps, s_maps, one_mask)
        maps.append((f"student {label}\nKL {per_head[head]:.3f}", s_maps[head]))
        kl_rows.append({"layer": k, "snapshot": label, "KL (all heads)": per_head.mean()})
    rows.append({"label": f"layer {k} · head {head}", "maps": maps})
fig = transfer_viz.plot_attention_grid(
    rows, tokens, runtime.figure_path("05_attention_transfer.png"), difference=(0, 2),
    title="Attention transfer (paper eq. 2): teacher vs student, around each layer's stage")

# %%
kl_table = pd.DataFrame(kl_rows).pivot(index="layer", columns="snapshot",
                                       values="KL (all heads)")[
    ["before stage", "after stage", "after PD"]]
kl_table

# %%
assert (kl_table.to_numpy() >= 0).all() and kl_table.shape == (len(layer_stages), 3)
change = kl_table["after stage"] / kl_table["before stage"] - 1
print("KL change in the layer's own stage (this sentence, all heads):",
      ", ".join(f"layer {k} {100 * c:+.1f}%" for k, c in change.items()))

# %% [markdown]
# All heads of one layer (the deepest): the teacher's maps (top) and the finished
# student's (bottom).

# %%
deep = len(layer_stages) - 1
t_maps = snapshots["teacher"]["attention_scores"][layer_map[deep], 0]
s_maps = snapshots["final"]["attention_scores"][deep, 0]
per_head = analysis.attention_kl_per_head(t_maps, s_maps, one_mask)
fig = transfer_viz.plot_attention_grid(
    [{"label": f"teacher layer {layer_map[deep]}", "maps": [(f"head {h}", t_maps[h])
                                                            for h in range(len(t_maps))]},
     {"label": f"student layer {deep}", "maps": [(f"head {h} · KL {per_head[h]:.3f}", s_maps[h])
                                                 for h in range(len(s_maps))]}],
    tokens, runtime.figure_path("05_attention_heads.png"),
    title=f"Every head of layer {deep}: teacher (top) vs the finished PKT student (bottom) "
          "(paper eq. 2)")

# %% [markdown]
# ### Explore: any sentence, layer, head and snapshot
#
# `AttentionExplorer` (`mbert_lib/viz/attention_explorer.py`) loads the teacher and every
# snapshot of the PKT run and of its no-AT ablation (+PD+FMT): before and after each
# layer's stage, and after PD. It draws teacher, student and teacher − student for one
# head, each on its own colour scale, with the KL of each query row and the KL of every
# layer (mean over heads and rows) for the chosen snapshot. In JupyterLab, `explore`
# gives a text box for the sentence and controls for the rest; without a widget front
# end the same call draws a static figure. The per-layer bars carry the untrained
# student's KL as a dashed reference. The figure below is one such view, saved for
# slides: the deepest layer, the head shown above, the finished PKT student; pick "no
# AT: after PD" in the menu to see the same head without attention transfer (offered
# once that run exists; the explorer says how to make it).

# %%
explorer = AttentionExplorer.from_runs(teacher_result["model_dir"], pkt["model_dir"],
                                       ctx.step_dir("ablation_pd_fmt"))  # no AT, once run
for note in explorer.notes:
    print(note)
head = int(np.argmin(-(t_maps * np.log(t_maps + 1e-12)).sum(-1).mean(-1)))   # sharpest
view = explorer.view(sentence, deep, head, "PKT: after PD")
np.testing.assert_allclose(view["student_probs"], s_maps[head], atol=1e-6)  # the maps above
np.testing.assert_allclose(view["teacher_probs"], t_maps[head], atol=1e-6)
np.testing.assert_allclose(view["student_probs"].sum(-1), 1.0, atol=1e-5)
print("snapshots:", ", ".join(explorer.snapshots))
fig = draw(view, title="Attention explorer: teacher vs PKT student after PD (paper eq. 2)",
           path=runtime.figure_path("05_attention_explorer.png"))

# %%
explore(explorer, sentence, layer=deep, head=head, snapshot="PKT: after PD")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Every layer's losses through the stages
#
# Now on the whole held-out batch (not one sentence), every student layer after every
# stage: the weighted FMT that the stage minimises, the plain feature MSE of eq. (1),
# and AT (eq. 2). In PKT, layer ℓ's losses should fall at stage ℓ and then stay roughly
# where they are while the layers above are trained (at 0.1× the rate for the layers
# below); PD, which only sees the MLM/NSP outputs, is free to move them again.

# %%
student_snapshots = {"initial": initial, **{
    f"after {stage.name}": load_stage_student(pkt["model_dir"], stage, student_config)
    for stage in stages}}
snapshot_outs = {label: analysis.encode(model, held_out)
                 for label, model in student_snapshots.items()}
lw = experiment.distillation.layer_wise                          # the run's FMT weights
trained_fmt = FmtWeights.of(lw)
snapshot_losses = {label: analysis.transfer_losses(t_out, out, mask, layer_map, trained_fmt)
                   for label, out in snapshot_outs.items()}
by_stage = {name: pd.DataFrame({k: v[column] for k, v in snapshot_losses.items()})
            for name, column in [("fmt", "fmt"), ("mse", "fmt_paper_mse"), ("at", "at")]}
at_by_stage = by_stage["at"]                                   # [L layers, snapshots]
fig = transfer_viz.plot_layer_losses_by_snapshot(
    {f"FMT as trained ({trained_fmt.mse:g} / {trained_fmt.mean:g} / {trained_fmt.var:g}"
     f" + {trained_fmt.paper:g} × eq. 1)": by_stage["fmt"],
     "plain feature MSE, eq. (1)": by_stage["mse"],
     "AT: KL(teacher ‖ student), eq. (2)": at_by_stage},
    runtime.figure_path("05_layer_losses_by_stage.png"),
    title="PKT, held-out batch: each layer's transfer losses after every stage (paper eqs. 1–2)")
for name, frame in by_stage.items():
    print(f"{name} per layer (rows) after each stage (columns)")
    display(frame.round(4))

# %%
own_stage = pd.DataFrame([
    {"layer": k, **{f"{name} {when}": by_stage[name].iloc[k, k + shift]
                    for name in by_stage for when, shift in [("before", 0), ("after", 1)]}}
    for k in range(len(layer_stages))]).set_index("layer")
for name in by_stage:
    own_stage[f"{name} change %"] = 100 * (own_stage[f"{name} after"]
                                           / own_stage[f"{name} before"] - 1)
own_stage.round(4)

# %%
assert next(iter(at_by_stage.columns)) == "initial" and at_by_stage.shape[1] == len(stages) + 1
assert (own_stage["fmt after"] < own_stage["fmt before"]).all(), own_stage
print("in its own stage, every layer's trained FMT on held-out text fell")

# %% [markdown]
# Which of the three trained FMT terms fell? Each term times its weight, before and after
# the layer's own stage (held-out batch):

# %%
fmt_weights = {"fmt_mse": experiment.distillation.layer_wise.fmt_mse_weight,
               "fmt_mean": experiment.distillation.layer_wise.fmt_mean_weight,
               "fmt_var": experiment.distillation.layer_wise.fmt_var_weight,
               "fmt_paper_mse": experiment.distillation.layer_wise.fmt_paper_mse_weight}
labels = list(snapshot_losses)
fmt_terms = pd.DataFrame([
    {"layer": k, "when": when,
     **{f"{term} × {w:g}": w * snapshot_losses[labels[k + shift]].loc[k, term]
        for term, w in fmt_weights.items()}}
    for k in range(len(layer_stages)) for when, shift in [("before", 0), ("after", 1)]]
).set_index(["layer", "when"])
np.testing.assert_allclose(fmt_terms.sum(axis=1).xs("after", level="when"), own_stage["fmt after"],
                           rtol=1e-4)
fmt_terms.round(3)

# %% [markdown]
# **Reading it: the step budget.** LAMB scales every update of a weight matrix to that
# matrix's norm (trust ratio $\|x_t\|/\|u_t\|$),
#
# $$x_{t+1} = x_t - \eta_t \frac{\|x_t\|}{\|u_t\|}\, u_t
#   \quad\Rightarrow\quad \|x_{t+1} - x_t\| = \eta_t \|x_t\|
#   \quad\Rightarrow\quad \frac{\|W_{\text{after}}\|}{\|W_{\text{before}}\|}
#   \le \prod_t (1 + \eta_t) \le e^{\sum_t \eta_t},$$
#
# so a stage of S steps at rate η can grow a weight matrix by at most $e^{\eta S}$; norm
# scales and biases take plain Adam steps of about η per element, so they move by about
# ηS at most. The attention logits $QK^\top/\sqrt d$ scale with $\|W_Q\|\,\|W_K\|$: the
# student starts from a small random initialisation (logits ≈ 0, attention ≈ uniform),
# and sharpening it, or scaling the block outputs up to the teacher's spread, needs
# weights several times larger. The paper's stages (10k steps at 3 × 1.5e-3) allow
# $e^{45}$. This is why the laptop's first recipe showed nothing: 75 steps at 2e-3
# ($e^{0.15}$), or at the original code's 3× ($e^{0.45}$), left every layer's attention
# uniform and its KL unchanged to 1 % (`docs/laptop_recipe.md`). The current layer now
# trains at 30 × 2e-3, $e^{4.5}$. Measured on the student's query, key and
# shared-bottleneck kernels, and on the
# NoNorm scale γ of each block's output (`weight_norms`, `block_variable`):

# %%
# the current layer's peak rate: the stage's rate × current_lr_multiplier
lw_rate = (experiment.distillation.layer_wise.learning_rate.peak
           * experiment.distillation.layer_wise.current_lr_multiplier)
steps_per_stage = layer_stages[0].train_steps
bound = float(np.exp(lw_rate * steps_per_stage))
parts = ["attention/query/kernel", "attention/key/kernel", "bottleneck_attention/kernel"]
norms = analysis.weight_norms(student_snapshots, parts, range(len(layer_stages)))
growth = pd.DataFrame([{"layer": k, "part": part,
                        "‖W‖ before its stage": norms.loc[(k, part)].iloc[k],
                        "‖W‖ after its stage": norms.loc[(k, part)].iloc[k + 1],
                        "‖W‖ after PD": norms.loc[(k, part)].iloc[-1]}
                       for k in range(len(layer_stages)) for part in parts]
                      ).set_index(["layer", "part"])
growth["growth in its stage"] = growth["‖W‖ after its stage"] / growth["‖W‖ before its stage"]
snapshot_models = list(student_snapshots.values())
gamma = "bottleneck_output_norm/gamma"
gamma_moves = pd.DataFrame([{
    "layer": k, "mean γ before": analysis.block_variable(snapshot_models[k], k, gamma).mean(),
    "mean γ after": analysis.block_variable(snapshot_models[k + 1], k, gamma).mean(),
    "largest |Δγ| in its stage": np.abs(
        analysis.block_variable(snapshot_models[k + 1], k, gamma)
        - analysis.block_variable(snapshot_models[k], k, gamma)).max()}
    for k in range(len(layer_stages))]).set_index("layer")
sharpness = pd.DataFrame({label: analysis.attention_sharpness(out["attention_scores"], mask)
                          for label, out in {"teacher": {"attention_scores": t_out[
                              "attention_scores"][list(layer_map)]}, **snapshot_outs}.items()})
print(f"layer-wise stages: η = {lw_rate:g}, S = {steps_per_stage} steps: LAMB's bound on the "
      f"growth of ‖W‖ in a stage e^(ηS) = {bound:.3f}, largest measured "
      f"{growth['growth in its stage'].max():.3f}; ηS = {lw_rate * steps_per_stage:.3f}, "
      f"largest |Δγ| of an output scale {gamma_moves['largest |Δγ| in its stage'].max():.3f}")
display(growth.round(3))
display(gamma_moves.round(3))
print("mean largest attention probability per query row (uniform rows: 1 / real tokens, "
      f"{mask.shape[0] / mask.sum():.4f} on this batch)")
sharpness.round(4)

# %%
assert (growth["growth in its stage"] <= bound * (1 + 1e-5)).all(), growth
assert (sharpness.to_numpy() > 0).all() and (sharpness.to_numpy() <= 1).all()

# %% [markdown]
# ### Was AT drowned by FMT?
#
# A stage's gradient is the sum of its terms' gradients, $g = g_{FMT} + g_{AT}$, and
# global clipping scales all of it by $c = \min(1, 1/\|g\|)$ before LAMB turns each
# variable's gradient into a direction. A term whose part of $g$ is small on a variable
# barely turns that direction. On the variables that make the attention scores (the
# shared bottleneck, the query and key projections of block 0), at the start of layer 0's
# stage, one training batch; the AT share is
# $\|g_{AT}\| / (\|g_{FMT}\| + \|g_{AT}\|)$, the same before and after clipping:

# %%
train_batch = next(iter(make_pretraining_dataset(data["examples_dir"], runtime.pick(32, 8))))
objective = DistillationObjective(           # dropout off: the same gradient every call
    teacher, initial, layer_stages[0], layer_map, experiment.distillation.layer_wise,
    experiment.distillation.pretrain, student_dropout=False)
shares = gradient_share.gradient_shares(objective, train_batch,
                                        experiment.trainer.optimizer.global_clipnorm or np.inf)
shares.index = [name.split("layer_0/")[-1].removesuffix(":0") for name in shares.index]
# the same share in a few lines: the two terms' gradients on one kernel
qk = gradient_share.score_variables(initial, 0)
terms = gradient_share.term_gradients(objective, train_batch, qk)
g_fmt, g_at = terms["fmt"][0], terms["at"][0]                    # [H, h] bottleneck kernel
share = float(tf.norm(g_at) / (tf.norm(g_fmt) + tf.norm(g_at)))
kernel = qk[0].name.split("layer_0/")[-1].removesuffix(":0")
print(f"global gradient norm {shares.attrs['global_norm']:.3g} -> clipped by "
      f"{shares.attrs['clip_scale']:.3g}; AT share on {kernel}: {share:.3f}")
shares.round(6)

# %%
assert np.isclose(share, shares.loc[kernel, "AT share"], rtol=1e-4)
assert ((shares["AT share"] >= 0) & (shares["AT share"] <= 1)).all()

# %% [markdown]
# AT supplies most of the gradient on these variables (FMT reaches them only through the
# attention output, which barely depends on them while attention is uniform): in
# direction, AT was never drowned. Clipping shrinks both parts by the same factor, and
# LAMB's trust ratio rescales each variable's step to $\eta\|W\|$ anyway. What held the
# attention back was the step budget above, not the balance of the terms; the weight
# ×100 on AT matters once the plain MSE of eq. (1) is in the loss, which also pulls on
# the shared bottleneck (`docs/laptop_recipe.md`).
#
# ### The aims, measured by the pipeline
#
# The `transfer` step writes the numbers of this section for every layer around its own
# stage into `pkt/transfer.json` (same held-out batch): the AT KL and the plain MSE must
# fall by half in the layer's own stage, the attention after it be at least 3× as peaked
# as uniform, the spread move toward the teacher's, and the student trained without AT
# (`ablation_pd_fmt`) end with at least twice the AT student's KL. The 3× aim asks for
# structure the teacher layer must have itself: its own max-p / uniform is the last
# column, and a teacher layer that attends almost uniformly cannot teach a peaked map.

# %%
summary = ensure(["transfer"], ctx)["transfer"]
aims = pd.DataFrame(summary["layers"]).set_index("layer")
aims["AT fall %"] = 100 * (1 - aims.at_after / aims.at_before)
aims["MSE fall %"] = 100 * (1 - aims.mse_after / aims.mse_before)
aims["max-p / uniform"] = aims.max_prob_after / aims.max_prob_uniform
aims["teacher's max-p / uniform"] = aims.max_prob_teacher / aims.max_prob_uniform
print("aims:", ", ".join(f"{k} {'met' if v else 'NOT met'}"
                         for k, v in summary["targets"].items()))
ablation = summary["ablation_at_kl"]
print(f"final attention KL: with AT {ablation['with_at']:.4f}, without AT "
      f"{ablation['without_at']:.4f} ({ablation['without_at'] / ablation['with_at']:.1f}x)")
aims[["teacher_layer", "at_before", "at_after", "AT fall %", "mse_before", "mse_after",
      "MSE fall %", "spread_before", "spread_after", "spread_teacher", "max-p / uniform",
      "teacher's max-p / uniform"]].round(3)

# %% [markdown]
# **After the whole recipe.** A stage's gain only counts if it survives the stages after
# it. The same step measures each layer's attention against its teacher layer at five
# points, in Jensen-Shannon divergence,
#
# $$\mathrm{JS}(p, q) = \tfrac12 \mathrm{KL}(p \,\|\, m) + \tfrac12 \mathrm{KL}(q \,\|\, m),
# \qquad m = \tfrac12 (p + q),$$
#
# averaged over heads and query tokens: unlike the KL that AT minimises, it stays finite
# when the student gives zero weight where the teacher attends, and it is at most
# $\ln 2 = 0.693$. PKT here keeps AT as a term during PD (not in the paper: with the
# paper's PD alone the maps drift back, `docs/payoff.md`).

# %%
through = pd.DataFrame(
    [{"layer": row["layer"], **row["js"]} for row in summary["attention"]]).set_index("layer")
through = through[["untrained", "before", "after_stage", "final", "final_without_at"]]
print("attention JS to the teacher through the recipe (nats)")
through.round(5)

# %%
# Sanity: the pipeline's numbers are this notebook's (the same batch, section 7's tables),
# and each JS is a divergence of probabilities: between 0 and ln 2.
assert ((through >= 0) & (through <= np.log(2) + 1e-6)).all().all()
np.testing.assert_allclose(aims.at_before, [at_by_stage.iloc[k, k] for k in aims.index], rtol=1e-3)
np.testing.assert_allclose(aims.at_after, [at_by_stage.iloc[k, k + 1] for k in aims.index],
                           rtol=1e-3)
np.testing.assert_allclose(aims.mse_after, [by_stage["mse"].iloc[k, k + 1] for k in aims.index],
                           rtol=1e-3)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. Feature statistics per layer
#
# FMT's mean and variance terms pull each student block's per-token mean μ and spread σ
# towards the teacher's. The teacher normalises with LayerNorm (each block output is
# γ ⊙ standardised + β); the student's NoNorm has no standardisation at all, so its
# statistics have to be *learned*, starting from the narrower embedding of section 4:

# %%
stats = {"teacher": analysis.feature_statistics(
            {"encoder_outputs": t_out["encoder_outputs"][list(layer_map)]}, mask),
         "student, initial": analysis.feature_statistics(s0_out, mask),
         "student, after layer-wise": analysis.feature_statistics(
             snapshot_outs[f"after {layer_stages[-1].name}"], mask),
         "student, after PD": analysis.feature_statistics(snapshot_outs[labels[-1]], mask)}
fig = transfer_viz.plot_feature_statistics(
    stats, runtime.figure_path("05_feature_statistics.png"),
    title="Block outputs: per-token mean and std, teacher vs student (not in the paper)")
pd.concat(stats, axis=1)

# %%
gap = pd.DataFrame({k: (v - stats["teacher"]).abs().mean() for k, v in stats.items()
                    if k != "teacher"}).T
print("mean |student − teacher| over layers\n", gap.round(4))
std_ratio = (stats["student, after PD"]["std"] / stats["teacher"]["std"])
print("student / teacher per-token std after PD, per layer:",
      ", ".join(f"{r:.2f}" for r in std_ratio))
assert all((f["std"] > 0).all() for f in stats.values())
assert len(gap) == 3 and np.isfinite(gap.to_numpy()).all()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Where this leaves the student
#
# Held-out masked-LM accuracy, perplexity and NSP accuracy of the teacher and of the PKT
# student (the held-out split of the pre-training corpus):

# %%
headline = pd.DataFrame({"teacher": teacher_result["eval"], "PKT student": pkt["eval"]}).loc[
    ["mlm_accuracy", "perplexity", "nsp_accuracy"]]
assert headline.loc[["mlm_accuracy", "nsp_accuracy"]].apply(lambda c: c.between(0, 1)).all().all()
headline

# %% [markdown]
# The numbers this notebook measured, in one place:

# %%
last = at_by_stage.columns[-1]
print(f"FMT, layer 0, before its stage: plain MSE {decomposition['paper_mse']:.4g} = level "
      f"{decomposition['mean_term']:.3g} + spread {decomposition['std_term']:.3g} + shape "
      f"{decomposition['shape_term']:.3g}")
print(f"AT, layer 0: {kl:.4f} on probabilities, {kl_double:.2e} after tf-models' second "
      f"softmax ({kl / kl_double:,.0f}x smaller)")
print(f"PD (without NSP) {float(pd_terms['loss'] - pd_terms['nsp']):.4f} = tf-models' "
      f"mixed-label cross-entropy {mixed_ce:.4f}")
print(f"embedding spread across tokens: copied by role {by_role:.4f}, γ/β swapped {swapped:.4f}")
for k, row in own_stage.iterrows():
    print(f"layer {k}, its own stage on held-out text: trained FMT {row['fmt before']:.2f} -> "
          f"{row['fmt after']:.2f} ({row['fmt change %']:+.0f}%), plain MSE "
          f"{row['mse change %']:+.1f}%, AT {row['at before']:.4f} -> {row['at after']:.4f} "
          f"({row['at change %']:+.1f}%); AT {last}: {at_by_stage[last][k]:.4f}")
print(f"largest growth of a query/key kernel norm in its stage {growth['growth in its stage'].max():.3f} "
      f"(LAMB bound {bound:.3f})")
print(f"held-out MLM accuracy: teacher {headline.loc['mlm_accuracy', 'teacher']:.4f}, "
      f"PKT student {headline.loc['mlm_accuracy', 'PKT student']:.4f}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# * **FMT** compares block outputs token by token; the trained loss re-weights the three
#   exact ingredients of the plain MSE (level, spread, shape), checked numerically here.
# * **AT** is a KL divergence between attention *probabilities*; applying a softmax to
#   them again (as tf-models does) flattens both distributions and shrinks the loss by
#   the factor printed above; `mbert_lib` applies no second softmax.
# * **PD** mixes the ground truth and the teacher's MLM distribution; it equals
#   tf-models' single cross-entropy against mixed labels.
# * The embedding and MLM head are **copied by role**; a positional copy swaps NoNorm's
#   γ and β (the spread of the embedding output collapses, printed above).
# * **Each objective at work, and what it took.** With the original code's layer-wise
#   schedule at 75 steps per stage nothing moved: LAMB bounds how far a stage of S steps
#   at rate η can scale a weight, $e^{\eta S}$, and 75 × 6e-3 allows 1.6×. Training the
#   current layer at 30× ($e^{4.5}$), adding the plain MSE of eq. (1) to FMT (the trained
#   terms leave the feature scale nearly free) and weighting AT ×100, each layer's
#   attention KL and feature MSE fall in its own stage (the aims table above;
#   `docs/laptop_recipe.md` has every setting tried).
# * **What survives the recipe.** Kept as a term during PD (not in the paper), AT holds
#   the maps: after PD every layer is closer to its teacher layer than its own stage left
#   it, while the student trained without AT ends farther from the teacher than an
#   untrained student in layers 1 to 3. The shipped teacher's upper layers
#   attend almost uniformly; the structure worth transferring is in its lower layers. AT was never drowned in direction: it supplies most of the gradient on
#   the query/key variables; the step budget was the limit.
# * Figures: `figures/05_stage_curves.png` (training losses per stage),
#   `05_attention_transfer.png` and `05_attention_heads.png` (maps, teacher vs student),
#   `05_layer_losses_by_stage.png` (every layer's AT and MSE after every stage),
#   `05_feature_statistics.png` (μ and σ per layer). Notebook 06 compares PKT with joint and auxiliary transfer
#   (Table 8) and removes parts of the objective (Table 9).
#
# ## Exercises
#
# Worked solutions: `solutions/05_layerwise_transfer_solutions.ipynb`.
#
# 1. Take the room away again: run `python -m mbert_lib distill` into a new
#    `--model_dir` with `distillation.layer_wise.current_lr_multiplier=3` (the original
#    code's rate at 75 steps). Recompute section 7: how far do AT and the MSE fall now,
#    and does $e^{\eta S}$ predict by how much ‖W_Q‖ and ‖W_K‖ grew? Then set
#    `distillation.layer_wise.lower_lr_multiplier=0` (lower layers frozen, the paper's
#    first description): which layers' losses change?
#    *Hint: section 7 prints the bound and the largest measured growth side by side; a
#    layer-wise-only run (`distillation.pretrain.steps=0`) takes about 2 minutes.*
# 2. Compute the decomposition of section 1 for the student *after* its stage. Which of
#    the three terms did the stage reduce most, and how do the weights 100 / 5000 / 5
#    explain it?
#    *Hint: `analysis.fmt_decomposition` takes the teacher's and the student's block
#    outputs; compare the plain terms and the weighted trained terms before and after.*
# 3. Replace `attention_transfer` by the double-softmax version in a one-layer stage and
#    watch the AT curve: what does the student learn about attention?
#    *Hint: patch the function the objective calls (`mbert_lib.distill.objective.
#    attention_transfer`) for one run, and measure the KL on the probabilities afterwards.*
# 4. Map a 2-layer student onto teacher layers [1, 3] with
#    `distillation.transfer_teacher_layers` (and `student.overrides.num_hidden_layers=2`).
#    Which teacher layers would you choose for a 6-layer student of a 24-layer teacher?
#    *Hint: compare each student layer's losses with those of the 4-layer student's layer
#    that learns the same teacher layer; remember which layer the MLM head reads.*
