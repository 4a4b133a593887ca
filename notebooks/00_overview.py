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
# # 00 · MobileBERT in one page
#
# *Sun, Yu, Song, Liu, Yang, Zhou: "MobileBERT: a Compact Task-Agnostic BERT for
# Resource-Limited Devices", ACL 2020 (arXiv 2004.02984).*
#
# This notebook is the map of the project: what the paper does, where each idea
# lives in the notebooks and in `mbert_lib`, and how big every model in it is,
# computed from the configurations and set beside the paper's own numbers
# (Table 1 for parameters, Table 4 for FLOPs).
#
# Quotations are the paper's words; everything else is our paraphrase. Every
# number that is not the paper's is computed by `mbert_lib` when the notebook runs.

# %%
import importlib
import pkgutil

import pandas as pd

import mbert_lib
from mbert_lib import anatomy, build_encoder, count_params, get_preset, paper, runtime, tables
from mbert_lib.viz import anatomy as anatomy_viz

pd.set_option("display.width", 180)
pd.set_option("display.max_columns", 20)
pd.set_option("display.max_colwidth", 90)
print("fast mode:", runtime.fast_mode())

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. The problem
#
# > "There have been some efforts that task-specifically distill BERT into compact
# > models [...] To the best of our knowledge, there is not yet any work for building
# > a task-agnostic lightweight pre-trained model, that is, a model that can be
# > generically fine-tuned on different downstream NLP tasks as the original BERT
# > does."
#
# The obvious recipe, a narrower or shallower BERT trained with a distillation loss,
# does not work well:
#
# > "For example, one may just take a narrower or shallower version of BERT, and
# > train it until convergence by minimizing a convex combination of the prediction
# > loss and distillation loss [...] Unfortunately, empirical results show that such
# > a straightforward approach results in significant accuracy loss [...] It is
# > well-known that shallow networks usually do not have enough representation power
# > while narrow and deep networks are difficult to train."
#
# ## 2. The answer, in the abstract's words
#
# > "Basically, MobileBERT is a thin version of BERT_LARGE, while equipped with
# > bottleneck structures and a carefully designed balance between self-attentions and
# > feed-forward networks. To train MobileBERT, we first train a specially designed
# > teacher model, an inverted-bottleneck incorporated BERT_LARGE model. Then, we
# > conduct knowledge transfer from this teacher to MobileBERT."
#
# Five ideas, each with its own notebook:
#
# * **A thin, deep student with bottlenecks** (section 3.1, Figure 1c). MobileBERT
#   keeps BERT_LARGE's 24 layers but each block works at width h = 128. A linear map
#   takes the 512-wide feature map between blocks down to 128 before attention and
#   another brings it back up after the FFNs, like ResNet's bottleneck.
# * **Stacked FFNs** (section 3.2). A thin block with one FFN has too few FFN
#   parameters compared with its attention; MobileBERT stacks F = 4 small FFNs to
#   restore the MHA:FFN parameter balance that BERT has (notebook 03).
# * **An inverted-bottleneck teacher, IB-BERT_LARGE** (section 3.1, Figure 1b). It
#   is BERT_LARGE (intra-block width 1024, FFN 4096) whose blocks also talk to each
#   other at 512 through bottleneck maps, so that every teacher layer's output has the
#   student's shape and can be imitated feature map by feature map.
# * **Progressive knowledge transfer** (sections 3.5–3.6, Figure 2). The student imitates the
#   teacher one layer at a time, bottom up, with a feature-map loss (mean squared
#   error between the two layers' outputs) and an attention-transfer loss (KL
#   divergence between their attention distributions), then pre-training
#   distillation on masked LM and next-sentence prediction.
# * **Operational optimisations** (section 3.3): NoNorm, an element-wise γ ⊙ h + β in
#   place of LayerNorm, and relu in place of gelu, for latency on a phone; and
#   ("Embedding Factorization", section 3.4) a trigram embedding that keeps the token
#   table only 128 wide.
#
# ## 3. The headline, in the abstract's words
#
# > "Empirical studies show that MobileBERT is 4.3× smaller and 5.5× faster than
# > BERT_BASE while achieving competitive results on well-known benchmarks. On the
# > natural language inference tasks of GLUE, MobileBERT achieves a GLUE score of 77.7
# > (0.6 lower than BERT_BASE), and 62 ms latency on a Pixel 4 phone. On the SQuAD
# > v1.1/v2.0 question answering task, MobileBERT achieves a dev F1 score of 90.0/79.2
# > (1.5/2.1 higher than BERT_BASE)."
#
# The same numbers, as the project stores them (`mbert_lib.paper`, what every later
# notebook compares against):

# %%
headline = pd.DataFrame({
    "params (M)": {name: row["params_m"] for name, row in paper.TABLE1.items()},
    "GFLOPs, T=128": paper.FLOPS_B,
    "Pixel 4 latency (ms)": paper.PIXEL4_LATENCY_MS,
    "GLUE score": paper.GLUE_SCORE,
})
headline.index.name = "paper"
headline

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Map of the repository
#
# | notebook | paper | what it shows | library |
# |---|---|---|---|
# | 00_overview (this one) | whole paper, Tables 1 and 4 | the ideas, presets, sizes | `anatomy`, `config`, `paper` |
# | 01_nonorm_and_relu | section 3.3, Table 7 | NoNorm vs LayerNorm, relu vs gelu, latency | `layers/nonorm.py`, `layers/activations.py`, `bench/` |
# | 02_trigram_embedding | section 3.4, "Embedding Factorization" | 128-wide table + width-3 convolution → 512 | `layers/embedding.py` |
# | 03_bottleneck_blocks | sections 3.1–3.2, Table 1 | one block shape by shape, shared Q/K bottleneck, stacked FFNs, MHA:FFN ratio, IB-BERT block, Table 1 counts | `layers/transformer.py`, `layers/attention.py`, `layers/ffn.py`, `anatomy` |
# | 04_teacher_ibbert | sections 3.1, 4.1 (Table 2) | data, WordPiece, MLM/NSP, LAMB; pre-training the laptop IB-BERT teacher | `data/`, `optim/`, `train/` |
# | 05_layerwise_transfer | sections 3.5–3.6, Figure 2 | FMT, AT and PD losses; progressive transfer stage by stage; attention maps | `distill/` |
# | 06_strategies_and_ablations | section 4.6, Tables 8, 9 | auxiliary vs joint vs progressive; which loss matters | `distill/`, `pipeline/` |
# | 07_finetuning_glue | Table 4 | SST-2: teacher vs distilled student vs baselines | `finetune/` |
# | 08_checkpoints_and_export | released checkpoints | TF1 / Hugging Face checkpoints, SavedModel | `convert/`, `export/` |
# | 09_tflite_quantization | Tables 6, 7 | TFLite export, 8-bit quantization, latency | `export/`, `bench/` |
#
# The library as it stands, read from the package itself: one row per package or
# top-level module, with the first line of its docstring and how many modules it holds
# (`help(mbert_lib.distill)` and friends list them one by one):

# %%
def first_line(name: str) -> str:
    doc = (importlib.import_module(name).__doc__ or "").strip().splitlines()
    return doc[0] if doc else ""


modules = {}
for info in pkgutil.walk_packages(mbert_lib.__path__, "mbert_lib."):
    if not info.name.endswith("__main__"):
        top = ".".join(info.name.split(".")[:2])
        modules.setdefault(top, []).append(info.name)
library = pd.DataFrame([{"package or module": top, "modules": len(names),
                         "what it holds": first_line(top)}
                        for top, names in modules.items()]).set_index("package or module")
undocumented = [n for names in modules.values() for n in names if not first_line(n)]
assert not undocumented, f"modules without a docstring: {undocumented}"
library

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. The presets and their sizes
#
# `mbert_lib.PRESETS` holds the four models of the paper's Table 1 (`bert_base`,
# `ibbert_large`, `mobilebert`, `mobilebert_tiny`), MobileBERT without the
# operational optimisations (`mobilebert_no_opt`: LayerNorm + gelu, Table 7), a
# laptop-scale teacher/student pair (`tiny_teacher`, `tiny_student`) that the
# training notebooks use, and `tiny_bert`: a plain BERT (no bottlenecks, one FFN,
# LayerNorm + gelu) with as many parameters as `tiny_student`, the baseline that
# notebook 07 fine-tunes beside the distilled student.
#
# Sizes are computed in closed form from each config by `mbert_lib.anatomy` (no model
# is built). For MobileBERT's embedding and blocks, with V vocabulary, E = 128 token
# width, P positions, S token types, H = 512, h = 128, I = 512 FFN width, F = 4 FFNs:
#
# $$N_\text{emb} = VE + (3E \cdot H + H) + PH + SH + 2H$$
#
# $$N_\text{block} = \underbrace{(Hh + h)}_\text{linear in} + \underbrace{(Hh + h)}_\text{shared Q/K}
#   + \underbrace{2(h^2 + h)}_{Q,\,K} + \underbrace{(Hh + h)}_{V} + \underbrace{(h^2 + h)}_{O}
#   + F\,\underbrace{(2hI + I + h)}_\text{one FFN} + \underbrace{(hH + H)}_\text{linear out}
#   + \underbrace{2\,((3 + F)h + H)}_{\gamma,\ \beta\text{ of the norms}}$$
#
# and $N = N_\text{emb} + L \cdot N_\text{block}$ (+ the pooler, $H^2 + H$, when the
# config has `classifier_activation`).
#
# FLOPs are 2 × the multiply-adds of every matrix product for one sequence of T tokens,
# including the attention scores $QK^\top$ and the context $AV$ (the $T^2$ terms);
# embedding lookups, biases, norms, activations and softmax are not counted (section 6
# below sizes them). For MobileBERT:
#
# $$\text{FLOPs}(T) = 2\,\big[\,T \cdot 3E \cdot H + L\,\big(T\,(4Hh + 3h^2) + 2T^2h + 2FThI\big)\big]$$

# %%
presets = tables.preset_table()
presets.drop(columns="params").round(3)

# %% [markdown]
# Sanity: the formula above, typed out with MobileBERT's numbers, gives the library's
# counts; and the closed form equals the number of weights of models actually built
# (the small presets in fast mode; in a full run also MobileBERT and MobileBERT_TINY;
# notebook 03 and `tests/test_anatomy.py` check the others, IB-BERT included).

# %%
c = get_preset("mobilebert")
V, E, H, h, I, F, L, P, S = (c.vocab_size, c.embedding_size, c.hidden_size,
                             c.intra_bottleneck_size, c.intermediate_size,
                             c.num_feedforward_networks, c.num_hidden_layers,
                             c.max_position_embeddings, c.type_vocab_size)
n_emb = V * E + (3 * E * H + H) + P * H + S * H + 2 * H
n_block = ((H * h + h) + (H * h + h) + 2 * (h * h + h) + (H * h + h) + (h * h + h)
           + F * (2 * h * I + I + h) + (h * H + H) + 2 * ((3 + F) * h + H))
T = 128
flops_formula = 2 * (T * 3 * E * H + L * (T * (4 * H * h + 3 * h * h) + 2 * T * T * h
                                          + 2 * F * T * h * I))
assert n_emb + L * n_block == anatomy.param_total(c) == presets.loc["mobilebert", "params"]
assert flops_formula == anatomy.flops(c, T)

built = {}
for name in runtime.pick(["tiny_student", "tiny_teacher", "mobilebert_tiny", "mobilebert"],
                         ["tiny_student", "tiny_teacher"]):
    built[name] = count_params(build_encoder(get_preset(name)))
    assert built[name] == presets.loc[name, "params"], name
print("closed form == built encoder for", list(built))
print(f"MobileBERT: {n_emb + L * n_block:,} parameters "
      f"({n_emb:,} embedding + {L} × {n_block:,} per block), "
      f"{flops_formula / 1e9:.2f} GFLOPs at T = {T}")

# %% [markdown]
# Where the parameters live, per group of components (and in percent of the encoder):

# %%
groups = pd.DataFrame({name: anatomy.param_groups(get_preset(name))
                       for name in paper.TABLE1}).T.fillna(0).astype(int)
groups["total"] = groups.sum(axis=1)
share = groups.drop(columns="total").div(groups["total"], axis=0).mul(100).round(1)
pd.concat([groups, share.add_suffix(" (%)")], axis=1)

# %%
assert (groups["total"] == [anatomy.param_total(get_preset(n)) for n in groups.index]).all()
emb_share = share["embedding"]
print(", ".join(f"{name}: embedding {emb_share[name]:.1f}% of the encoder"
                for name in groups.index))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Paper vs ours
#
# The paper's parameter counts (Table 1) and FLOPs (Table 4) beside ours. The
# differences are small and are worked through in notebook 03 (section 5); the
# cell below states them from the numbers of this run.

# %%
compare = presets.loc[list(paper.TABLE1), ["params (M)", "paper params (M)",
                                           "GFLOPs @T=128", "paper GFLOPs"]]
compare["params gap (%)"] = 100 * (compare["params (M)"] / compare["paper params (M)"] - 1)
compare["FLOPs gap (%)"] = 100 * (compare["GFLOPs @T=128"] / compare["paper GFLOPs"] - 1)
compare.round(2)

# %%
flops_t = tables.flops_comparison()
for name, row in compare.iterrows():
    line = (f"{name}: {row['params (M)']:.2f}M parameters vs the paper's "
            f"{row['paper params (M)']:g}M ({row['params gap (%)']:+.1f}%)")
    if name in flops_t.index:
        line += (f"; {row['GFLOPs @T=128']:.2f} GFLOPs vs {row['paper GFLOPs']:g} "
                 f"({row['FLOPs gap (%)']:+.1f}%)")
    print(line)
mb = flops_t.loc["mobilebert"]
print(f"\nMobileBERT's FLOPs gap is the largest. Counting its attention as Table 1 draws it "
      f"(Q and K projected from the 512-wide input instead of the released code's shared "
      f"128-wide bottleneck) gives {mb['matmul, Table 1 MHA']:.2f} GFLOPs; adding a rough count "
      f"of biases, norms, activations and softmax gives {mb['+ elementwise, Table 1 MHA']:.2f}. "
      f"The paper does not say what it counts.")

# %%
fig = anatomy_viz.plot_preset_sizes(presets, runtime.figure_path("00_presets.png"))
print("saved", runtime.shown_path(runtime.figure_path("00_presets.png")))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# * MobileBERT has BERT_LARGE's depth (24 blocks) with half its width between blocks
#   (512 vs 1024) and an eighth inside them (128), bottleneck maps around every block,
#   four stacked FFNs, NoNorm and relu; it is trained by layer-by-layer imitation of an
#   inverted-bottleneck BERT_LARGE teacher.
# * Every model of the paper is a `MobileBertConfig` preset; `mbert_lib.anatomy`
#   counts parameters and FLOPs from a config in closed form, and the counts equal the
#   weights of the built Keras models.
# * The counts are printed above beside the paper's Table 1 and Table 4 numbers; the
#   figure `figures/00_presets.png` shows them on a log scale.
#
# ## Exercises
#
# Worked solutions: `solutions/00_overview_solutions.ipynb`.
#
# 1. Using `anatomy.param_breakdown`, find the single component that holds the most
#    parameters of MobileBERT. How much would the encoder shrink with a vocabulary of
#    8,192 word pieces instead of 30,522?
#    *Hint: sort the breakdown by `total` (each × count); only the token table (V·E)
#    depends on V in the encoder, but the MLM head's `extra_output_weights` and output
#    bias do too (`heads=True`).*
# 2. `anatomy.flops(config, T)` grows with T. At which sequence length do the
#    attention's $T^2$ terms (scores and context) cost as much as all the projections
#    of a MobileBERT block? And of a BERT_BASE block?
#    *Hint: `anatomy.flops_breakdown` lists the "scores QKᵀ" and "context AV" rows apart
#    from the projections; the projections grow like T, the two attention products
#    like T².*
# 3. Design a preset with about 10M parameters by changing only `num_hidden_layers`
#    and `num_feedforward_networks` of `mobilebert`. Which choice keeps the MHA:FFN
#    ratio (`anatomy.mha_ffn_ratio`) inside the paper's 0.4–0.6?
#    *Hint: the embedding (4.37M) does not depend on L or F, and each extra FFN adds the
#    same number of parameters to a block; the ratio depends on F only.*
