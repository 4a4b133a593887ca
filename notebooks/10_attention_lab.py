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
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # 10 · The attention lab: when the attention map is the knowledge
#
# > "[Attention transfer] … we minimize the KL-divergence between the per-head
# > self-attention distributions of the MobileBERT and IB-BERT"
# > (Sun et al., ACL 2020, section 3.5, eq. 2)
#
# On WikiText-2 at laptop scale (notebooks 05 and 06) the student copies the teacher's
# maps, but the maps are mostly positional smears: nobody can say what the copied
# pattern *does*, and a student trained without AT ends about as good. This notebook
# builds the case where attention transfer exists for: a small generated language whose
# masked tokens can only be found by attending to one position, a teacher whose head
# implements that rule, and five students with equal budgets.
#
# 1. **The task** (induction, Olsson et al. 2022): "… A B … A [MASK]" → B.
# 2. **The models**: a small IB-BERT teacher, small MobileBERT students.
# 3. **Attention transfer**: the equation, by hand and in the library.
# 4. **The lab**: PKT, AT only, FMT only, copy only and no transfer, 3 seeds each,
#    compared seed by seed.
# 5. **The plateau and its escape** on the training curves.
# 6. **The maps**: the teacher's rule head against the students, measured as the
#    attention mass on the rule's target.
#
# Everything comes from one pipeline recipe, `python -m mbert_lib reproduce --recipe
# attention_lab --out DIR` (`DIR/attention_lab.json`); this notebook reads the run in
# `runs/attention_lab` and trains it first when it is missing. In fast mode (CI) a tiny
# lab runs every piece and learns nothing, so the numbers printed then mean nothing.
#
# Shapes: n examples, T positions, P predictions per example, V vocabulary, L layers,
# N heads, H hidden width.

# %%
import mbert_lib  # noqa: F401  (selects tf-keras before TensorFlow is imported)
import numpy as np
import pandas as pd
from IPython.display import display

from mbert_lib import hardware
from mbert_lib.data.structured_task import symbol, task_documents, task_tokenizer
from mbert_lib.distill import losses
from mbert_lib.lab.data import make_examples
from mbert_lib.lab.measure import evaluate
from mbert_lib.lab.variants import LABELS, VARIANT_SPECS, VARIANTS
from mbert_lib.lab.run import lab_models
from mbert_lib.lab.settings import student_config, teacher_config
from mbert_lib.paired import paired_difference
from mbert_lib.pipeline.steps_lab import notebook_lab, notebook_lab_dir
from mbert_lib.runtime import fast_mode, figure_path
from mbert_lib.viz import lab as lab_viz
from mbert_lib.viz.attention_explorer import AttentionExplorer, explore

pd.set_option("display.width", 200)
pd.set_option("display.precision", 3)
print("fast mode" if fast_mode() else "full mode", "| hardware:", hardware.describe())

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · The task: induction
#
# A document is one sentence of symbols `s000 … s031`: a short random lead, then a
# pattern of $m$ distinct symbols ($3 \le m \le 8$, drawn per document) repeated to the
# end. From the second period on every token obeys the **induction rule**: find the
# previous occurrence of the token on my left, read the token after it.
#
# $$x_p = x_{j+1}, \qquad j = \max\{\, i < p - 1 : x_i = x_{p-1} \,\}$$
#
# The documents go through the same MLM + NSP writer as WikiText (15 % → here 25 % of
# the tokens masked, 80/10/10). A prediction is **structured** when the rule solves it
# from what the model sees: the token was corrupted, its left neighbour is visible, and
# the rule's target $j + 1$ is visible and holds the answer. Chance on a structured
# prediction is $1/32$: no position, frequency or neighbour alone gives the answer.

# %%
summary = notebook_lab(log=lambda line: None)  # trains runs/attention_lab if missing (minutes)
settings, models = lab_models(notebook_lab_dir())
task = settings.task
tokenizer = task_tokenizer(task)
for document in task_documents(task, 3, seed=0):
    print(document[0])
print(f"{task.num_symbols} symbols, T = {task.seq_length}, chance {summary['chance']:.1%}")

# %% [markdown]
# The rule in a few lines of numpy, on the dev examples the lab measures: for each
# structured prediction, the last earlier visible occurrence of the left neighbour, plus
# one. The library's `structured_positions` (which also decides *which* predictions are
# structured) must agree.

# %%
dev = make_examples(settings, "dev")
a = dev.arrays
ids = a["input_word_ids"]  # [n, T] what the model sees
original = ids.copy()  # [n, T] before masking: the writer's answers put back
n_i, k_i = np.nonzero(a["masked_lm_weights"] > 0)
original[n_i, a["masked_lm_positions"][n_i, k_i]] = a["masked_lm_ids"][n_i, k_i]
uncorrupted = ids == original
rows, slots = np.nonzero(a["structured"] > 0)  # every structured prediction
by_hand = []
for r, k in zip(rows, slots):
    p = a["masked_lm_positions"][r, k]  # the masked position
    left = ids[r, p - 1]  # the token on its left, visible
    earlier = np.nonzero(uncorrupted[r, : p - 1] & (ids[r, : p - 1] == left))[0]
    by_hand.append(earlier[-1] + 1)  # the token after its previous occurrence
by_hand = np.array(by_hand)
answers = ids[rows, by_hand]
assert (by_hand == a["rule_target"][rows, slots]).all()
assert (answers == a["masked_lm_ids"][rows, slots]).all()  # the target holds the answer
share = len(rows) / (a["masked_lm_weights"] > 0).sum()
print(f"{len(dev)} dev examples, {len(rows)} structured predictions ({share:.0%} of all)")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · The teacher and the students
#
# Both have two blocks and two heads, H = 64 and the task's 37-token vocabulary. The
# teacher has IB-BERT's shape (LayerNorm, gelu, one wide FFN, an inverted bottleneck of
# 128); the students have MobileBERT's (NoNorm, relu, four stacked FFNs, a bottleneck of
# 32). MobileBERT's trigram embedding hands every position its neighbours' tokens
# before the first block, so one attention layer can implement the rule: the query at
# $p$ carries $x_{p-1}$, the key at $j+1$ carries $x_j$, and they match.

# %%
sizes = pd.DataFrame(
    {
        name: {
            "parameters": models[key].count_params(),
            "intra-block width": config.intra_bottleneck_size,
            "FFNs per block": config.num_feedforward_networks,
            "normalisation": config.normalization_type,
            "activation": config.hidden_act,
        }
        for name, key, config in [
            ("teacher", "teacher", teacher_config(settings)),
            ("student", "pkt", student_config(settings)),
        ]
    }
)
display(sizes)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · Attention transfer (paper eq. 2)
#
# For layer $\ell$, with $a^{tr}_{t,\ell,a}$ and $a^{st}_{t,\ell,a}$ the teacher's and
# the student's attention distributions of query token $t$ in head $a$ (over the keys),
#
# $$\mathcal{L}^{\ell}_{AT} = \frac{1}{TA} \sum_{t=1}^{T} \sum_{a=1}^{A}
#   D_{KL}\!\left(a^{tr}_{t,\ell,a} \,\middle\|\, a^{st}_{t,\ell,a}\right),$$
#
# averaged here over the real (unpadded) query tokens. The library's
# `losses.attention_transfer` against the same KL written out in numpy, on a batch of
# dev examples, teacher against the student before transfer:

# %%
batch = dev.inputs(slice(0, 16))
t_probs = models["teacher"](batch, training=False)["attention_scores"][1].numpy()  # [n, N, T, T]
s_probs = models["before transfer"](batch, training=False)["attention_scores"][1].numpy()
real = batch["input_mask"].astype(bool)  # [n, T] real query tokens
with np.errstate(divide="ignore", invalid="ignore"):  # padded keys: 0 · log 0 = 0
    terms = np.where(t_probs > 0, t_probs * (np.log(t_probs) - np.log(s_probs)), 0.0)
kl = terms.sum(-1)  # [n, N, T]: one KL per query row
by_hand = kl.transpose(0, 2, 1)[real].mean()  # over real queries and heads
library = float(losses.attention_transfer(t_probs, s_probs, batch["input_mask"]))
print(f"AT, layer 1: numpy {by_hand:.5f}, library {library:.5f}")
np.testing.assert_allclose(library, by_hand, rtol=1e-4, atol=1e-6)  # float32 sums

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · The lab: five students, equal updates, paired seeds
#
# Every student makes the same number of updates on the same batches for its seed, and
# every seed starts all five from the same initial weights
# (`mbert_lib/lab/variants.py`):
#
# | student | stages |
# |---|---|
# | PKT | copy the embedding and MLM head; per layer FMT + AT; then PD + AT |
# | AT only | copy; per layer AT; then PD + AT |
# | FMT only | copy; per layer FMT; then PD |
# | copy only | copy; then MLM + NSP |
# | no transfer | MLM + NSP from a random start |
#
# In layer $\ell$'s stage only block $\ell$ trains, as in the paper's progressive
# transfer. PD is $\tfrac12$ MLM + $\tfrac12$ KD on the teacher's MLM distribution
# (eq. 3). FMT is tf-models' three terms (weights 100, 5000, 5) and AT weighs 100, as in
# the laptop pipeline's recipe. The five variants as weights, one compiled step serving
# all five (NSP always weighs 1):

# %%
display(
    pd.DataFrame(
        {
            LABELS[v]: {
                **{f"layer {k}": w for k, w in VARIANT_SPECS[v].layer_weights(settings.at_weight).items()},
                **{f"final {k}": w for k, w in VARIANT_SPECS[v].final_weights(settings.at_weight).items()},
                "copy": VARIANT_SPECS[v].copy,
            }
            for v in VARIANTS
        }
    ).T
)
s = summary["settings"]
print(
    f"{s['student_steps']} updates per student ({s['num_layers']} × {s['layer_steps']} "
    f"layer-wise + {s['student_steps'] - s['num_layers'] * s['layer_steps']} final, or all "
    f"{s['student_steps']} in one stage), batch {s['batch_size']}, peak rate "
    f"{s['student_learning_rate']:g}; teacher: {summary['teacher']['steps']} steps"
)

# %% [markdown]
# Structured accuracy on the held-out documents, one column per seed:

# %%
accuracy = pd.DataFrame(
    {LABELS[v]: summary["students"][v] for v in VARIANTS}, index=pd.Index(
        range(len(summary["students"]["pkt"])), name="seed")
).T * 100
accuracy["mean"] = accuracy.mean(axis=1)
accuracy.loc["teacher", "mean"] = 100 * summary["teacher"]["structured_accuracy"]
display(accuracy.round(1).astype(object).where(accuracy.notna(), ""))

# %% [markdown]
# Each student with AT against each without, seed by seed: the mean difference, its
# standard error and 95 % interval (t over the seeds, `mbert_lib.paired`). The lab's
# aims: the teacher ≥ 95 %, the AT students ≥ 90 %, the students without AT ≤ 60 %, and
# every gap beyond two standard errors.

# %%
comparisons = []
for name, d in summary["paired"].items():
    a_name, b_name = name.split(" - ")
    again = paired_difference(summary["students"][a_name], summary["students"][b_name])
    assert abs(again.mean - d["mean"]) < 1e-12  # the record's pairing, recomputed
    comparisons.append({"comparison": f"{LABELS[a_name]} − {LABELS[b_name]}",
                 "difference (points)": 100 * d["mean"], "2 SE": 200 * d["se"],
                 "95 % interval": again.describe(scale=100, digits=1),
                 "beyond 2 SE": summary["targets"]["gaps_beyond_2se"][name]})
display(pd.DataFrame(comparisons).set_index("comparison").round(1))
targets = summary["targets"]
for key in ("teacher", "with_at", "without_at"):
    print(f"aim {key}: {targets[key]['aim']:.0%} -> {'met' if targets[key]['met'] else 'NOT met'}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5 · The plateau and its escape
#
# The left panel is the teacher learning the task with MLM alone: it sits at chance for
# hundreds of updates, then finds the rule and climbs. On the right, seed 0 of every
# student. The layer-wise stages train no output, so the AT students stay at chance
# until the final stage, then jump: their attention already points at the right key.
# The student without transfer never leaves the plateau in its budget; copying the
# embedding (copy only) or matching the features (FMT only) helps partly.

# %%
fig = lab_viz.plot_curves(summary, figure_path("10_lab_curves.png"))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6 · The maps: the teacher's rule head and the students'
#
# The lab measures, for every layer and head, the mean attention probability a
# structured query puts on the rule's target $j + 1$. The teacher's head with the
# largest mass is its **rule head**:

# %%
per_head = {
    name: np.array(summary["rule_attention_mass_per_head"][key]).round(3).tolist()
    for name, key in [("teacher", "teacher"), ("before transfer", "before_transfer")]
    + [(LABELS[v], v) for v in VARIANTS]
}
display(pd.DataFrame(per_head, index=pd.Index(range(settings.num_layers), name="layer")).T
        .rename(columns=lambda l: f"layer {l} (heads 0, 1)"))
head = summary["rule_head"]
print(f"rule head: layer {head['layer']}, head {head['head']}; its mass: teacher "
      f"{summary['rule_attention_mass']['teacher']:.3f}")

# %% [markdown]
# One structured prediction of the dev set, the rule head's map in the teacher and in
# seed 0 of three students: before transfer, after AT (the AT-only student) and without
# AT (no transfer). The prediction is chosen as typical, not best: among the structured
# predictions whose input is `[MASK]`, the one where the teacher's mass on the target is
# the median. The white row is its query, the red column the rule's target.

# %%
L, H = head["layer"], head["head"]
teacher_maps = models["teacher"](dev.inputs(), training=False)["attention_scores"][L][:, H].numpy()
masked = ids[rows, a["masked_lm_positions"][rows, slots]] == tokenizer.mask_id
queries = a["masked_lm_positions"][rows, slots]  # [structured predictions]
mass = teacher_maps[rows, queries, a["rule_target"][rows, slots]]
typical = np.nonzero(masked)[0][np.argsort(mass[masked])[masked.sum() // 2]]
example, query = int(rows[typical]), int(queries[typical])
target = int(a["rule_target"][example, slots[typical]])
one = dev.inputs(slice(example, example + 1))
real = int(one["input_mask"][0].sum())  # padding cut off
tokens = [tokenizer.vocab[i] for i in one["input_word_ids"][0][:real]]
shown = {"teacher": "teacher", "before AT": "before transfer", "after AT (AT only)": "at_only",
         "without AT (no transfer)": "no_transfer"}
maps = {name: models[key](one, training=False)["attention_scores"][L][0, H].numpy()[:real, :real]
        for name, key in shown.items()}
print(f"example {example}: query {query} ({tokens[query]}), left neighbour "
      f"{tokens[query - 1]}, its previous occurrence at {target - 1}, target {target} "
      f"({tokens[target]}, the answer {tokenizer.vocab[a['masked_lm_ids'][example, slots[typical]]]})")
fig = lab_viz.plot_rule_maps(
    maps, tokens, query, target,
    f"The teacher's rule head (layer {L}, head {H}) on a typical structured prediction",
    figure_path("10_rule_head_maps.png"))

# %% [markdown]
# Measured over every structured prediction of the dev set, per seed:

# %%
fig = lab_viz.plot_rule_mass(summary, figure_path("10_rule_attention_mass.png"))

# %% [markdown]
# ### Sanity checks
#
# The kept models give back the record's numbers; the maps are distributions; the
# rule head is the teacher's largest mass.

# %%
again = evaluate(models["pkt"], dev)
assert again["structured_accuracy"] == summary["students"]["pkt"][0]
assert abs(again["rule_attention_mass"][L][H] - summary["rule_attention_mass"]["pkt"][0]) < 1e-4
for values in maps.values():  # padding keys get no attention: real rows still sum to 1
    np.testing.assert_allclose(values.sum(-1), 1.0, atol=1e-5)
np.testing.assert_allclose(maps["teacher"][query, target], mass[typical], rtol=1e-5)
teacher_mass = np.array(summary["rule_attention_mass_per_head"]["teacher"])
assert teacher_mass[L, H] == teacher_mass.max()
assert all(0 <= x <= 1 for v in VARIANTS for x in summary["students"][v])
print("checks passed")

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Explore
#
# `AttentionExplorer.from_lab` opens the lab in the attention explorer of notebook 05:
# type a sequence of symbols, pick a layer, head and student; the per-layer bars show
# the student before transfer as a dashed reference.

# %%
explorer = AttentionExplorer.from_lab(notebook_lab_dir())
pattern = " ".join(symbol(i) for i in (7, 19, 3, 25, 11))
explore(explorer, f"{symbol(2)} {pattern} {pattern} {pattern}", layer=L, head=H,
        snapshot="AT only")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# * On the induction task the teacher's second-layer head **implements an algorithm**:
#   a structured query puts its attention on the rule's target, the position after the
#   previous occurrence of its left neighbour.
# * Students get that head through AT: their mass on the target moves from the
#   untrained level towards the teacher's, and they leave the plateau as soon as the
#   final stage trains their outputs. Without AT, the student stays on the plateau with
#   the same updates, and its head is not untrained but sharpened onto a single key.
# * Features and outputs alone help only in part: FMT only and copy only end far below
#   the AT students, every paired gap beyond two standard errors.
# * At this scale the contrast belongs to the recipe and to the machine: at a faster
#   rate the copy-only student finds the rule by itself, and so it did on two seeds of
#   three on a machine with AVX-512, where the same recipe trained another teacher
#   (`docs/attention_lab.md`, "The same recipe on other hardware"). What held on every
#   machine tried: AT students far above FMT only, the untaught student at chance.
# * Read the numbers in the tables above; the record is `attention_lab.json`, and
#   `docs/attention_lab.md` lists every setting tried on the way.
# * Figures: `figures/10_lab_curves.png` (the plateau and its escape),
#   `10_rule_head_maps.png` (the rule head, teacher against students),
#   `10_rule_attention_mass.png` (the mass on the target, per seed).
#
# ## Exercises
#
# Worked solutions: `solutions/10_attention_lab_solutions.ipynb`.
#
# 1. **Does the map survive without AT in the final stage?** Train an AT-only student
#    whose final stage is PD alone (`Variant(True, ("at",), True, False)`) and measure its
#    rule-head mass and accuracy against the lab's AT-only student.
#    *Hint: `mbert_lib.lab.run.train_student` looks the variant up in
#    `variants.VARIANT_SPECS`; add one under a new name for the run.*
# 2. **What does "untrained" attend to?** Before transfer the rule head's mass on the
#    target is small but not zero. Predict it from the masks alone, assuming every
#    query spreads its attention evenly over the example's real tokens, and compare
#    with the measured value. Which students end *below* that level, and what does it
#    say about where their attention went?
#    *Hint: for each structured prediction the even share is 1 / (its example's number
#    of real tokens); `rule_attention_mass_per_head` holds the measured values.*
# 3. **How long is the plateau?** Give the student without transfer 2× and 4× the
#    budget. When does it leave chance, and how does that compare with the teacher's
#    own plateau in section 5?
#    *Hint: `student_steps` is one of the lab's settings; a new value keeps the teacher.*
