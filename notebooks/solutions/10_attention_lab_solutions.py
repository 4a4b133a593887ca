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
# # 10 · The attention lab: worked solutions (instructor copy)
#
# Worked answers to the exercises of `notebooks/10_attention_lab.ipynb`. Every number
# below is computed when the notebook runs; the prose reads the printed values of the
# committed full run. The lab in `runs/attention_lab` is read (and trained when
# missing); exercises 1 and 3 train new students against its teacher, on the same
# batches and from the same initial weights as the lab's seed 0. Fast mode (CI) runs
# the same code on the tiny lab, whose numbers mean nothing.
#
# Shapes: n examples, T positions, P predictions, L layers, N heads.

# %%
import mbert_lib  # noqa: F401  (selects tf-keras before TensorFlow is imported)
import dataclasses

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display

from mbert_lib import hardware
from mbert_lib.lab import variants
from mbert_lib.lab.data import make_examples
from mbert_lib.lab.loop import StageRunner
from mbert_lib.lab.run import built_model, lab_models, train_student
from mbert_lib.lab.settings import student_config
from mbert_lib.pipeline.steps_lab import notebook_lab, notebook_lab_dir
from mbert_lib.runtime import fast_mode, figure_path
from mbert_lib.viz import style

print("fast mode" if fast_mode() else "full mode", "| hardware:", hardware.describe())
summary = notebook_lab(log=lambda line: None)
settings, models = lab_models(notebook_lab_dir())
teacher = models["teacher"]
layer, head = summary["rule_head"]["layer"], summary["rule_head"]["head"]
dev = make_examples(settings, "dev")
train = make_examples(settings, "train")
train = dataclasses.replace(  # the teacher's outputs the students read, as the lab makes them
    train,
    arrays={**train.arrays,
            **variants.teacher_targets(teacher, train.arrays, settings.num_layers)})
student = built_model(student_config(settings), settings.task.seq_length)
runner = StageRunner(student, train.arrays, settings.jit_compile)


def run(variant, lab_settings=settings):
    """Seed 0 of `variant` (a key of variants.VARIANT_SPECS), as the lab trains it."""
    return train_student(variant, 0, teacher, student, runner, lab_settings, train, dev)


# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 1 · Does the map survive without AT in the final stage?
#
# The lab's AT-only student keeps AT as a term of its final stage (PD + AT). Here the
# same layer-wise stages are followed by PD alone.

# %%
variants.VARIANT_SPECS["at_then_pd"] = variants.Variant(
    copy=True, layer_terms=("at",), distill=True, final_at=False)
without = run("at_then_pd")
lab = {"structured_accuracy": summary["students"]["at_only"][0],
       "mass": summary["rule_attention_mass"]["at_only"][0]}
ex1 = pd.DataFrame({
    "AT only (final PD + AT, the lab's)": lab,
    "AT, then PD alone": {"structured_accuracy": without["structured_accuracy"],
                          "mass": without["rule_attention_mass"][layer][head]},
    "teacher": {"structured_accuracy": summary["teacher"]["structured_accuracy"],
                "mass": summary["rule_attention_mass"]["teacher"]},
}).T.rename(columns={"mass": f"rule-head mass (layer {layer}, head {head})"})
display(ex1.round(3))

# %% [markdown]
# **Answer** (full run, seed 0). The map fades without AT in the final stage: the rule
# head's mass falls from 0.38 (the lab's AT-only student) to 0.30 against the teacher's
# 0.42, and structured accuracy from 94.9 % to 78.9 %. The layer-wise stages put the
# map in place; PD alone, free to move it, pulls it partly away while it trains the
# outputs. This is why the lab (and the laptop pipeline) keep AT as a term during PD:
# "AT transfers the map" holds for the finished student only if the last stage keeps
# it. One seed: a claim about the size of the drop would need the three.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 2 · What does "untrained" attend to?
#
# If every query spread its attention evenly over its example's real tokens, a
# structured query would put 1 / (real tokens) on its target. Averaged over the
# structured predictions of the dev set:

# %%
a = dev.arrays
rows, _ = np.nonzero(a["structured"] > 0)
real_tokens = a["input_mask"].sum(1)[rows]  # [structured predictions]
even = float(np.mean(1.0 / real_tokens))
measured = pd.DataFrame({
    name: np.array(summary["rule_attention_mass_per_head"][key])[layer]
    for name, key in [("before transfer", "before_transfer")]
    + [(variants.LABELS[v], v) for v in variants.VARIANTS]
}, index=[f"head {h}" for h in range(settings.num_heads)]).T
measured["below even"] = measured[f"head {head}"] < 0.9 * even  # 10 % below
print(f"even attention: {even:.4f} on the target (1 / real tokens, mean over "
      f"{len(rows)} structured predictions)")
display(measured.round(4))
assert abs(measured.loc["before transfer", f"head {head}"] - even) < 0.05 or fast_mode()

# %% [markdown]
# **Answer** (full run). Before transfer the rule head's mass is the even share, 0.032:
# an untrained MobileBERT's attention is uniform to three digits (small initial weights
# give near-equal scores). The student without transfer ends *below* it (0.012 in both
# heads of layer 1): its attention is not untrained but sharpened elsewhere; notebook
# 10's map shows every query of that head on a single key. Copy only (0.10) and FMT only
# (0.19) moved some attention towards the target, the AT students most (0.35–0.38).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 3 · How long is the plateau?
#
# The student without transfer, seed 0, with 2× and 4× the lab's budget (a new student
# budget keeps the teacher and the initial weights).

# %%
longer = {}
for factor in (1, 2, 4):
    budget = dataclasses.replace(settings, student_steps=factor * settings.student_steps)
    longer[factor] = (summary["curves"]["no_transfer"] if factor == 1
                      else run("no_transfer", budget)["curve"])


def escape(curve, level):
    """The first update at which the curve reaches `level`, or None."""
    above = [step for step, accuracy in curve if accuracy >= level]
    return above[0] if above else None


level = 0.5
teacher_escape = escape(summary["teacher"]["curve"], level)
display(pd.DataFrame({
    f"{factor}× ({factor * settings.student_steps} updates)": {
        "final structured accuracy": curve[-1][1],
        f"first update ≥ {level:.0%}": escape(curve, level) or "never"}
    for factor, curve in longer.items()}).T)
print(f"teacher: first update ≥ {level:.0%} at {teacher_escape} of {summary['teacher']['steps']}")

style.apply()
fig, ax = plt.subplots(figsize=(10, 4.5), layout="constrained")
steps, accuracy = np.array(summary["teacher"]["curve"]).T
ax.plot(steps, 100 * accuracy, color="black", lw=2.5, label="teacher")
for factor, curve in longer.items():
    steps, accuracy = np.array(curve).T
    ax.plot(steps, 100 * accuracy, lw=2, label=f"no transfer, {factor}× budget")
ax.axhline(100 * summary["chance"], color=style.GREY, ls="--", label="chance")
ax.set_xlabel("update")
ax.set_ylabel("structured accuracy (%)")
ax.set_title("The plateau without transfer, against the teacher's own")
ax.legend()
style.save(fig, figure_path("10_solutions_plateau.png"))

# %% [markdown]
# **Answer** (full run). The student without transfer does not leave the plateau in 4×
# the lab's budget (4,800 updates, 3.3 % at the end): the teacher, with its wider block,
# LayerNorm and gelu, first passes 50 % at update 850 of its 3,000. So the lab's
# contrast does not rest on a budget cut just short of the escape; on the other hand,
# a faster rate lets the copy-only student escape within the budget
# (`docs/attention_lab.md`, search row 07), so "never" is a statement about this recipe.
