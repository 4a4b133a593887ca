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

# %% [markdown]
# # 06 · Transfer strategies and objective ablations (paper Tables 8 and 9)
#
# *Paper section 3.6 (Figure 2) and section 4.6 (Tables 8 and 9).*
#
# Notebook 05 ran progressive knowledge transfer. The paper compares it with two other
# ways of using the same layer-wise losses (Figure 2):
#
# * **auxiliary knowledge transfer (AKT)**: all layer-wise losses and the pre-training
#   distillation loss in *one* combined loss, trained together from the start;
# * **joint knowledge transfer (JKT)**: all layer-wise losses together in one stage,
#   then pre-training distillation;
# * **progressive knowledge transfer (PKT)**: one layer per stage, then pre-training
#   distillation.
#
# The paper finds (paraphrased) that progressive transfer does best, joint transfer comes
# close, and auxiliary transfer lags clearly, since layer-wise knowledge mixed into the
# pre-training loss from the start is not what the student needs in the end: it needs a
# separate pre-training distillation stage to adapt (Table 8).
# Table 9 then removes parts of the objective: feature-map transfer (FMT) contributes
# most, attention transfer (AT) and pre-training distillation (PD) help further.
#
# Here every row is a run of the laptop pair (`tiny_teacher` → `tiny_student`) by the
# pipeline, **with the same number of student updates** (the rows without layer-wise
# stages spend them all in PD). **What is compared differs from the paper:** the paper
# reports GLUE dev scores after fine-tuning; our rows are compared by *held-out masked-LM
# accuracy, perplexity and NSP accuracy* on the held-out split of the pre-training
# corpus, and by SST-2 dev accuracy after fine-tuning; each row over three pre-training
# seeds.
# The paper's values are printed beside ours, marked ≈ where they are not confirmed
# (`mbert_lib.paper`). Figure: `figures/06_strategies_and_ablations.png`.

# %%
import math

import numpy as np
import pandas as pd
from IPython.display import display

from mbert_lib import paper, runtime
from mbert_lib.distill.analysis import learning_rate_budget
from mbert_lib.distill.trainer import read_run
from mbert_lib.pipeline import ensure, notebook_context
from mbert_lib.viz import transfer as transfer_viz

pd.set_option("display.width", 180)
pd.set_option("display.precision", 4)
print("fast mode:", runtime.fast_mode())

# %% [markdown]
# ## 1. The runs
#
# One pipeline step per row (`mbert_lib/pipeline/steps_distill.py`); each writes a model
# directory and records its held-out metrics. On a fresh checkout `ensure` trains them
# after the teacher (the minutes each took on our 2 shared CPU cores are in the table);
# when they are done, it only reads their records.

# %%
ROWS = {   # step -> (table, row label as in the paper)
    "akt": ("Table 8", "AKT"), "jkt": ("Table 8", "JKT"), "pkt": ("Table 8", "PKT"),
    "no_transfer": ("Table 9", "no transfer"),
    "ablation_copy": ("Table 9", "+copied embedding and MLM head"),
    "ablation_pd": ("Table 9", "+PD"),
    "ablation_pd_fmt": ("Table 9", "+PD+FMT"),
    "ablation_fmt_at": ("extra", "FMT+AT, no PD"),
}
ctx = notebook_context()
results = ensure(list(ROWS), ctx)
teacher = ctx.result("teacher")
runs = pd.DataFrame([
    {"step": step, "table": table, "row": row, "strategy": r["strategy"],
     "student steps": r["train_steps"],
     "minutes": sum(s["seconds"] for s in r["stages"]) / 60,
     **{k: r["eval"][k] for k in ("mlm_accuracy", "perplexity", "nsp_accuracy")},
     "predictions": r["eval"]["predictions"], "examples": r["eval"]["examples"]}
    for step, (table, row) in ROWS.items() for r in [results[step]]]).set_index("step")
runs

# %%
budget = runs.loc[runs.table != "extra", "student steps"]
assert budget.nunique() == 1, budget                 # equal compute: the same student steps
assert runs[["mlm_accuracy", "nsp_accuracy"]].apply(lambda c: c.between(0, 1)).all().all()
assert (runs["perplexity"] > 1).all()
print(f"{runs.minutes.sum():.0f} minutes of training in all; "
      f"every Table 8/9 row made {int(budget.iloc[0])} student updates; the teacher: "
      f"MLM accuracy {teacher['eval']['mlm_accuracy']:.4f}, perplexity "
      f"{teacher['eval']['perplexity']:.1f}, NSP accuracy {teacher['eval']['nsp_accuracy']:.4f}")

# %% [markdown]
# ## 2. Seeds: how much do the rows move by chance?
#
# Two kinds of noise sit in every number above. The *measurement*: an accuracy p measured
# on n held-out predictions has a standard error $\sqrt{p(1-p)/n}$. The *training*: the
# student's initialisation, its dropout and the order of its batches depend on
# `trainer.seed`, and a run with another seed lands elsewhere. The pipeline's optional
# `distill_seeds` step (`mbert_lib/pipeline/steps_seeds.py`) trains every row again with
# seeds 1 and 2 (seed 0 is the row's own step above), with the same teacher, data and
# number of updates, and fine-tunes each seed's student once on the task. It doubles the
# transfer time (77 minutes here, on a machine shared with other jobs), so a full
# `reproduce` leaves it out, and on a fresh checkout the next cell trains what is missing:
#
#     python -m mbert_lib reproduce --data-dir ../shared/data --steps distill_seeds,report
#
# Per row, over its $n$ seeds: the mean $\bar p$ and the sample standard deviation
# $s = \sqrt{\tfrac{1}{n-1}\sum_k (p_k - \bar p)^2}$.

# %%
seeded = ensure(["distill_seeds"], ctx)["distill_seeds"]
per_seed = pd.DataFrame([
    {"step": step, "row": ROWS[step][1], "seed": seed, **e, "downstream": d}
    for step, entry in seeded["rows"].items()
    for seed, e, d in zip(entry["seeds"], entry["eval"], entry["downstream"])])
seed_stats = per_seed.groupby("step").agg(
    seeds=("seed", "count"), mlm_mean=("mlm_accuracy", "mean"), mlm_std=("mlm_accuracy", "std"),
    ppl_mean=("perplexity", "mean"), nsp_mean=("nsp_accuracy", "mean"),
    downstream_mean=("downstream", "mean"), downstream_std=("downstream", "std"))
runs = runs.join(seed_stats)
runs["mlm_accuracy_se"] = np.sqrt(runs.mlm_accuracy * (1 - runs.mlm_accuracy) / runs.predictions)
print(f"{int(runs.seeds.min())} pre-training seeds per row; held-out: "
      f"{int(runs.predictions.iloc[0]):,} masked predictions. MLM accuracy, in points: "
      f"measurement standard error ≈ {100 * runs.mlm_accuracy_se.mean():.2f}, seed-to-seed "
      f"standard deviation {100 * runs.mlm_std.min():.2f} to {100 * runs.mlm_std.max():.2f}")
per_seed.pivot(index="row", columns="seed", values="mlm_accuracy").mul(100).round(2)

# %%
for step, entry in seeded["rows"].items():       # seed 0 is the row's own run, unchanged
    assert entry["seeds"][0] == 0 and entry["eval"][0]["mlm_accuracy"] == runs.loc[
        step, "mlm_accuracy"], step
    assert len(set(entry["train_steps"])) == 1, step                   # equal compute per seed
    values = np.array([e["mlm_accuracy"] for e in entry["eval"]])
    assert np.isclose(runs.loc[step, "mlm_std"], values.std(ddof=1))    # pandas std = ddof 1
assert set(seeded["rows"]) == set(ROWS)


# %% [markdown]
# ## 3. Table 8: AKT vs JKT vs PKT
#
# The paper's GLUE dev accuracies (and SQuAD v1.1 F1) beside our held-out metrics, as
# mean (and std) over the pre-training seeds. Only the MNLI-m column of the paper's
# Tables 8 and 9 is confirmed; every other cell is recalled (≈), and Table 8's PKT row has
# no recalled cell beyond MNLI-m (Table 9's last row is a different run: LayerNorm + gelu,
# half the PD schedule).

# %%
def paper_table(table: dict) -> pd.DataFrame:
    return pd.DataFrame({row: {task: str(v) for task, v in cells.items()}
                         for row, cells in table.items()}).T


def paper_cell(paper_rows: dict, row: str, task: str) -> float:
    cell = paper_rows.get(row, {}).get(task)
    return math.nan if cell is None else cell.value


def side_by_side(table: str, paper_rows: dict) -> pd.DataFrame:
    ours = runs[runs.table == table].set_index("row")
    frame = ours[["seeds", "mlm_mean", "mlm_std", "ppl_mean", "nsp_mean", "downstream_mean",
                  "downstream_std"]].copy()
    frame.insert(0, "paper: MNLI-m dev", [paper_cell(paper_rows, r, "MNLI-m")
                                          for r in frame.index])
    frame.insert(1, "paper: SST-2 dev (≈)", [paper_cell(paper_rows, r, "SST-2")
                                             for r in frame.index])
    return frame


print("paper, Table 8:", paper.TABLE8_FINDING)
display(paper_table(paper.TABLE8))
table8 = side_by_side("Table 8", paper.TABLE8)
table8

# %%
t8 = table8["mlm_mean"]
print(f"ours, mean over seeds: PKT − JKT = {100 * (t8['PKT'] - t8['JKT']):+.2f} points of "
      f"held-out MLM accuracy, PKT − AKT = {100 * (t8['PKT'] - t8['AKT']):+.2f}, JKT − AKT = "
      f"{100 * (t8['JKT'] - t8['AKT']):+.2f} (seed std {100 * table8['mlm_std'].min():.2f} to "
      f"{100 * table8['mlm_std'].max():.2f} points)")
order = list(t8.sort_values(ascending=False).index)
print("ours, best to worst by mean MLM accuracy:", " > ".join(order),
      "| the paper: PKT > JKT > AKT")

# %% [markdown]
# ## 4. Table 9: which objective contributes what
#
# The paper's rows add the objectives one by one: no knowledge transfer (MLM + NSP
# pre-training only), + PD, + PD + FMT, + PD + FMT + AT (= PKT, the full recipe). PD
# brings two things, the teacher's embedding and MLM head copied into the student and
# the teacher's MLM distribution in the loss; our row "+copied embedding and MLM head"
# adds the first alone, so that each row differs from the one above it in exactly one
# thing. Our extra row drops PD instead (PKT's layer-wise stages only, with fewer student updates:
# not in the paper, and not on the same budget).

# %%
runs.loc["pkt_as_table9"] = runs.loc["pkt"]
runs.loc["pkt_as_table9", ["table", "row"]] = ["Table 9", "+PD+FMT+AT"]
print("paper, Table 9:", paper.TABLE9_FINDING)
display(paper_table(paper.TABLE9))
TABLE9_ORDER = ["no transfer", "+copied embedding and MLM head", "+PD", "+PD+FMT", "+PD+FMT+AT"]
table9 = side_by_side("Table 9", paper.TABLE9).loc[TABLE9_ORDER]
table9

# %%
t9 = table9["mlm_mean"]
steps = list(zip(TABLE9_ORDER[1:], TABLE9_ORDER[:-1]))
gains = pd.DataFrame([{"added": f"{new} vs {old}",
                       "paper (MNLI-m dev, points)": paper_cell(paper.TABLE9, new, "MNLI-m")
                       - paper_cell(paper.TABLE9, old, "MNLI-m"),
                       "ours (MLM accuracy, points)": 100 * (t9[new] - t9[old]),
                       "ours (SST-2 dev, points)": 100 * (table9.loc[new, "downstream_mean"]
                                                          - table9.loc[old, "downstream_mean"])}
                      for new, old in steps]).set_index("added")
gains

# %%
extra = runs.loc["ablation_fmt_at"]
print(f"FMT+AT without PD: MLM accuracy {extra.mlm_mean:.4f} ± {extra.mlm_std:.4f} over seeds, "
      f"perplexity {extra.ppl_mean:.1f} (the MLM head is still the teacher's copy; "
      f"{int(extra['student steps'])} student updates)")
assert [r for r in table9.index if r in paper.TABLE9] == list(paper.TABLE9)

# %% [markdown]
# **The paper's claims, checked one by one.** For each comparison the paper makes, our
# difference of the seed means, in held-out MLM accuracy and in SST-2 dev accuracy, with
# twice the standard error of a difference of two means over $n$ seeds each,
# $2\sqrt{(s_a^2 + s_b^2)/n}$. A difference inside that band is "within noise". With
# three seeds the band is itself uncertain (a rough guide, not a test at a stated level).

# %%
claims = [("Table 8", "PKT", "JKT"), ("Table 8", "JKT", "AKT"), ("Table 8", "PKT", "AKT"),
          ("Table 9", "+PD", "no transfer"), ("Table 9", "+PD+FMT", "+PD"),
          ("Table 9", "+PD+FMT+AT", "+PD+FMT")]
frames = {"Table 8": table8, "Table 9": table9}


def verdict(diff: float, band: float) -> str:
    return "agrees" if diff > band else "disagrees" if diff < -band else "within noise"


checks = []
for table, better, worse in claims:
    a, b = frames[table].loc[better], frames[table].loc[worse]
    row = {"table": table, "paper: better": better, "than": worse}
    for measure, mean, std in [("MLM", "mlm_mean", "mlm_std"),
                               ("SST-2", "downstream_mean", "downstream_std")]:
        diff = a[mean] - b[mean]
        band = 2 * math.sqrt((a[std] ** 2 + b[std] ** 2) / min(a.seeds, b.seeds))
        row.update({f"ours: Δ {measure} (points)": round(100 * diff, 2),
                    f"2 s.e. {measure} (points)": round(100 * band, 2),
                    f"{measure} verdict": verdict(diff, band)})
    checks.append(row)
checks = pd.DataFrame(checks)
print("held-out MLM:", checks["MLM verdict"].value_counts().to_dict(), "| SST-2 dev:",
      checks["SST-2 verdict"].value_counts().to_dict())
checks

# %%
assert len(checks) == 6
assert set(checks["MLM verdict"]) | set(checks["SST-2 verdict"]) <= {
    "agrees", "disagrees", "within noise"}

# %% [markdown]
# ## 5. The figure: paper vs ours
#
# Paper Tables 8 and 9 (left: the paper's MNLI-m dev accuracy, the column confirmed
# from its tables) beside ours (right: held-out MLM accuracy, mean ± one standard deviation over the
# pre-training seeds). Dots, each axis zoomed to its own rows: compare orderings and gaps,
# not levels (the two measures differ).

# %%
fig_tables = []
for title, table, paper_rows in [("Table 8", table8, paper.TABLE8),
                                 ("Table 9", table9, paper.TABLE9)]:
    fig_tables.append((title, pd.DataFrame({
        "paper": table["paper: MNLI-m dev"],
        "ours": 100 * table["mlm_mean"],
        "ours_err": 100 * table["mlm_std"]})))
fig = transfer_viz.plot_paper_vs_ours(
    fig_tables, ours_label=f"held-out MLM acc. (%), mean ± std, {int(runs.seeds.min())} seeds",
    paper_label="paper MNLI-m dev accuracy (%)",
    path=runtime.figure_path("06_strategies_and_ablations.png"))

# %% [markdown]
# ## 6. How close does each strategy bring the layers to the teacher?
#
# Every row's seed-0 run was also measured layer by layer on the held-out split: the plain
# feature MSE (eq. 1) and the attention KL (eq. 2) of each student layer against its
# teacher layer. AKT trains these terms together with PD from the start; PKT and JKT
# train them first and then let PD move the layers again; the rows without layer-wise
# transfer never train them.

# %%
layer_cols = sorted({k for r in results.values() for k in r["eval"] if k.startswith("layer_")})
per_layer = pd.DataFrame({ROWS[step][1]: {k: results[step]["eval"][k] for k in layer_cols}
                          for step in ROWS}).T
at = per_layer[[c for c in layer_cols if c.endswith("/at")]]
fmt = per_layer[[c for c in layer_cols if c.endswith("/fmt_paper_mse")]]
at.columns = [c.split("/")[0] for c in at.columns]
fmt.columns = [c.split("/")[0] for c in fmt.columns]
print("attention KL(teacher ‖ student) per layer")
display(at.round(4))
print("plain feature MSE (paper eq. 1) per layer")
display(fmt.round(4))

# %% [markdown]
# Equal *updates* are not equal *movement*. Notebook 05 showed that with LAMB a stage of
# steps with rates $\eta_t$ can grow a weight matrix by at most $e^{\sum_t \eta_t}$, so
# $\sum_t \eta_t$ is the budget a block has for the layer-wise losses. Per row, the mean
# over blocks of $\sum_t r\,\eta_t$ (r: the block's rate multiplier) in stages whose loss
# has FMT / AT terms, and in stages with PD only (`learning_rate_budget`, from each run's
# own stage plan):

# %%
budgets = {}
for step, (_, row) in ROWS.items():
    run_experiment, run_stages = read_run(results[step]["model_dir"])
    layers = run_experiment.student.build_config().num_hidden_layers
    budgets[row] = learning_rate_budget(run_stages, layers).mean()
closeness = pd.concat([pd.DataFrame(budgets).T.add_prefix("Σ η, "),
                       at.mean(axis=1).rename("mean AT over layers"),
                       fmt.mean(axis=1).rename("mean feature MSE over layers")], axis=1)
ranks = closeness.rank()                       # Spearman = Pearson correlation of the ranks
print("rank correlation over the rows: layer-wise Σ η vs mean AT "
      f"{ranks['Σ η, layer-wise'].corr(ranks['mean AT over layers']):+.2f}, vs mean feature "
      f"MSE {ranks['Σ η, layer-wise'].corr(ranks['mean feature MSE over layers']):+.2f}")
closeness.round(4)

# %%
assert (closeness.filter(like="Σ η").to_numpy() >= 0).all()
assert closeness.loc[["no transfer", "+PD"], "Σ η, layer-wise"].eq(0).all()
assert (at.to_numpy() >= 0).all() and (fmt.to_numpy() >= 0).all()

# %% [markdown]
# ## 7. Downstream: fine-tuned dev accuracy of every row
#
# The paper's Tables 8 and 9 are GLUE dev scores after fine-tuning. The `distill_seeds`
# step fine-tuned each row's student of each pre-training seed once (fine-tuning seed 0,
# the settings of notebook 07), so the spread below is mostly pre-training spread. The
# table reads that record; it fine-tunes nothing itself.

# %%
print(f"task {seeded['task']} (source: {seeded['source']}); one fine-tuning run per "
      "pre-training seed")
downstream = per_seed.pivot(index="row", columns="seed", values="downstream").mul(100)
downstream["mean"], downstream["std"] = downstream.mean(axis=1), downstream.std(axis=1)
paper_rows = {**paper.TABLE8, **paper.TABLE9}
downstream["paper SST-2 dev (≈)"] = [paper_cell(paper_rows, r, "SST-2")
                                    for r in downstream.index]
downstream = downstream.loc[[ROWS[s][1] for s in ROWS]]
print("ours, by mean dev accuracy:", " > ".join(downstream["mean"].sort_values(
    ascending=False).index))
downstream.round(2)

# %%
assert np.allclose(downstream["mean"], 100 * runs.loc[list(ROWS), "downstream_mean"].to_numpy())

# %% [markdown]
# ## Discussion: where the laptop scale and the paper can disagree
#
# First, what our rows say, in numbers:

# %%
best = {name: closeness[column].idxmin() for name, column in
        [("attention", "mean AT over layers"), ("features", "mean feature MSE over layers")]}
print(f"ours, Table 8 by mean MLM accuracy: {' > '.join(order)} (paper: PKT > JKT > AKT)")
for measure in ("MLM", "SST-2"):
    print(f"verdicts on the paper's six claims by {measure}: "
          + ", ".join(f"{k} {v}" for k, v in checks[f"{measure} verdict"].value_counts().items()))
print(f"closest to the teacher, layer by layer (seed 0): {best['attention']} (attention), "
      f"{best['features']} (features); largest layer-wise Σ η: "
      f"{closeness['Σ η, layer-wise'].idxmax()}")
with_at, without_at = table9.loc["+PD+FMT+AT"], table9.loc["+PD+FMT"]
print(f"with and without AT, means over seeds: MLM accuracy {with_at.mlm_mean:.4f} vs "
      f"{without_at.mlm_mean:.4f}, perplexity {with_at.ppl_mean:.2f} vs "
      f"{without_at.ppl_mean:.2f}; mean AT over layers (seed 0) "
      f"{closeness.loc['PKT', 'mean AT over layers']:.4f} vs "
      f"{closeness.loc['+PD+FMT', 'mean AT over layers']:.4f}")
print(f"the teacher's held-out MLM accuracy {teacher['eval']['mlm_accuracy']:.4f}; the best "
      f"student's mean {runs.mlm_mean.max():.4f} ({runs.row[runs.mlm_mean.idxmax()]})")

# %% [markdown]
# The paper trains a 24-layer student for 24 × 10k layer-wise steps and 500k PD steps at
# batch 2048; our rows make the number of updates printed in section 1, at batch 32, from
# a teacher trained for minutes. What that means for the tables above:
#
# * **The budget.** Every row makes the same number of updates, but not the same
#   layer-wise movement (section 6): AKT runs *all* its updates on the layer-wise terms,
#   at PD's higher rate; JKT runs the layer-wise part of the budget on all layers at
#   once; PKT gives each layer a quarter of it. Notebook 05 showed that at these budgets
#   LAMB cannot move the weights far enough to sharpen the student's near-uniform
#   attention or widen its features to the teacher's, so the row with the most
#   layer-wise Σ η can come closest to the teacher, whatever the strategy. At the paper's
#   scale every strategy has ample budget and the comparison is about *how* the layers
#   are trained, which is what Table 8 measures.
# * **Attention transfer has nothing to act on yet.** With PKT's 75-step stages the
#   student's attention stays near uniform (notebook 05, section 7), so the rows with and
#   without AT end up nearly the same model (printed above): Table 9's last gain cannot
#   show at this budget, in either direction.
# * **The measure.** Held-out MLM accuracy is what PD optimises directly, so it rewards
#   PD updates; layer-wise transfer is meant to pay off through intermediate
#   representations, which section 6 measures and downstream fine-tuning (section 7)
#   tests. The paper's Tables 8 and 9 are GLUE scores after fine-tuning on four tasks;
#   ours is one task (SST-2, a 4,000-sentence subsample, 2 epochs).
# * **The teacher.** Our teacher is itself weak (its held-out MLM accuracy is printed
#   above), and the distilled students start from its embedding and MLM head; at this
#   scale a student can match or pass it on the pre-training objective.
# * **The noise.** Three pre-training seeds per row give a rough band, not a test at a
#   stated level; the paper's values marked ≈ are recalled, not confirmed. A claim
#   "within noise" here is neither confirmed nor contradicted at this scale.
#
# ## Summary
#
# * Every Table 8 / 9 row ran on the laptop pair with the same number of student updates,
#   each a step of the resumable pipeline with its own model directory (the minutes each
#   took are in section 1), and again with two more pre-training seeds (`distill_seeds`).
# * Table 8 (AKT / JKT / PKT) and Table 9 (no transfer, +PD, +PD+FMT, +PD+FMT+AT) are
#   printed as mean and std over the seeds beside the paper's values (≈: recalled, not
#   confirmed) and drawn in `figures/06_strategies_and_ablations.png`; each of the
#   paper's claims is checked against the seed-to-seed spread, by held-out MLM accuracy
#   and by fine-tuned SST-2 dev accuracy (section 4).
# * Section 6 measures what the layer-wise objectives bought, layer by layer, and the
#   learning-rate budget each row gave them; section 7 gives every row's SST-2 dev
#   accuracy over its pre-training seeds.
#
# ## Exercises
#
# 1. Add seeds 3 and 4 (`distill_seeds.seeds` in `mbert_lib/pipeline/steps_seeds.py`,
#    or a new output directory via `reproduce --out`). Do the verdicts of section 4
#    change? How does the 2 s.e. band shrink with n?
# 2. Give PKT the layer-wise budget AKT had: raise `distillation.layer_wise.steps` or the
#    layer-wise learning rate until `learning_rate_budget` matches, keeping the PD
#    stage. Does PKT's per-layer distance to the teacher, and its MLM accuracy, change?
# 3. The "no transfer" row does not copy the teacher's embedding. Add a row that copies
#    it but uses α = 1 (no KD): how much of "+PD" is the copied embedding?
# 4. Section 7 fine-tunes each pre-training seed once. Fine-tune one seed's PKT student
#    with three fine-tuning seeds (`python -m mbert_lib finetune`): how much of the
#    downstream spread is fine-tuning noise rather than pre-training noise?
