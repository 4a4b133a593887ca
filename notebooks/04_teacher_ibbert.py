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
# # 04 · Pre-training the IB-BERT teacher: data, masking, LAMB, curves
#
# *Paper sections 3.1 and 4.1 (the inverted-bottleneck teacher, Table 2) and 4.2
# (implementation details); BERT (Devlin et al., 2019) for the objectives; LAMB (You et
# al., 2019) for the optimizer.*
#
# MobileBERT is not trained from scratch: it imitates a teacher, IB-BERT_LARGE, layer by
# layer (notebooks 05–06). The teacher is a BERT_LARGE whose 24 blocks exchange a
# 512-wide feature map and work at 1024 inside (an *inverted* bottleneck, notebook 03);
# the paper's architecture search (Table 2) found that the inter-block width can shrink
# to 512 without hurting the teacher, while the intra-block width cannot. The paper
# pre-trains it like BERT, with masked-LM and next-sentence prediction on BooksCorpus +
# English Wikipedia, "on 256 TPU v3 chips for 500k steps with a batch size of 4096 and
# LAMB optimizer". **The teacher was never released**, so a reproduction has to train
# its own. This notebook does it at laptop scale, on real text, and checks every piece:
#
# 1. the data: corpus sources and sizes, the offline corpus vs WikiText-2, the WordPiece
#    vocabulary, one example token by token;
# 2. BERT's masking and NSP rates, asserted on the real examples;
# 3. LAMB's update, with the trust ratio of every variable for real steps
#    (`figures/04_lamb_trust_ratios.png`), and the warmup + decay schedule
#    (`figures/04_lr_schedule.png`);
# 4. training the teacher through the reproduction pipeline; its curves from the run's
#    TensorBoard files (`figures/04_pretraining_curves.png`); held-out metrics beside
#    context-free baselines; NSP on WikiText alone;
# 5. the teacher the project ships, pre-trained eight times longer, beside this one
#    (`figures/04_shipped_teacher.png`);
# 6. the paper-scale configuration beside ours, with the compute ratio.
#
# The rest of the course distils from the shipped teacher (`teachers/laptop_ibbert/`):
# a teacher worth distilling takes hours of CPU, not a lesson's minutes. This notebook
# trains its own, the pipeline's `reproduce --teacher trained`, in a run directory of its
# own, to look inside pre-training.
#
# Shapes: B batch, T tokens (seq_length), P prediction slots per sequence, V vocabulary,
# H hidden size, n examples.

# %%
import json

import mbert_lib  # noqa: F401  (selects tf-keras before TensorFlow is imported)
import numpy as np
import pandas as pd
import tensorflow as tf

from mbert_lib import paper, runtime
from mbert_lib.anatomy.compute import pretraining_compute
from mbert_lib.data import (
    example_statistics,
    load_pretraining_corpus,
    load_tokenizer,
    make_pretraining_dataset,
    read_manifest,
    read_tfrecord,
)
from mbert_lib.data.example_view import example_table
from mbert_lib.data.heldout import heldout_examples_by_source
from mbert_lib.experiment import load_experiment
from mbert_lib.optim import WarmupPolynomialDecay
from mbert_lib.optim.lamb import variable_name
from mbert_lib.optim.trust import lamb_step_report, short_variable_name
from mbert_lib.pipeline import ensure, notebook_context
from mbert_lib.pipeline.core import read_record
from mbert_lib.runtime import REPO_ROOT
from mbert_lib.train.baselines import nsp_majority_baseline, target_counts, unigram_mlm_baseline
from mbert_lib.train.evaluation import evaluate_pretrainer, fill_masks
from mbert_lib.train.metrics_io import read_scalars, scalar_series
from mbert_lib.train.state import pretraining_gradients, restore_training_state
from mbert_lib.viz import training as training_viz

pd.set_option("display.width", 180)
pd.set_option("display.max_columns", 20)
pd.set_option("display.max_colwidth", 90)
tf.get_logger().setLevel("ERROR")   # no retracing warnings from evaluating several example sets
ctx = notebook_context(teacher="trained")  # a run of its own: its teacher is trained here
print("fast mode:", runtime.fast_mode(), "| pipeline output:", runtime.shown_path(ctx.out_dir),
      "| data:", ctx.data_dir or "builtin (offline default)")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. The pre-training text
#
# The pipeline's `data` step loads the corpus, holds out 5% of its words (whole
# documents, chosen by content hash), learns a WordPiece vocabulary on the rest and cuts
# masked-LM + NSP examples (`data_scripts/README.md` documents every choice). With
# `MBERT_DATA_DIR` pointing at a local copy of WikiText-2 and GLUE it reads both
# WikiText-2 files plus the SST-2 *training* sentences; without it, the offline default:
# the docstrings of Python's standard library. A finished step is skipped.

# %%
data = ensure(["data"], ctx)["data"]
data_dir = ctx.step_dir("data")
sources = json.loads((data_dir / "corpus" / "sources.json").read_text())
files = pd.DataFrame(sources["files"])[["name", "size_bytes", "documents", "sentences",
                                        "words", "note"]]
if ctx.data_dir:                                     # paths relative to the data directory
    files["name"] = files["name"].str.replace(str(ctx.data_dir), "$MBERT_DATA_DIR", regex=False)
print("corpus:", sources["corpus"])
files

# %% [markdown]
# How big is that? The paper's teacher read BooksCorpus + English Wikipedia, as counted
# by BERT (`paper.PRETRAINING_CORPUS_WORDS`). Beside it, our corpora (the builtin one is
# built from this Python installation, so it is counted here, not quoted):

# %%
builtin = load_pretraining_corpus("builtin")
paper_words = sum(paper.PRETRAINING_CORPUS_WORDS.values())
sizes = pd.DataFrame(
    [{"corpus": f"{name} (paper)", "words": words}
     for name, words in paper.PRETRAINING_CORPUS_WORDS.items()]
    + [{"corpus": "builtin: Python stdlib docstrings", "words": builtin.num_words}]
    + [{"corpus": f"this run: {name.split('/')[-1]}", "words": words}
       for name, words in zip(files.name, files.words) if ctx.data_dir])
sizes["share of the paper's text"] = (sizes.words / paper_words).map("{:.5%}".format)
print(f"this run's corpus: {files.words.sum():,} words = "
      f"{files.words.sum() / paper_words:.4%} of the paper's {paper_words / 1e9:.1f}B words; "
      f"the builtin corpus: {builtin.num_words:,} words")
sizes

# %% [markdown]
# ### WordPiece
#
# A vocabulary of V tokens is learned on the training text with the `tokenizers`
# library (deterministically, see `mbert_lib/data/wordpiece_trainer.py`). Ids 0–4 are
# BERT's special tokens; words are split into the longest known pieces, continuation
# pieces start with `##`.

# %%
tokenizer = load_tokenizer(data["tokenizer_dir"])
manifest = read_manifest(data["examples_dir"])
T, P = manifest["seq_length"], manifest["max_predictions_per_seq"]
heldout_text = (data_dir / "corpus" / "heldout.txt").read_text(encoding="utf-8")
heldout_words = heldout_text.split()
pieces = tokenizer.encode_batch(heldout_text.splitlines())
print(tokenizer, "| T =", T, "| P =", P)
print("special tokens:", {t: tokenizer.token_to_id(t)
                          for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")})
print(f"held-out text: {sum(map(len, pieces)) / len(heldout_words):.2f} tokens per word")
sentence = next(s for s in heldout_text.splitlines() if 8 <= len(s.split()) <= 20)
print(sentence)
print(tokenizer.tokenize(sentence))

# %%
assert tokenizer.vocab_size == manifest["vocab_size"]
assert [tokenizer.token_to_id(t) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")] \
    == [0, 1, 2, 3, 4]
assert tokenizer.decode(tokenizer.encode(sentence)).replace(" ", "") == \
    sentence.lower().replace(" ", "") or "[UNK]" in tokenizer.tokenize(sentence)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Masked LM and next-sentence examples
#
# Each example is `[CLS] A [SEP] B [SEP]`, at most T tokens. BERT's two objectives
# (Devlin et al., 2019, section 3.1):
#
# * **NSP**: with probability ½, B is the text that follows A (label 0, *IsNext*); else
#   B comes from another document (label 1, *NotNext*).
# * **MLM**: of the C maskable tokens (not `[CLS]`, `[SEP]`, `[PAD]`, `[UNK]`),
#   $k = \min(P, \lfloor 0.15\,C + u \rfloor)$, $u \sim U[0,1)$, are chosen, so that
#   $\mathbb{E}[k] = 0.15\,C$; each chosen token becomes `[MASK]` with probability 0.8,
#   a random token with 0.1, and stays itself with 0.1. The model must predict the
#   original token at all k positions, the unchanged ones included.
#
# Masking is static (decided once per example, as in BERT), and the data step passes
# over the text `dupe_factor` times with fresh masks. One real training example (the
# first with all three kinds of target), token by token:

# %%
train_arrays = read_tfrecord(data_dir / "examples" / "train.tfrecord", T, P)   # [n, T] / [n, P]
eval_arrays = read_tfrecord(data_dir / "examples" / "eval.tfrecord", T, P)
index, table = next((i, t) for i in range(len(train_arrays["next_sentence_labels"]))
                    if {"[MASK]", "random", "kept"} <= set(
                        (t := example_table(train_arrays, i, tokenizer)).role))
print(f"example {index}: NSP label {train_arrays['next_sentence_labels'][index]} "
      f"({'random B' if train_arrays['next_sentence_labels'][index] else 'B follows A'}), "
      f"{len(table)} tokens, {(table.role != '').sum()} targets")
print(" ".join(f"«{r.input}»" if r.role == "[MASK]" else f"‹{r.input}|{r.original}›"
               if r.role == "random" else f"{{{r.input}}}" if r.role == "kept" else r.input
               for r in table.itertuples()))
table[table.role != ""]

# %%
assert table.segment.iloc[0] == "A" and table.input.iloc[0] == "[CLS]"
assert table.input.iloc[-1] == "[SEP]" and (table.input == "[SEP]").sum() == 2
assert len(table) <= T and (table.role != "").sum() <= P
assert ((table.input == table.original) | (table.role.isin(["[MASK]", "random"]))).all()

# %% [markdown]
# Above: `«[MASK]»` a masked target, `‹read|original›` a target replaced by a random
# token, `{token}` a target left as it was. The table lists every target.
#
# ### The rates, checked on every training example
#
# Each rate is a proportion over many independent draws, so the observed value must be
# within a few standard errors of BERT's: for a proportion p over N draws,
# $\mathrm{SE} = \sqrt{p(1-p)/N}$. The 15% is a per-sequence count with stochastic
# rounding, whose only randomness is $u$: its SE is at most $\sqrt{n/4}/C_\text{total}$.

# %%
stats = example_statistics(train_arrays, tokenizer)
targets = stats["predictions"]


def check_rate(name, observed, expected, n, se=None):
    se = se if se is not None else np.sqrt(expected * (1 - expected) / n)
    z = (observed - expected) / se
    assert abs(z) < 4, f"{name}: {observed:.4%} vs {expected:.2%} is {z:.1f} standard errors off"
    return {"rate": name, "expected": expected, "observed": observed, "draws": n, "z": z}


rates = pd.DataFrame([
    check_rate("targets / maskable tokens", targets / stats["maskable"], 0.15,
               stats["examples"], se=np.sqrt(stats["examples"] / 4) / stats["maskable"]),
    check_rate("[MASK] / targets", stats["replaced_by_mask"] / targets, 0.8, targets),
    check_rate("random / targets", stats["replaced_by_random"] / targets, 0.1, targets),
    check_rate("kept / targets", stats["kept"] / targets, 0.1, targets),
    check_rate("NSP random next", stats["random_next"] / stats["examples"], 0.5,
               stats["examples"]),
])
print(f"{stats['examples']:,} training examples, {stats['tokens']:,} tokens, "
      f"{targets:,} MLM targets")
rates

# %% [markdown]
# (A "random" replacement that happens to draw the original token is counted as kept:
# probability 1/V per random draw, far below these tolerances.)
#
# ## 3. The optimizer: LAMB
#
# BERT trained with Adam; the paper's teacher uses LAMB (You et al., 2019), Adam with a
# **layer-wise trust ratio** that makes very large batches trainable. For one variable
# x (a "layer") with gradient $g_t$ at update t (Algorithm 2 of the LAMB paper):
#
# $$m_t = \beta_1 m_{t-1} + (1-\beta_1) g_t, \qquad v_t = \beta_2 v_{t-1} + (1-\beta_2) g_t^2$$
# $$\hat m_t = \frac{m_t}{1-\beta_1^t}, \quad \hat v_t = \frac{v_t}{1-\beta_2^t}, \qquad
#   r_t = \frac{\hat m_t}{\sqrt{\hat v_t} + \epsilon}, \qquad u_t = r_t + \lambda x_t$$
# $$x_{t+1} = x_t - \eta_t \, \frac{\lVert x_t \rVert}{\lVert u_t \rVert} \, u_t$$
#
# so every adapted variable moves by exactly $\eta_t \lVert x_t \rVert$: the same
# *fraction* of its norm, whatever the scale of its gradient. Norm scales/shifts and
# biases get neither weight decay nor the ratio (a plain Adam step), as in the original
# MobileBERT code. `Lamb.direction` in `mbert_lib/optim/lamb.py` computes
# $(m_t, v_t, u_t, \lVert x_t\rVert / \lVert u_t \rVert)$ line by line, and
# `lamb_step_report` evaluates it for every variable *without* applying it.
#
# We take two real states of the teacher run below: the freshly initialised model
# before update 1, and the trained model at its last checkpoint, each with one real
# training batch of B sequences. (The teacher is trained here if the pipeline has not
# trained it yet.)

# %%
teacher = ensure(["teacher"], ctx)["teacher"]
model_dir = teacher["model_dir"]
batch = next(iter(make_pretraining_dataset(data["examples_dir"], 32, seed=123)))  # [B, T] ...
reports, states, gradients = {}, {}, {}
for label, restore in (("update 1 (initialisation)", False), ("after training", True)):
    state = states[label] = restore_training_state(model_dir, restore=restore)
    loss, grads = gradients[label] = pretraining_gradients(state.model, batch)
    reports[label] = lamb_step_report(state.optimizer, grads, state.model.trainable_variables)
    if not restore:                               # kept to look at update 1's gradients
        clip = state.optimizer.global_clipnorm
        first_grads = tf.clip_by_global_norm(grads, clip)[0] if clip else grads
    print(f"{label}: step {state.step}, loss on the batch {loss:.3f}, "
          f"η of the next update {reports[label].learning_rate.iloc[0]:.3g}")
fresh, trained = states.values()           # a fresh initialisation; the trained teacher
experiment_wd = trained.optimizer.weight_decay_rate
columns = ["variable", "size", "weight_norm", "update_norm", "trust_ratio", "decayed"]
reports["after training"].sort_values("trust_ratio")[columns].head(6)

# %%
for label, report in reports.items():
    adapted = report[report.adapted]
    np.testing.assert_allclose(adapted.trust_ratio, adapted.weight_norm / adapted.update_norm,
                               rtol=1e-5)
    # ‖ratio · u‖ = ‖x‖: per unit of η every adapted variable moves by its own norm
    np.testing.assert_allclose(adapted.trust_ratio * adapted.update_norm, adapted.weight_norm,
                               rtol=1e-5)
    assert (report[~report.adapted].trust_ratio == 1.0).all()
    assert not report[~report.adapted].decayed.any()    # norms and biases: plain Adam

# %% [markdown]
# LAMB's direction by hand for one kernel at update 1, against `lamb_step_report`: m and
# v start at 0, so $\hat m_1 = g$, $\hat v_1 = g^2$, and $u = g/(|g| + \epsilon) + \lambda x$.

# %%
k = next(i for i, v in enumerate(fresh.model.trainable_variables)
         if variable_name(v).endswith("layer_0/attention/query/kernel"))
x = fresh.model.trainable_variables[k].numpy().astype(np.float64)
g = first_grads[k].numpy().astype(np.float64)
b1, b2, eps = fresh.optimizer.beta_1, fresh.optimizer.beta_2, fresh.optimizer.epsilon
m_hat = (1 - b1) * g / (1 - b1)                                  # m_1 / (1 − β1^1)
v_hat = (1 - b2) * g ** 2 / (1 - b2)                             # v_1 / (1 − β2^1)
u = m_hat / (np.sqrt(v_hat) + eps) + experiment_wd * x           # r + λx (a decayed kernel)
row = reports["update 1 (initialisation)"].set_index("variable").loc[
    variable_name(fresh.model.trainable_variables[k])]
ratio_by_hand = np.linalg.norm(x) / np.linalg.norm(u)
print(f"layer 0 query kernel at update 1: ‖x‖/‖u‖ by hand {ratio_by_hand:.5f}, "
      f"lamb_step_report {row.trust_ratio:.5f}")
np.testing.assert_allclose(ratio_by_hand, row.trust_ratio, rtol=1e-4)
assert row.decayed and row.adapted

# %% [markdown]
# The schedule's η is 0 at both states (the warm-up starts at 0, the decay ends at 0), so
# the claim "every adapted variable moves by η‖x‖" is checked by one real update at
# η = 1e-3: the optimizer's own apply_gradients, with the run's hyperparameters, on the
# trained weights (restored afterwards). ‖x_{t+1} − x_t‖ / ‖x_t‖ must be η.

# %%
variables = trained.model.trainable_variables
probe = type(trained.optimizer).from_config({**trained.optimizer.get_config(),
                                             "learning_rate": 1e-3})
before = [v.numpy() for v in variables]
probe.apply_gradients(zip(gradients["after training"][1], variables))
moved = pd.Series({variable_name(v): np.linalg.norm(v.numpy() - b) / np.linalg.norm(b)
                   for v, b in zip(variables, before)})
for v, b in zip(variables, before):
    v.assign(b)
adapted_names = reports["after training"].set_index("variable").adapted
np.testing.assert_allclose(moved[adapted_names[adapted_names].index], 1e-3, rtol=1e-3)
print(f"one real update at η = 1e-3: every one of the {int(adapted_names.sum())} adapted "
      f"variables moved by {moved[adapted_names].min():.6f} to {moved[adapted_names].max():.6f}"
      f" of its norm; the {int((~adapted_names).sum())} others (plain Adam) by "
      f"{moved[~adapted_names].min():.2g} to {moved[~adapted_names].max():.2g}")

# %%
# At update 1, r = m̂/(√v̂+ε) = g/(|g|+ε): every |r| <= 1, so ‖u‖ <= √size + λ‖x‖ and the
# ratio is at least RMS(x) / (1 + λ RMS(x)), with equality where every |g| >> ε.
first = reports["update 1 (initialisation)"]
kernels = first[first.variable.str.contains("layer_") & first.variable.str.endswith("kernel")]
rms = kernels.weight_norm / np.sqrt(kernels["size"])
floor = rms / (1 + experiment_wd * rms)
assert (kernels.trust_ratio >= floor * (1 - 1e-4)).all()
print(f"initializer_range {trained.experiment.model.build_config().initializer_range:g}; "
      f"update 1: RMS(x) of the block kernels median {rms.median():.4f}, "
      f"trust ratio median {kernels.trust_ratio.median():.4f}, "
      f"ratio / RMS(x) median {(kernels.trust_ratio / rms).median():.2f}")
epsilon = fresh.optimizer.epsilon
for i in (kernels.trust_ratio / rms).sort_values().index[[0, -1]]:   # lowest, highest
    g = np.abs(first_grads[i].numpy())
    print(f"  {short_variable_name(first.variable[i])}: ratio / RMS(x) "
          f"{first.trust_ratio[i] / rms[i]:.2f}, median |g| {np.median(g):.1e}, "
          f"{(g < epsilon).mean():.0%} of |g| below ε = {epsilon:g}")

# %% [markdown]
# The trust ratio of every layer-adapted variable in both states (log scale), one row per
# kind of variable with one dot per block (the MobileBERT paper has no such figure, this
# one is ours):

# %%
fig = training_viz.plot_trust_ratios(
    reports, path=runtime.figure_path("04_lamb_trust_ratios.png"),
    title="LAMB trust ratio ‖x‖/‖u‖ per variable, teacher pre-training (paper §4.1)\n"
          "(biases, LayerNorm γ/β: ratio 1, not shown)")

# %% [markdown]
# Why the ratios sit where they do: per element, RMS(x) = ‖x‖/√size and
# RMS(u) = ‖u‖/√size, so the ratio is RMS(x) / RMS(u).

# %%
summary_rows = []
for label, report in reports.items():
    adapted = report[report.adapted]
    summary_rows.append({
        "state": label, "median RMS(x)": (adapted.weight_norm / np.sqrt(adapted["size"])).median(),
        "median RMS(u)": (adapted.update_norm / np.sqrt(adapted["size"])).median(),
        "median ratio": adapted.trust_ratio.median(), "min ratio": adapted.trust_ratio.min(),
        "max ratio": adapted.trust_ratio.max()})
after = reports["after training"][reports["after training"].adapted]
after = after.assign(name=after.variable.map(short_variable_name)).sort_values("trust_ratio")
print("after training, smallest:",
      ", ".join(f"{n} {r:.3g}" for n, r in zip(after.name[:3], after.trust_ratio[:3])))
print("after training, largest: ",
      ", ".join(f"{n} {r:.3g}" for n, r in zip(after.name[-3:], after.trust_ratio[-3:])))
positions = first[first.variable.str.endswith("position_embeddings/embeddings")].iloc[0]
print(f"update 1, position embeddings: ratio {positions.trust_ratio:.4f} = "
      f"{positions.trust_ratio / (positions.weight_norm / np.sqrt(positions['size'])):.2f} × "
      f"RMS(x); only T = {T} of its max_position_embeddings = "
      f"{fresh.experiment.model.build_config().max_position_embeddings} rows get a gradient")
pd.DataFrame(summary_rows).set_index("state")

# %% [markdown]
# At update 1 every kernel's ratio is about the RMS of its weights, the initialiser's
# scale: the Adam direction $r = g/(|g|+\epsilon)$ is ±1 per element, so ‖u‖ ≈ √size.
# LAMB's first updates therefore move each element by about η·RMS(x), where Adam would
# move it by η. Two exceptions, both from the formula: the query and key kernels, whose gradients
# at initialisation are below ε (printed above), and the position table, most of whose
# rows get no gradient at all, have |r| < 1 there and a larger ratio.
#
# After training the weights have grown little (median RMS(x)), but the Adam direction
# has shrunk (median RMS(u) well below 1): once an element's gradient fluctuates from
# batch to batch, its momentum $\hat m$ (a mean) is much smaller than $\sqrt{\hat v}$
# (an RMS). So every ratio has grown, and they spread by how noisy each variable's
# gradient is and how far its weights have grown. Whatever the spread, LAMB keeps every
# variable's step at η‖x‖: one global η serves all of them.
#
# ### The schedule: linear warmup, then linear decay
#
# With peak rate $\eta_0$, W warmup steps, S decay steps, end rate $\eta_\text{end}$ and
# power p = 1, the rate of update number s (0-based), as in BERT's and MobileBERT's
# `create_optimizer`:
#
# $$\eta(s) = \begin{cases} \eta_0 \, s / W & s < W \\
#   (\eta_0 - \eta_\text{end}) \, (1 - \min(s, S)/S)^p + \eta_\text{end} & s \ge W \end{cases}$$
#
# (The MobileBERT paper gives no schedule for its teacher; the figure shows ours, the
# shape of BERT's.)

# %%
experiment = load_experiment(f"{model_dir}/experiment.yaml")
lr_section, steps = experiment.trainer.learning_rate, experiment.trainer.train_steps
schedule = WarmupPolynomialDecay(lr_section.peak, lr_section.decay_steps or steps,
                                 lr_section.warmup_steps, lr_section.end, lr_section.power)
W, S = schedule.warmup_steps, schedule.decay_steps
print(f"η0 = {lr_section.peak:g}, W = {W}, S = {S}, η_end = {lr_section.end:g}")
fig = training_viz.plot_lr_schedule(
    schedule, steps, path=runtime.figure_path("04_lr_schedule.png"),
    title=f"Teacher learning rate: warmup over {W} steps, linear decay over {S} (paper §4.1)")

# %%
assert float(schedule(0)) == 0.0
np.testing.assert_allclose(float(schedule(W // 2)), lr_section.peak * (W // 2) / W, rtol=1e-6)
np.testing.assert_allclose(float(schedule(W)), lr_section.peak * (1 - W / S), rtol=1e-6)
np.testing.assert_allclose(float(schedule(S)), lr_section.end, atol=1e-12)
scalars = read_scalars(f"{model_dir}/tensorboard")
logged = scalars[(scalars.split == "train") & (scalars.tag == "learning_rate")]
np.testing.assert_allclose(logged.value, [float(schedule(s - 1)) for s in logged.step],
                           rtol=1e-5, atol=1e-6 * lr_section.peak)       # float32 near η = 0
print(f"the {len(logged)} learning rates the run logged follow η(s) exactly")

# %% [markdown]
# (At s = W the rate drops from η0 to η0(1 − W/S), because the decay counts from
# step 0, exactly as the original code; the last line checks the run's own logged rates
# against the formula: update s is logged at step s + 1.)
#
# ## 4. Training the teacher
#
# The pipeline's `teacher` step trains the `tiny_teacher` preset (the laptop-scale
# IB-BERT: a few inverted-bottleneck blocks with LayerNorm + gelu, an intra-block width
# twice the inter-block one; its configuration is printed below) with
# `experiments/pretrain_tiny_teacher.yaml`, which holds the settings tuned for this
# budget (the learning-rate probes are noted in its comments). It ran (or was skipped, if
# finished) in section 3; the same command line:
#
# ```
# python -m mbert_lib reproduce --teacher trained --steps teacher --data-dir $MBERT_DATA_DIR \
#     --out runs/laptop-teacher-trained
# ```
#
# The wall time below is that of the pipeline run that trained this teacher. The 2 cores
# may have been shared with other jobs then: the median tokens/s says how fast it went,
# and a quiet machine is faster (see the comments in the yaml).

# %%
record = read_record(ctx.step_dir("teacher"))
done = json.loads((ctx.step_dir("teacher") / "training_done.json").read_text())
tokens_per_step = experiment.trainer.batch_size * T
throughput = scalars[(scalars.split == "train") & (scalars.tag == "tokens_per_second")].value
print(f"{steps} steps × {experiment.trainer.batch_size} sequences × {T} tokens = "
      f"{steps * tokens_per_step:,} tokens; the step took {record['seconds'] / 60:.1f} min "
      f"when it ran ({record['finished']}), median {throughput.median():,.0f} tokens/s "
      f"= {throughput.median() / tokens_per_step:.2f} steps/s")
seen = steps * experiment.trainer.batch_size
print(f"the run read {seen:,} examples of the {stats['examples']:,} the data step made "
      f"({seen / stats['examples']:.2f} passes over them)")
config = experiment.model.build_config()
print({k: getattr(config, k) for k in ("num_hidden_layers", "hidden_size",
                                       "intra_bottleneck_size", "num_attention_heads",
                                       "intermediate_size", "embedding_size", "vocab_size",
                                       "normalization_type", "hidden_act")})

# %% [markdown]
# ### Curves from the run's TensorBoard files
#
# The trainer writes its scalars with `tf.summary`; `read_scalars` reads the event
# files back (no `tensorboard` package needed). The context-free baselines, computed on
# the same held-out examples:
#
# * **unigram MLM**: predict every target from the training targets' frequencies alone
#   (accuracy: always the most frequent token; perplexity: $\exp(-\frac1M\sum\log
#   p(w))$ with add-one smoothing);
# * **majority NSP**: always the training set's more frequent label.
#
# The run evaluated the held-out split every `eval_interval` steps; the point at step 0
# is the fresh initialisation of section 3, evaluated here on the same examples. (The
# held-out split mixes both sources; what its NSP curve measures is taken apart below.)
#
# The figure reproduces no paper figure: the paper shows no curves (and reports no MLM or
# NSP metrics) for its teacher, so the baselines, not the paper, are the yardstick here.

# %%
counts = target_counts(train_arrays, tokenizer.vocab_size)                  # [V]
unigram = unigram_mlm_baseline(counts, eval_arrays)
majority = nsp_majority_baseline(train_arrays["next_sentence_labels"],
                                 eval_arrays["next_sentence_labels"])
print(f"unigram baseline predicts {tokenizer.vocab[unigram['predicted_id']]!r} everywhere")
baselines = {"mlm_accuracy": unigram["mlm_accuracy"], "perplexity": unigram["perplexity"],
             "nsp_accuracy": majority["nsp_accuracy"]}
initial = evaluate_pretrainer(fresh.model, eval_arrays)
at_init = pd.DataFrame([{"split": "eval", "tag": tag, "step": 0, "value": initial[tag]}
                        for tag in ("mlm_loss", "mlm_accuracy", "perplexity", "nsp_accuracy")])
curves = pd.concat([at_init, scalars]).sort_values(["split", "tag", "step"])
print(f"step 0 (fresh initialisation): MLM loss {initial['mlm_loss']:.2f} nats "
      f"(ln V = {np.log(tokenizer.vocab_size):.2f}), perplexity {initial['perplexity']:,.0f}")
fig = training_viz.plot_pretraining_curves(
    curves, baselines, path=runtime.figure_path("04_pretraining_curves.png"),
    title=f"Laptop IB-BERT teacher ({sources['corpus']}), {steps} steps × "
          f"{experiment.trainer.batch_size} × {T} tokens (paper §4.1)")

# %%
final = evaluate_pretrainer(trained.model, eval_arrays)      # every held-out example
heldout = pd.DataFrame([
    {"metric": "MLM accuracy", "teacher": final["mlm_accuracy"],
     "baseline": unigram["mlm_accuracy"], "baseline is": "unigram (most frequent token)"},
    {"metric": "MLM perplexity", "teacher": final["perplexity"],
     "baseline": unigram["perplexity"], "baseline is": "unigram distribution"},
    {"metric": "MLM loss (nats)", "teacher": final["mlm_loss"],
     "baseline": unigram["mlm_loss"], "baseline is": "unigram distribution"},
    {"metric": "NSP accuracy", "teacher": final["nsp_accuracy"],
     "baseline": majority["nsp_accuracy"], "baseline is": "majority class"},
])
print(f"held-out split: {int(final['examples'])} examples, {int(final['predictions'])} "
      "MLM targets")
print(f"teacher: MLM accuracy {final['mlm_accuracy']:.1%} vs unigram "
      f"{unigram['mlm_accuracy']:.1%} (×{final['mlm_accuracy'] / unigram['mlm_accuracy']:.1f}); "
      f"perplexity {final['perplexity']:.1f} vs {unigram['perplexity']:.1f}; "
      f"NSP accuracy {final['nsp_accuracy']:.1%} vs majority {majority['nsp_accuracy']:.1%}")
heldout

# %%
assert unigram["predictions"] == int(final["predictions"])        # the same masked positions
if int(done["eval"]["examples"]) == int(final["examples"]):        # the trainer saw them all
    for key in ("mlm_accuracy", "perplexity", "nsp_accuracy"):
        np.testing.assert_allclose(final[key], done["eval"][key], rtol=1e-4)
assert np.isfinite(final["mlm_loss"])
if not runtime.fast_mode():         # 30 smoke steps do not get there; the laptop run must
    assert final["mlm_loss"] < unigram["mlm_loss"]
    assert final["mlm_accuracy"] > 2 * unigram["mlm_accuracy"], "the teacher must beat unigram"

# %% [markdown]
# ### NSP, source by source
#
# The laptop corpus mixes WikiText articles with SST-2 *pseudo-documents* (shuffled
# review phrases, 100 per "document"): an SST-2 phrase's "next sentence" is an unrelated
# phrase, so NSP cannot be learned there, and on the mixed held-out split a random B is
# mostly recognisable by its *style* (most documents are SST-2), not its topic.
# `heldout_examples_by_source` rebuilds held-out examples from one source's held-out
# documents at a time (random B from another held-out document of the same source), so
# NSP on WikiText is measured as the real task. The accuracy on true (IsNext) and random
# (NotNext) segments separately shows *how* the teacher answers.

# %%
if data["source"] == "local":
    wikitext = load_pretraining_corpus("local", ctx.data_dir, include_sst2=False).documents
    groups = heldout_examples_by_source(data_dir, {"WikiText-2": wikitext}, rest="SST-2",
                                        dupe_factor=runtime.pick(5, 1))
else:
    groups = heldout_examples_by_source(data_dir, {}, rest=data["source"], dupe_factor=1)
groups["all held out (the eval split)"] = eval_arrays
rows = []
for name, arrays in groups.items():
    labels = arrays["next_sentence_labels"]                                  # [n]
    metrics = evaluate_pretrainer(trained.model, arrays)
    on_class = [evaluate_pretrainer(trained.model, {k: v[labels == c] for k, v in arrays.items()})
                ["nsp_accuracy"] for c in (0, 1)]                 # accuracy per true label
    rows.append({"held-out examples": name, "n": len(labels),
                 "NSP accuracy": metrics["nsp_accuracy"],
                 "NSP majority": nsp_majority_baseline(train_arrays["next_sentence_labels"],
                                                       labels)["nsp_accuracy"],
                 "NSP acc. on IsNext": on_class[0], "NSP acc. on NotNext": on_class[1],
                 "MLM accuracy": metrics["mlm_accuracy"],
                 "MLM unigram": unigram_mlm_baseline(counts, arrays)["mlm_accuracy"],
                 "perplexity": metrics["perplexity"]})
by_source = pd.DataFrame(rows)
by_source

# %%
whole = by_source.iloc[-1]
np.testing.assert_allclose(whole["MLM accuracy"], final["mlm_accuracy"], rtol=1e-6)
np.testing.assert_allclose(whole["NSP accuracy"], final["nsp_accuracy"], rtol=1e-6)
for _, row in by_source.iterrows():       # NSP error bars: binomial standard error
    share_next = np.mean(groups[row["held-out examples"]]["next_sentence_labels"] == 0)
    np.testing.assert_allclose(row["NSP accuracy"], share_next * row["NSP acc. on IsNext"]
                               + (1 - share_next) * row["NSP acc. on NotNext"], rtol=1e-6)
    print(f"{row['held-out examples']}: NSP {row['NSP accuracy']:.1%} ± "
          f"{np.sqrt(0.25 / row.n):.1%} (1 SE at 50%); says IsNext on "
          f"{row['NSP acc. on IsNext']:.0%} of true and {1 - row['NSP acc. on NotNext']:.0%} "
          f"of random next segments")

# %% [markdown]
# Read the NSP columns together. On the mixed split the teacher beats the majority
# class clearly; on WikiText alone it does not, because it answers IsNext to nearly every
# WikiText pair, true or random (the per-label accuracies above). In training, the random
# B of a WikiText A was usually an SST-2 phrase (the SST-2 pseudo-documents outnumber the
# articles, section 1), so "does B look like A's source?" won most NSP examples, and that
# shortcut is what this short run learned, not coherence. (NSP's weakness in general:
# ALBERT replaced it by sentence-order prediction because NSP can be solved by topic
# alone.) On SST-2, where B never continues A, NSP is unlearnable by construction. The
# standard errors are lower bounds: the per-source examples come from several passes over
# the same few held-out documents.
#
# ### The teacher fills in masks
#
# One held-out example: the targets, what the model read there, and its three best
# guesses.

# %%
name = next(iter(groups))
arrays = groups[name]
index = int(np.argmax(arrays["masked_lm_weights"].sum(1) >= min(P, 6)))
print(name, "example", index, ":", " ".join(example_table(arrays, index, tokenizer).input))
fill = fill_masks(trained.model, arrays, index, tokenizer)
print(f"{fill.correct.sum()} of {len(fill)} first guesses right")
fill

# %%
assert len(fill) == int((arrays["masked_lm_weights"][index] > 0).sum())
assert fill["p(original)"].between(0, 1).all()
assert (fill.original == example_table(arrays, index, tokenizer)
        .set_index("position").loc[fill.position, "original"].values).all()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. The teacher the project ships
#
# The teacher above is a lesson: minutes of pre-training, and still learning at its last
# step. A teacher worth distilling must know clearly more than a student can learn on
# its own in the students' budget, and at this scale that takes hours: the project
# ships one, `teachers/laptop_ibbert/`, made by one command,
#
# ```
# python -m mbert_lib teacher build --data-dir $MBERT_DATA_DIR
# ```
#
# the same `tiny_teacher` shape and recipe, pre-trained for many more steps on 40 fresh
# maskings of the text (`experiments/pretrain_shipped_teacher.yaml`). Its directory
# holds float16 weights, its own WordPiece vocabulary and its record: the command, the
# settings, the data's fingerprints, the ids of every document it trained on, the
# hardware, the wall time and its held-out curve. Below, that curve beside this run's.
# (On the offline corpus the two teachers read different text: the shipped one was
# trained on WikiText-2 and SST-2, so its curve is not comparable to this run's there.)

# %%
shipped = json.loads((REPO_ROOT / "teachers" / "laptop_ibbert" / "teacher.json").read_text())
trained_s = shipped["training"]
print(f"shipped teacher: {trained_s['train_steps']:,} steps × "
      f"{shipped['experiment']['trainer']['batch_size']} sequences, "
      f"{trained_s['wall_seconds'] / 3600:.1f} h on {trained_s['hardware']}; "
      f"held-out MLM accuracy {shipped['heldout']['float16']['mlm_accuracy']:.1%} as shipped "
      f"(float16), {shipped['heldout']['float32']['mlm_accuracy']:.1%} in float32")
print(f"this run's teacher: {steps:,} steps, held-out MLM accuracy {final['mlm_accuracy']:.1%}")
shipped_curve = pd.DataFrame(shipped["heldout"]["curve"])           # step, mlm_accuracy, ...
own_curve = scalar_series(scalars, "eval", "mlm_accuracy")
fig = training_viz.plot_teacher_curves(
    {f"shipped teacher ({trained_s['train_steps']:,} steps, WikiText-2 + SST-2)":
         shipped_curve.set_index("step")["mlm_accuracy"],
     f"this run's teacher ({steps:,} steps, {sources['corpus']})": own_curve},
    title="Held-out MLM accuracy of the laptop IB-BERT teacher (not in the paper)",
    path=runtime.figure_path("04_shipped_teacher.png"))

# %%
assert shipped["tokenizer"]["vocab_size"] == shipped["experiment"]["data"]["vocab_size"]
assert abs(shipped["heldout"]["float16"]["mlm_accuracy"]
           - shipped["heldout"]["float32"]["mlm_accuracy"]) < 0.005   # float16 costs < 0.5 pt
assert shipped_curve.step.is_monotonic_increasing and len(shipped_curve) >= 3

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Paper scale vs ours
#
# `experiments/pretrain_ibbert_large.yaml` holds the paper's teacher recipe
# (`paper.TEACHER_PRETRAINING`: steps, batch, LAMB, TPU chips; sequence length 512 from
# the released code; the paper gives no learning rate for the teacher, so the yaml uses
# the pre-training distillation schedule of the released code, labelled as such).
# `pretraining_compute` counts tokens and training FLOPs (≈ 3 × forward: encoder matmuls
# from `anatomy.flops` plus the MLM head on the P targets) for both. The parameter count
# includes the MLM and NSP heads; the paper's Table 1 count is printed beside it.

# %%
paper_scale = load_experiment(REPO_ROOT / "experiments" / "pretrain_ibbert_large.yaml")
numbers = pd.DataFrame({"paper IB-BERT_LARGE": pretraining_compute(paper_scale),
                        "ours (laptop)": pretraining_compute(experiment)})
numbers["paper / ours"] = numbers.iloc[:, 0] / numbers.iloc[:, 1]
compute = numbers.map(lambda x: f"{x:,.0f}" if x < 1e9 else f"{x:.3g}").astype(object)
compute.loc["params, paper Table 1"] = [f"{paper.TABLE1['ibbert_large']['params_m']:g}M", "", ""]
compute.loc["hardware"] = [paper.TEACHER_PRETRAINING["hardware"], "2 CPU cores (shared)", ""]
compute.loc["wall time"] = ["not stated", f"{record['seconds'] / 60:.1f} min", ""]
compute

# %%
assert paper_scale.trainer.train_steps == paper.TEACHER_PRETRAINING["steps"]
assert paper_scale.trainer.batch_size == paper.TEACHER_PRETRAINING["batch_size"]
assert numbers.loc["tokens", "paper IB-BERT_LARGE"] == (
    paper_scale.trainer.train_steps * paper_scale.trainer.batch_size * paper_scale.data.seq_length)
print(f"the paper's teacher used {numbers.loc['train_flops', 'paper / ours']:.2e}× our "
      f"training compute ({numbers.loc['tokens', 'paper / ours']:.2e}× the tokens, "
      f"{numbers.loc['params', 'paper / ours']:.0f}× the parameters)")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# The run's key numbers, gathered from the cells above:

# %%
key_numbers = {
    "corpus (this run)": f"{sources['corpus']}: {files.words.sum():,} words, "
                         f"{files.words.sum() / paper_words:.4%} of the paper's",
    "builtin (offline) corpus": f"{builtin.num_words:,} words",
    "WordPiece vocabulary V": f"{tokenizer.vocab_size:,}",
    "training examples": f"{stats['examples']:,} (T = {T}, P = {P})",
    "training": f"{steps} steps × {experiment.trainer.batch_size} sequences, "
                f"{record['seconds'] / 60:.1f} min, median {throughput.median():,.0f} tokens/s",
    "held-out MLM accuracy (unigram)": f"{final['mlm_accuracy']:.1%} "
                                       f"({unigram['mlm_accuracy']:.1%})",
    "held-out perplexity (unigram)": f"{final['perplexity']:.1f} ({unigram['perplexity']:.1f})",
    "held-out NSP accuracy (majority)": f"{final['nsp_accuracy']:.1%} "
                                        f"({majority['nsp_accuracy']:.1%})",
    **{f"NSP accuracy, {row['held-out examples']} (majority)":
       f"{row['NSP accuracy']:.1%} ({row['NSP majority']:.1%}), n = {row.n}"
       for _, row in by_source.iloc[:-1].iterrows()},
    "paper / ours, training FLOPs": f"{numbers.loc['train_flops', 'paper / ours']:.2e}",
}
pd.Series(key_numbers, name="value").to_frame()

# %% [markdown]
# * **Data.** The laptop corpus (WikiText-2 valid + test and the SST-2 training
#   sentences) is a tiny fraction of the paper's BooksCorpus + Wikipedia; the offline
#   builtin corpus (Python's docstrings) lets everything run without `../shared`. A
#   deterministic WordPiece vocabulary is learned on the training documents only; the
#   held-out documents never enter pre-training.
# * **Examples.** BERT's recipe is reproduced and checked on every training example: 15%
#   of the maskable tokens are targets, 80/10/10 [MASK]/random/kept, NSP 50/50, each
#   within a few standard errors.
# * **LAMB.** Every layer-adapted variable moves by η·‖x‖, whatever its gradient's scale;
#   the trust ratios at initialisation (≈ RMS of the weights) and after training are in
#   `figures/04_lamb_trust_ratios.png`; the warmup + linear decay schedule, checked
#   against the rates the run logged, in `figures/04_lr_schedule.png`.
# * **The teacher.** Its held-out MLM accuracy and perplexity beat the context-free
#   unigram baseline by the margins above (curves: `figures/04_pretraining_curves.png`),
#   on both sources. Its NSP accuracy on the mixed split is a source-style shortcut: on
#   WikiText alone it answers IsNext almost always. For the distillation notebooks that
#   follow, the MLM distribution and the hidden states are what matter.
# * **Scale.** The paper's teacher used many orders of magnitude more training compute
#   than ours (the ratio is printed above): the laptop teacher is a stand-in that
#   lets the distillation notebooks (05, 06) run on real text, not a reproduction of
#   IB-BERT_LARGE's accuracy.
#
# ## Exercises
#
# Worked solutions: `solutions/04_teacher_ibbert_solutions.ipynb`.
#
# 1. Train the teacher with `trainer.optimizer.type=adamw` (LAMB without the trust
#    ratio) at a few peak rates: `python -m mbert_lib pretrain --config_file
#    experiments/pretrain_tiny_teacher.yaml --params_override
#    trainer.optimizer.type=adamw,trainer.learning_rate.peak=1e-3 --model_dir runs/adamw`
#    (add `data.source=local,data.data_dir=$MBERT_DATA_DIR` to read the text used here).
#    Which rate comes closest to LAMB's? Relate it to the trust ratios at update 1.
#    *Hint: LAMB moves every element by about η·‖x‖/‖u‖ per step and Adam by about η, so
#    the AdamW rate that matches LAMB is LAMB's η times a typical trust ratio; read the
#    ratios at update 1 first.*
# 2. In `reports["after training"]`, which variables have the largest and the smallest
#    trust ratios? Why do the rows of the word-embedding table behave differently from
#    the block kernels? (A row gets an input-side gradient only when its token occurs in
#    the batch; the table is also the MLM output layer, so every row gets a small
#    output-side gradient.)
#    *Hint: split the table's gradient, its LAMB direction u and its weights x by rows
#    whose token is in the batch and rows whose token is not.*
# 3. Masking is static: each pass over the text (`dupe_factor`) gets fresh masks, and
#    this run sees fewer examples than the data step made. Retrain with
#    `data.dupe_factor=1`, so the model sees each masked example several times. How do
#    training and held-out MLM loss diverge? (RoBERTa's *dynamic* masking answers it.)
#    *Hint: at a short budget, shrink the pool of examples instead, so that the short run
#    also sees each one many times; compare the same text with fixed masks against the
#    same text with fresh masks each pass.*
# 4. The unigram baseline ignores context. Write a bigram baseline (predict a target
#    from the token before it, when that one is not masked) and place it between unigram
#    and the teacher in the held-out table.
#    *Hint: count (previous token, target) pairs over the training targets whose previous
#    input token is not a target itself; back off to the unigram distribution for unseen
#    or masked contexts.*
