# ---
# jupyter:
#   jupytext:
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
# # 11 · Beyond the paper: pruning and quantization-aware training of the student
#
# The paper compresses BERT in three ways: distillation into a thin, deep student,
# operational optimizations (NoNorm, relu) and post-training int8 (notebook 09). A
# compression course teaches two more, and this notebook applies both to the same
# fine-tuned student, with TensorFlow Model Optimization (tfmot) doing what it does:
#
# 1. **Pruning.** Magnitude pruning zeroes the smallest weights while fine-tuning goes
#    on; structured pruning removes whole FFN units, so the matrices get smaller.
# 2. **Quantization-aware training (QAT).** Fine-tuning through the rounding the int8
#    model will do, so that the weights learn to sit on the grid.
#
# It ends, as a compression lab should, with one table and one figure: size, accuracy and
# latency of every method, each accuracy paired seed by seed with the dense student's.
#
# Everything comes from the pipeline's optional `compress` step
# (`python -m mbert_lib reproduce --data-dir DATA --steps compress`): the PKT student
# fine-tuned on SST-2, dense and compressed, three seeds each, every file run through
# the LiteRT interpreter. `docs/compression.md` describes the recipe and its record.
#
# Shapes: B batch, T tokens, w the block's inner width, I the FFN's units, L blocks,
# F FFNs per block; a kernel W is [in, out].

# %%
import warnings

import mbert_lib  # noqa: F401  (selects tf-keras before TensorFlow is imported)
import numpy as np
import pandas as pd
import tensorflow as tf
from IPython.display import display

from mbert_lib import hardware
from mbert_lib.checkpoints import load_classifier, load_encoder
from mbert_lib.compress import pruning, qat, structured
from mbert_lib.compress.size import gzip_bytes
from mbert_lib.export import layer_error
from mbert_lib.export.interpreter import TFLiteModel
from mbert_lib.export.representative import representative_dataset
from mbert_lib.models import build_encoder
from mbert_lib.pipeline import ensure, notebook_context
from mbert_lib.pipeline.steps_compress import run_directory, run_task
from mbert_lib.pipeline.steps_export import calibration_features
from mbert_lib.quiet_start import native_stderr_silenced
from mbert_lib.runtime import fast_mode, figure_path, shown_path
from mbert_lib.tables.compress import compression_table, sensitivity_table
from mbert_lib.viz import compress as compress_viz

pd.set_option("display.width", 220)
tf.get_logger().setLevel("ERROR")  # no "Assets written to ..." lines from the converter
# the converter's int8 calibrator still runs on tf.lite.Interpreter; the files run on LiteRT
warnings.filterwarnings("ignore", message=".*tf.lite.Interpreter is deprecated")
ctx = notebook_context()
print("fast mode" if fast_mode() else "full mode", "| pipeline output:", shown_path(ctx.out_dir),
      "| data:", ctx.data_dir or "builtin (offline default)")
print("hardware:", hardware.describe())

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · The step and its settings
#
# `ensure` runs the `compress` step unless it is done (then it reads its record). Every
# compressed run shares its seed's head initialization, data order and number of steps
# with the dense run, so the accuracy difference is paired seed by seed.

# %%
RESULT = ensure(["compress"], ctx)["compress"]
SETTINGS = ctx.settings["compress"]
ROWS = {row["method"]: row for row in RESULT["rows"]}
print(f"task {RESULT['task']} ({RESULT['source']}), T = {RESULT['seq_length']}, "
      f"student {RESULT['model']}, seeds {RESULT['seeds']}, {RESULT['steps']} steps per run")
print("methods:", list(ROWS))
if RESULT["task"] != "sst2":
    print("\nNOTE: no GLUE data directory (MBERT_DATA_DIR): the classifiers were fine-tuned on "
          "the OFFLINE stand-in task, not SST-2; their accuracies say nothing about SST-2.")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · Magnitude pruning
#
# In each pruned kernel W (the blocks' bottlenecks, attention projections and FFNs)
# magnitude pruning keeps the entries of largest magnitude and zeroes the fraction s of
# smallest ones:
#
# $$M_{ij} = \mathbb{1}\big[\,|W_{ij}| > \tau_s(W)\,\big], \qquad W \leftarrow W \odot M,$$
#
# with $\tau_s(W)$ the s-quantile of $|W|$. tfmot computes the masks; below, one block of
# the dense fine-tuned student is pruned once by tfmot (`prune_once`) and the result is
# checked against a NumPy ranking of the same kernel.

# %%
dense_dir = run_directory(ctx, "sparsity_0", 0)
classifier = load_classifier(dense_dir)
owner, name = pruning.pruning_targets(classifier, block=0)[-1]  # the block's last kernel
kernel = getattr(owner, name).kernel.numpy()                      # [in, out]
pruning.prune_once(classifier, 0.75, block=0)                     # tfmot's masks, once
pruned_kernel = getattr(owner, name).kernel.numpy()
mask = pruning.magnitude_mask(kernel, 0.75)                       # NumPy: |W| above its 75 % quantile
print(f"kernel {getattr(owner, name).kernel.name}: {list(kernel.shape)}, "
      f"zeros after tfmot {np.mean(pruned_kernel == 0):.3f}")
np.testing.assert_array_equal(pruned_kernel, kernel * mask)

# %% [markdown] slideshow={"slide_type": "slide"}
# ### The schedule
#
# Pruned at once, a trained model loses what the zeroed weights did. tfmot raises s
# gradually while fine-tuning continues, so the rest of the network can take over.
# Its polynomial decay goes from $s_0$ at step $t_0$ to $s_f$ at step $t_1$, the masks
# recomputed every few steps:
#
# $$s(t) = s_f + (s_0 - s_f)\left(1 - \frac{t - t_0}{t_1 - t_0}\right)^3 .$$
#
# Early steps remove many small weights; the last steps before $t_1$ remove few. After
# $t_1$ the run recovers at the final sparsity.

# %%
final = max(SETTINGS["sparsities"])
schedule = pruning.Schedule(
    final=final,
    begin=round(SETTINGS["prune"]["begin_fraction"] * RESULT["steps"]),
    end=round(SETTINGS["prune"]["end_fraction"] * RESULT["steps"]),
    frequency=SETTINGS["prune"]["frequency"],
)
tfmot_schedule = schedule.tfmot()
for t in (schedule.begin, (schedule.begin + schedule.end) // 2, schedule.end):
    _, s = tfmot_schedule(tf.constant(t, tf.int64))
    print(f"step {t:5d}: tfmot {float(s):.4f}, closed form {schedule.sparsity_at(t):.4f}")
    assert abs(float(s) - schedule.sparsity_at(t)) < 1e-6
fig = compress_viz.plot_schedule(schedule, RESULT["steps"], figure_path("11_pruning_schedule.png"))

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Where the zeros pay
#
# A pruned kernel keeps its shape: the .tflite file has the same bytes, and LiteRT runs
# the same dense matmuls (XNNPACK's sparse kernels are for convolutions). The zeros pay
# only once the file is compressed, as tfmot's guide measures it (gzip). And pruning
# reaches only the blocks' kernels: the embedding tables, most of a small student's
# weights, stay dense.

# %%
params = RESULT["params"]
print(f"parameters: {params['total']:,}; the blocks' kernels (pruned) "
      f"{params['pruned_kernels']:,} = {params['pruned_kernels'] / params['total']:.0%}; "
      f"the embeddings {params['embeddings']:,} = {params['embeddings'] / params['total']:.0%}")
pruned_dir = run_directory(ctx, f"sparsity_{round(100 * final)}", 0)
sparse = pruning.kernel_sparsity(load_classifier(pruned_dir))
print(f"prune_{round(100 * final)}, seed 0: {len(sparse)} kernels, zeros per kernel "
      f"{min(sparse.values()):.3f} to {max(sparse.values()):.3f}")
for method in ("fp32", f"prune_{round(100 * final)}"):
    row = ROWS[method]
    print(f"{method:10s} .tflite {row['bytes'] / 1e6:.2f} MB, gzip {row['gzip_bytes'] / 1e6:.2f} MB")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · Sensitivity: which block can lose its weights?
#
# The scan prunes one block of the dense student at a time, once and without training,
# and measures the dev accuracy; "all" prunes every block at once. Each cell is the mean
# over the seeds of
#
# $$\Delta_l(s) = \mathrm{acc}\big(\text{block } l \text{ pruned to } s\big) - \mathrm{acc}(\text{dense}).$$
#
# It tells where the weights matter, and why the schedule above exists: the "all" row is
# what pruning without fine-tuning costs.

# %%
display(sensitivity_table(RESULT))
fig = compress_viz.plot_sensitivity(RESULT, figure_path("11_sensitivity.png"))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · Structured pruning: whole FFN units
#
# A feed-forward network is a sum over its I units; unit j is column j of $W_1$ and row
# j of $W_2$:
#
# $$\mathrm{FFN}(h) = \sum_{j=1}^{I} W_2[j,:]\;\mathrm{act}\big(W_1[:,j]\cdot h + b_1[j]\big) + b_2 .$$
#
# Removing a unit removes one term, and shrinks $W_1$ to [w, I − 1] and $W_2$ to
# [I − 1, w]. Each FFN keeps its units of highest score
#
# $$\mathrm{score}_j = \big(\lVert W_1[:,j]\rVert_2 + |b_1[j]|\big)\,\lVert W_2[j,:]\rVert_2,$$
#
# a bound on what the unit adds for an input of unit norm (relu: $|\mathrm{act}(a)| \le |a|$).
# tfmot prunes weights, not units, so `mbert_lib.compress.structured` does this by hand,
# on the pre-trained student, before fine-tuning.

# %%
encoder = load_encoder(ctx.result(RESULT["model"])["model_dir"])  # the pre-trained student
ffn = structured.feed_forwards(encoder)[0]                                  # block 0, FFN 0
w1, b1 = ffn.intermediate.kernel.numpy(), ffn.intermediate.bias.numpy()  # [w, I], [I]
w2 = ffn.output_dense.kernel.numpy()                                # [I, w]
scores = (np.linalg.norm(w1, axis=0) + np.abs(b1)) * np.linalg.norm(w2, axis=1)  # [I]
np.testing.assert_allclose(structured.unit_scores(ffn), scores, rtol=1e-6)
fraction = SETTINGS["ffn_units"][0]
smaller = structured.prune_ffn_units(encoder, fraction, build_encoder)
print(f"FFN units per FFN: {encoder.config.intermediate_size} -> "
      f"{smaller.config.intermediate_size}; W_1 {list(w1.shape)} -> "
      f"{list(structured.feed_forwards(smaller)[0].intermediate.kernel.shape)}")
print(f"score of the units kept / dropped in this FFN: median "
      f"{np.median(np.sort(scores)[-smaller.config.intermediate_size:]):.3f} / "
      f"{np.median(np.sort(scores)[:-smaller.config.intermediate_size]):.3f}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5 · Quantization-aware training
#
# Full-integer int8 stores every tensor x as 8-bit integers on a grid over its range
# [a, b]. QAT puts that rounding into training: each quantized tensor passes through a
# fake-quantizer,
#
# $$q(x) = a + s\,\mathrm{round}\!\left(\frac{\mathrm{clip}(x, a, b) - a}{s}\right), \qquad s = \frac{b - a}{255},$$
#
# which returns a float on the grid. Its gradient is taken as the identity (the
# straight-through estimator), so the weights move as if unrounded and learn to sit
# well on the grid. Weights take their range from their values, activations from a
# moving average of training batches; the converter then reads those ranges instead of
# calibrating. TensorFlow's fake-quant op, checked against the formula in NumPy (its
# range first nudged so that 0 sits on the grid, as TFLite's zero point needs):

# %%
x = np.random.default_rng(0).normal(size=1000).astype(np.float32)
a, b = -2.0, 3.0
got = tf.quantization.fake_quant_with_min_max_vars(x, a, b, num_bits=8).numpy()
s = (b - a) / 255
zero = round(-a / s)                       # the integer that represents 0
lo, hi = -zero * s, (255 - zero) * s       # the nudged range
want = lo + s * np.round((np.clip(x, lo, hi) - lo) / s)
np.testing.assert_allclose(got, want, atol=1e-6)
print(f"grid step s = {s:.4f}; largest rounding error inside the range "
      f"{np.max(np.abs(got - x)[(x > lo) & (x < hi)]):.4f} (≤ s/2 = {s / 2:.4f})")

# %% [markdown]
# tfmot wraps each layer in a `QuantizeWrapperV2` whose `QuantizeConfig` names the
# tensors to fake-quantize. Its built-in configs know Keras' layers, not MobileBERT's, so
# `mbert_lib.compress.qat` writes three: kernels and outputs of the matmul layers, the
# embedding tables, and the output of every **NoNorm**. NoNorm has no kernel, but it
# feeds every next matmul: without a range on its output the converter keeps those
# matmuls in float. Below, the QAT student's int8 file against the post-training one:
# which matmuls run on int8 inputs.

# %%
targets = qat.qat_targets(load_classifier(run_directory(ctx, "qat", 0)))
print("layers QAT wraps:", {c.__name__: [t[2] for t in targets].count(c) for c in
                            (qat.KernelConfig, qat.EmbeddingConfig, qat.OutputConfig)})


def matmul_inputs(path) -> dict:
    """{input dtype: number of FULLY_CONNECTED ops} of a .tflite file."""
    model = TFLiteModel(path)
    tensors = {t["index"]: t for t in model.interpreter.get_tensor_details()}
    ops = [op for op in model.interpreter._get_ops_details() if op["op_name"] == "FULLY_CONNECTED"]
    kinds = [tensors[op["inputs"][0]]["dtype"].__name__ for op in ops]
    return {k: kinds.count(k) for k in sorted(set(kinds))}


for method in ("full_int8", "qat_int8"):
    path = ctx.step_dir("compress") / "tflite" / (
        "sparsity_0_seed0_int8.tflite" if method == "full_int8" else "qat_seed0_qat_int8.tflite")
    print(f"{method:10s} matmul inputs {matmul_inputs(path)}, "
          f"{path.stat().st_size / 1e6:.2f} MB, gzip {gzip_bytes(path) / 1e6:.2f} MB")

# %% [markdown]
# **Pruning, then QAT.** tfmot's two wrappers do not nest on one of our layers, so the
# step runs them one after the other: the 90 %-pruned classifier's encoder is fine-tuned
# again with QAT. The kernels' weight quantizer fake-quantizes $W \odot M$ with the mask
# $M = \mathbb{1}[W \neq 0]$ fixed when the wrapper is built (`ZeroPreservingQuantizer`).
# A zero's gradient passes the mask and is 0, so Adam never moves it, and 0 is a point of
# the symmetric grid: the int8 file keeps the zeros.

# %%
both_dir = run_directory(ctx, f"prune_{round(100 * final)}_qat_int8", 0)
pruned_zeros = pruning.overall_sparsity(load_classifier(pruned_dir))
both_zeros = pruning.overall_sparsity(load_classifier(both_dir))
print(f"zeros in the block kernels: pruned {pruned_zeros:.4f}, then QAT {both_zeros:.4f}")
assert both_zeros >= pruned_zeros

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Where int8 loses the signal, block by block
#
# Accuracy says little about where rounding hurts. Convert a file again with every
# block's output as an extra output (`mbert_lib.export.layer_error`) and compare each one
# with the same forward in float, same weights, same attention mask:
#
# $$e_k = \frac{\lVert \hat y_k - y_k \rVert_F}{\lVert y_k \rVert_F}, \qquad y_k \in \mathbb{R}^{n \times T \times H} \text{ the output of block } k \text{ over } n \text{ examples}.$$
#
# Four comparisons on seed 0: the two post-training files against the dense student,
# and the QAT file twice, against the Keras model QAT trained (fake-quantizers
# included) and against its own weights run in float.

# %%
experiment, data = run_task(dense_dir, {})          # its experiment.yaml and task data
dev = {k: v[:256] for k, v in data.dev.features.items()}                     # [n, T]
n_calibration = SETTINGS["calibration_examples"]
calibration = calibration_features(
    data.train.features, n_calibration, SETTINGS["calibration_seed"])
penalty = SETTINGS["int8_mask_penalty"]                # the bounded mask of the int8 file
dense = load_classifier(dense_dir)                     # `classifier` was pruned above
qat_dir = run_directory(ctx, "qat", 0)
qat_model = qat.load_qat_classifier(qat_dir)           # wrapped, with its learned ranges
cases = {  # label: (model converted, float reference, precision, calibration, mask)
    "PTQ dynamic int8": (dense, dense, "dynamic_int8", None, None),
    "PTQ full int8": (dense, dense, "int8",
                      representative_dataset(calibration, n_calibration), penalty),
    "QAT int8 vs its fake-quant model": (qat_model, qat_model, "dynamic_int8", None, None),
    "QAT int8 vs its weights in float": (qat_model, load_classifier(qat_dir),
                                         "dynamic_int8", None, None),
}
errors, files = {}, {}
with native_stderr_silenced():  # no "Created TensorFlow Lite XNNPACK delegate" notice
    for label, (model, reference, precision, calibrate, mask) in cases.items():
        files[label] = layer_error.convert_with_block_outputs(
            model, precision, experiment.task.seq_length, calibrate, mask)
        errors[label] = layer_error.layer_errors(reference, files[label], dev, mask)
display(pd.DataFrame({label: {**{o: f"{100 * e:.1f} %" for o, e in r["relative_error"].items()},
                              "argmax kept": f"{100 * r['agreement']:.1f} %"}
                      for label, r in errors.items()}).T)
fig = compress_viz.plot_block_errors(
    {label: r["relative_error"] for label, r in errors.items()},
    figure_path("11_int8_error_by_block.png"))

# %%
# Sanity: the error of the full-integer file's last block, recomputed in NumPy from the
# file's own output and the float forward.
last = f"block_{dense.config.num_hidden_layers - 1}"
got = TFLiteModel(files["PTQ full int8"]).predict(dev)[last]                  # [n, T, H]
want = layer_error.block_outputs(dense, dev, penalty)[last].numpy()
e = np.linalg.norm(got - want) / np.linalg.norm(want)
assert abs(e - errors["PTQ full int8"]["relative_error"][last]) < 1e-5
print(f"{last}: e = {e:.4f}, as the table says")

# %% [markdown]
# How to read it (the numbers of all three seeds are in `results/int8_layer_error.json`,
# discussed in `docs/compression.md`):
#
# * **Dynamic-range int8** rounds only the weights and each matmul's input, and its error
#   stays flat from block to block.
# * **Full-integer int8** also rounds every activation between the ops, and its error
#   grows from the first block to the last.
# * **QAT** is a different kind of model. Its int8 file follows the fake-quantized model
#   it was trained as (the converter is faithful), but is far from its own weights run in
#   float. Its training never asked the float version to be right, only the quantized
#   one. "Error against float" measures post-training int8; QAT is measured by accuracy.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6 · The table
#
# The first row is the teacher the student was distilled from, fine-tuned the same way:
# what distillation compressed. Every other row is a fine-tuned student. Accuracy is
# measured through the LiteRT interpreter on the whole dev set, one value per seed. "vs fp32" is the paired
# difference to the dense student in points, with its 95 % interval (Student's t over
# the seeds) and the verdict it allows. Latency is seed 0's file at batch 1, medians of
# one run where every file is timed in turn, round after round.

# %%
display(compression_table(RESULT))
print(f"timed on {RESULT['hardware']}; 1-minute load average at the end: {RESULT['load_1min']}")
fig = compress_viz.plot_tradeoff(RESULT, figure_path("11_size_accuracy_latency.png"))

# %%
# Sanity: the record holds what the table shows, and the paired differences are the
# seeds' differences.
fp32 = ROWS["fp32"]
for method, row in ROWS.items():
    assert len(row["accuracy"]) == len(RESULT["seeds"])
    assert abs(row["latency_vs_fp32"] - row["latency_ms"] / fp32["latency_ms"]) < 1e-3
    if row["vs_fp32"] is not None:
        d = np.subtract(row["accuracy"], fp32["accuracy"])
        assert abs(row["vs_fp32"]["mean"] - d.mean()) < 1e-12, method
for method, row in ROWS.items():
    if method.startswith("prune_") and row["precision"] == "fp32":  # zeros keep the shapes
        assert ROWS[method]["bytes"] == fp32["bytes"]
        assert ROWS[method]["gzip_bytes"] < fp32["gzip_bytes"]
assert ROWS["qat_int8"]["bytes"] < fp32["bytes"] / 2.5
assert ROWS["teacher"]["bytes"] > 2 * fp32["bytes"]  # what distillation compressed
print("checks passed")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# Read each claim against the table and the figures above (the full run's record is
# `results/compress.json`, and `docs/compression.md` discusses it).
#
# * **Distillation is the table's largest compression**: the teacher's file is several
#   times the student's, and so is its latency. At this scale the teacher fine-tunes no
#   better than its student (their paired difference is in the teacher's row;
#   `docs/payoff.md` finds the same at every label budget).
# * **Magnitude pruning during fine-tuning costs no measurable accuracy here**: no pruned
#   row is behind the dense student; each paired interval holds 0 or lies above it.
#   Pruned at once, without the schedule, the same student loses many points (the
#   sensitivity scan's "all" row).
# * **It buys only compressed bytes.** The files keep their size and their graphs, op for
#   op, so the pruned rows' latency ratios (a few percent from 1) are this measurement's
#   noise, not a speed-up. The gzipped file shrinks by far less than the sparsity,
#   because pruning reaches the blocks' kernels and most of this student's weights are
#   its embeddings.
# * **Blocks differ.** The scan shows which block's weights matter most: a per-block
#   sparsity could prune the others harder.
# * **Structured pruning changes the shapes**, so it is the one pruning that changes the
#   latency; its cost in accuracy is in its row.
# * **Post-training int8 already keeps the accuracy** at this size, so QAT has little
#   to win there: its row is level with fp32 too.
# * **Pruning and QAT stack**: the pruned-then-QAT file is int8 with the pruned zeros,
#   the smallest after gzip. Its accuracy row is level with fp32; its higher mean comes
#   with twice the fine-tuning steps of the other rows (pruning, then QAT).
# * **The QAT file is the fastest, post-training full-integer int8 the slowest.** The
#   QAT file has int8 matmuls but float attention (section 5), which XNNPACK runs whole;
#   the full-integer file's int8 batched products and softmax run in the interpreter's
#   reference kernels (`docs/compression.md` has the profile).
# * **Where int8 loses the signal**: full-integer int8's error grows block by block,
#   dynamic int8's stays flat. The QAT file follows the model QAT trained, not its
#   weights in float.
# * Figures: `figures/11_pruning_schedule.png`, `11_sensitivity.png`,
#   `11_int8_error_by_block.png`, `11_size_accuracy_latency.png`.
#
# ## Exercises
#
# Worked solutions: `solutions/11_compression_solutions.ipynb`.
#
# 1. **How much can gzip win?** Predict the gzipped size of the 90 %-pruned file from
#    the dense one, assuming the zeros compress to nothing and every other byte as
#    before, and compare with the table. What does the gap say?
#    *Hint: `RESULT["params"]` splits the parameters; a float32 weight is 4 bytes.*
# 2. **Prune where it is cheap.** Using the sensitivity scan, choose one sparsity per
#    block so that the one-shot pruned student loses at most one point, and count the
#    weights removed. Check it on seed 0's dense classifier.
#    *Hint: `pruning.prune_once(model, sparsity, block=l)` for each block, then
#    `mbert_lib.export.evaluate.keras_logits` on the dev set.*
# 3. **Units or weights?** Structured pruning removed a fraction of the FFN units. Which
#    magnitude-pruning row removes about as many weights, and how do the two compare in
#    accuracy, gzipped size and latency?
#    *Hint: the table's sparsity column counts the block kernels' weights that are zero
#    or gone, for both.*
