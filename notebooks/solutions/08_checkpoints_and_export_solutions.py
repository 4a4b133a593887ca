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
# # 08 · Checkpoints and export: worked solutions (instructor copy)
#
# Worked answers to the exercises of `notebooks/08_checkpoints_and_export.ipynb`.
# Every number below is computed when the notebook runs; the prose reads the printed
# values of the committed full run. Run times printed by `stopwatch` are wall times of
# that full run on the CPU printed in the first cell.
#
# Like the student notebook, this one uses **stand-in checkpoints only** (released
# names and shapes, random weights): the laptop student (NoNorm, relu, shared Q/K
# bottleneck, 4 FFNs) with a WordPiece vocabulary trained on the paper's abstract.
# Scratch files go to a temporary directory, printed as `<scratch>`.
#
# Shapes: B batch, T tokens, H inter-block width, h intra-block width, N heads,
# d = h / N head size, D the input width of a projection.

# %%
import mbert_lib  # noqa: F401  (first: selects tf-keras, silences TensorFlow's start-up logs)
from mbert_lib import convert, get_preset, runtime
from mbert_lib import hardware
from mbert_lib.cli import main as cli
from mbert_lib.convert import names
from mbert_lib.convert import tf2 as convert_tf2
from mbert_lib.data import train_wordpiece
from mbert_lib.paper import ABSTRACT
from mbert_lib.quiet_start import native_stderr_silenced

import contextlib
import dataclasses
import io
import json
import tempfile
import warnings
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import tensorflow as tf

# tensorflow_hub imports pkg_resources, which setuptools >= 80 marks deprecated on import
warnings.filterwarnings("ignore", "pkg_resources is deprecated", UserWarning)
import tensorflow_hub as hub
import tf_keras
from IPython.display import display
from tokenizers import BertWordPieceTokenizer

pd.set_option("display.max_colwidth", 60)
pd.set_option("display.width", 200)
tf.get_logger().setLevel("ERROR")  # no "Assets written to ..." lines from SavedModel export
print(hardware.describe())
print("fast mode:", runtime.fast_mode())
WORK = Path(tempfile.mkdtemp(prefix="mbert_08_solutions_"))


def run(argv: list[str]) -> int:
    """`python -m mbert_lib ...` in-process, printing the scratch directory as <scratch>."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = cli(argv)
    print(out.getvalue().replace(str(WORK), "<scratch>"), end="")
    return status


# %% [markdown]
# The stand-in of the student notebook's section 3: a WordPiece vocabulary from the
# abstract, the laptop student under its released TF1 names (random weights, γ around
# 1, every bias non-zero), written as a TF1 checkpoint and converted with `convert tf1`.

# %%
tokenizer = train_wordpiece([ABSTRACT], vocab_size=runtime.pick(400, 250), min_frequency=1)
vocab = list(tokenizer.vocab)
VOCAB_FILE = WORK / "vocab.txt"
VOCAB_FILE.write_text("\n".join(vocab) + "\n")

config = get_preset("tiny_student").replace(vocab_size=len(vocab),
                                            num_hidden_layers=runtime.pick(4, 2))
tf1_arrays = convert.random_tf1_arrays(config, seed=0)
TF1_DIR, TF2_DIR = WORK / "tf1", WORK / "tf2"
tf1_prefix = convert.write_tf1_checkpoint(tf1_arrays, TF1_DIR / "mobilebert_variables.ckpt")
config.to_json_file(TF1_DIR / "bert_config.json")
assert run(["convert", "tf1", "--bert_config_file", str(TF1_DIR / "bert_config.json"),
            "--tf1_checkpoint_path", tf1_prefix, "--tf2_checkpoint_path", str(TF2_DIR)]) == 0
model = convert.load_pretrainer(TF2_DIR)
print(f"V = {len(vocab)}, L = {config.num_hidden_layers} blocks")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 1 · The per-head reshape of the teacher's value kernel
#
# > Write the reshape for the *value* kernel of the IB-BERT teacher
# > (`get_preset("ibbert_large")`): what are D, N and d, and where does head n = 2
# > (counted from 0, as in section 2) start? Check your answer with `convert.name_table`.
#
# *Hint: the value projection reads the bottleneck only with `use_bottleneck_attention`;
# otherwise it reads the block input (width H). Fill a kernel with `np.arange` so that
# each entry of row 0 is its own TF1 column, and reshape it with `names.tf1_to_keras`.*
#
# The Keras kernel keeps the head axis, a C-order reshape of the TF1 kernel:
#
# $$W^V_{\text{Keras}}[i, n, j] = W^V_{\text{TF1}}[i,\ n d + j], \qquad
#   W^V_{\text{TF1}} \in \mathbb{R}^{D \times N d} \;\to\; W^V_{\text{Keras}} \in \mathbb{R}^{D \times N \times d},$$
#
# so head $n$ starts at TF1 column $n d$. With `np.arange`, row 0 of the TF1 kernel holds
# the column indices $0, 1, \dots, Nd - 1$, and `kernel_keras[0, n, 0]` *is* the column
# where head $n$ starts.

# %%
with runtime.stopwatch("exercise 1"):
    teacher = get_preset("ibbert_large")
    VALUE = "bert/encoder/layer_0/attention/self/value/kernel"
    value = next(e for e in convert.name_map(teacher) if e.tf1 == VALUE)
    D, N, d = value.keras_shape
    kernel_tf1 = np.arange(np.prod(value.tf1_shape)).reshape(value.tf1_shape)   # [D, N·d]
    kernel_keras = names.tf1_to_keras(value, kernel_tf1)                       # [D, N, d]
    head_start = [int(kernel_keras[0, n, 0]) for n in range(N)]               # TF1 column
    teacher_table = convert.name_table(teacher)
    rows = teacher_table[teacher_table["TF1 name"].str.startswith(
        "bert/encoder/layer_0/attention/self/value")]
print(f"IB-BERT value kernel: TF1 {value.tf1_shape} -> Keras {value.keras_shape}: "
      f"D = {D}, N = {N}, d = {d}")
print("TF1 column where head n starts, n = 0 ... N-1:", head_start)
display(rows[["TF1 name", "TF1 shape", "Keras shape", "TF1→Keras", "HF shape"]])

# %% [markdown]
# For contrast, the three projections of the teacher and of the released MobileBERT
# student: which input each one reads sets D.

# %%
contrast = []
for label, c in (("IB-BERT teacher", teacher), ("MobileBERT", get_preset("mobilebert"))):
    by_name = {e.tf1: e for e in convert.name_map(c)}
    for proj in ("query", "key", "value"):
        e = by_name[f"bert/encoder/layer_0/attention/self/{proj}/kernel"]
        contrast.append({"model": label, "projection": proj, "TF1 [D, N·d]": list(e.tf1_shape),
                         "Keras [D, N, d]": list(e.keras_shape),
                         "use_bottleneck_attention": c.use_bottleneck_attention,
                         "key_query_shared_bottleneck": c.key_query_shared_bottleneck})
display(pd.DataFrame(contrast))

# %%
# Check against the config (an independent source): the value reads the block input
# (width H = hidden_size), the heads split the intra-block width h, and head 2 owns
# TF1 columns 2d ... 3d - 1.
assert not teacher.use_bottleneck_attention and not teacher.key_query_shared_bottleneck
assert (D, N, d) == (teacher.hidden_size, teacher.num_attention_heads,
                     teacher.intra_bottleneck_size // teacher.num_attention_heads)
assert head_start == [n * d for n in range(N)] and head_start[2] == 2 * d
rng = np.random.default_rng(0)
w = rng.normal(size=value.tf1_shape).astype(np.float32)
assert np.array_equal(names.tf1_to_keras(value, w)[:, 2, :], w[:, 2 * d:3 * d])
assert rows["TF1 shape"].tolist() == [[D, N * d], [N * d]]
assert rows["Keras shape"].tolist() == [[D, N, d], [N, d]]

# %% [markdown]
# **Answer.** The teacher's value kernel is stored in TF1 as $[D, N d]$ and becomes
# $[D, N, d]$ in Keras with the values printed above: $D = H$ (the value reads the
# 512-wide block input, since the teacher uses neither `use_bottleneck_attention` nor
# the shared Q/K bottleneck), $N = 4$ heads, $d = h / N$ with $h$ the 1024-wide
# intra-block width. Head 2 (counted from 0) starts at TF1 column $2d$, the third
# entry of the printed list (head 2 counted from 1 starts at column $d$). The name
# table shows the same shapes, and the bias goes $[N d] \to [N, d]$. In the teacher
# all three projections read the block input; in MobileBERT only the value does, query
# and key read the 128-wide shared bottleneck.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 2 · A swapped γ and β
#
# > Swap γ and β of one NoNorm in the stand-in TF1 checkpoint and convert it: why does
# > the converter accept it, and which test in `tests/test_convert_tf1.py` would catch
# > such a mapping bug in the library?
#
# *Hint: the converter checks names and shapes, never values; look for a test that
# compares the converted model's outputs with an independent forward pass
# (`tests/numpy_reference.py`).*
#
# We swap the input-bottleneck NoNorm of block 0, whose output is
#
# $$u = \mathrm{NoNorm}(x W + b) = \gamma \odot (x W + b) + \beta, \qquad
#   x \in \mathbb{R}^{B \times T \times H},\; W \in \mathbb{R}^{H \times h},\; \gamma, \beta \in \mathbb{R}^{h}.$$

# %%
NORM = "bert/encoder/layer_0/bottleneck/input/FakeLayerNorm"
DENSE = "bert/encoder/layer_0/bottleneck/input/dense"
with runtime.stopwatch("exercise 2"):
    swapped = dict(tf1_arrays)
    swapped[f"{NORM}/gamma"], swapped[f"{NORM}/beta"] = (tf1_arrays[f"{NORM}/beta"],
                                                          tf1_arrays[f"{NORM}/gamma"])
    swapped_prefix = convert.write_tf1_checkpoint(swapped, WORK / "swapped" / "model.ckpt")
    status = run(["convert", "tf1", "--bert_config_file", str(TF1_DIR / "bert_config.json"),
                  "--tf1_checkpoint_path", swapped_prefix,
                  "--tf2_checkpoint_path", str(WORK / "tf2_swapped")])
    model_swapped = convert.load_pretrainer(WORK / "tf2_swapped")

    rng = np.random.default_rng(1)
    batch = {"input_word_ids": rng.integers(5, len(vocab), (2, 12)).astype(np.int32),
             "input_mask": np.ones((2, 12), np.int32),
             "input_type_ids": np.zeros((2, 12), np.int32),
             "masked_lm_positions": np.array([[1, 2], [3, 4]], np.int32)}
    out, out_swapped = model(batch), model_swapped(batch)
print("converter exit status:", status)
for key in ("sequence_output", "mlm_logits", "nsp_logits"):
    print(f"max |original − swapped| on {key}: "
          f"{float(np.abs(out[key] - out_swapped[key]).max()):.3f}")

# %% [markdown]
# The same NoNorm in numpy, from the TF1 arrays by name: the original model computes
# $\gamma \odot (xW + b) + \beta$, the converted swapped checkpoint $\beta \odot (xW + b) + \gamma$.

# %%
x = model.encoder.embedding(batch["input_word_ids"], batch["input_type_ids"]).numpy()  # [B, T, H]
pre = x @ tf1_arrays[f"{DENSE}/kernel"] + tf1_arrays[f"{DENSE}/bias"]                 # [B, T, h]
gamma, beta = tf1_arrays[f"{NORM}/gamma"], tf1_arrays[f"{NORM}/beta"]                   # [h]


def bottleneck_norm_output(m):
    block = m.encoder.blocks[0]
    return block.bottleneck_input_norm(block.bottleneck_input(x)).numpy()              # [B, T, h]


numpy_norm = pre * gamma + beta                                                         # [B, T, h]
print(f"max |Keras − numpy γ ⊙ (xW + b) + β|: original model "
      f"{np.abs(bottleneck_norm_output(model) - numpy_norm).max():.1e}, swapped checkpoint "
      f"{np.abs(bottleneck_norm_output(model_swapped) - numpy_norm).max():.2f}")

# %% [markdown]
# A *library* bug that swaps the two (a wrong row in the name map) has exactly the
# same effect on a correct checkpoint. We patch the map the converter assigns with,
# swapping the Keras paths of this one γ and β, and convert the **unswapped** arrays:

# %%
def buggy_name_map(c, include_heads=True):
    entries = names.name_map(c, include_heads)
    i = next(k for k, e in enumerate(entries) if e.tf1 == f"{NORM}/gamma")
    j = next(k for k, e in enumerate(entries) if e.tf1 == f"{NORM}/beta")
    entries[i], entries[j] = (dataclasses.replace(entries[i], keras=entries[j].keras),
                              dataclasses.replace(entries[j], keras=entries[i].keras))
    return entries


with mock.patch.object(convert_tf2, "name_map", buggy_name_map):
    model_bug = convert.pretrainer_from_tf1_arrays(config, tf1_arrays)
out_bug = model_bug(batch)
print("library bug vs swapped checkpoint, max |Δ| sequence_output:",
      float(np.abs(out_bug["sequence_output"] - out_swapped["sequence_output"]).max()))

# %%
# Checks: the converter accepted the swap (status 0, nothing skipped); the original
# model computes γ(xW+b)+β and the swapped one β(xW+b)+γ (numpy from the TF1 arrays);
# a swapped map row gives bit for bit the model of a swapped checkpoint.
swap_report = json.loads((WORK / "tf2_swapped" / "conversion.json").read_text())
assert status == 0 and swap_report["converted"] == len(tf1_arrays) and swap_report["skipped"] == []
assert np.allclose(bottleneck_norm_output(model), pre * gamma + beta, atol=1e-5)
assert np.allclose(bottleneck_norm_output(model_swapped), pre * beta + gamma, atol=1e-5)
assert np.abs(bottleneck_norm_output(model_swapped) - numpy_norm).max() > 0.1
assert float(np.abs(out["sequence_output"] - out_swapped["sequence_output"]).max()) > 1e-2
for key in ("sequence_output", "pooled_output", "mlm_logits", "nsp_logits"):
    assert np.array_equal(out_bug[key].numpy(), out_swapped[key].numpy()), key

# %% [markdown]
# **Answer.** The converter accepts the swapped checkpoint (exit status 0) because it
# checks only what a checkpoint *declares*: every expected name is present and every
# shape fits, and γ and β of a NoNorm are both $[h]$ vectors. Values are never
# checked, so the converted model silently computes $\beta \odot (xW+b) + \gamma$ and
# its outputs move by the amounts printed above. A bug in the library's name map that
# swapped the two Keras paths would produce the very same model (bit for bit, last
# printout), and no name or shape check can see it. The tests that catch it compare
# *outputs* with an independent numpy forward pass that reads γ and β by their TF1
# names (`tests/numpy_reference.py`, via `assert_matches_reference`):
# `test_student_via_command_line_matches_numpy_reference` for a NoNorm
# (`FakeLayerNorm`) student, and `test_teacher_layer_norm_checkpoint_matches_numpy_reference`
# for a LayerNorm. Their random weights have γ ≈ 1 and β ≈ 0 (`random_arrays`), so a
# swap changes every output far beyond the tolerance. (Outside that file,
# `tests/test_convert_names.py::test_map_is_exactly_the_models_checkpoint` would catch
# it too, by comparing the library's Keras → TF1 reading with an independent walker
# over the Keras layers.)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 3 · `--seq_length 8`: truncation and `[SEP]`
#
# > Export the model with `--seq_length 8` and feed a long sentence: which tokens survive
# > the truncation, and where does `[SEP]` go?
#
# *Hint: `preprocess.tokenize` gives the word pieces before packing; a single segment
# keeps `seq_length − 2` of them; try `preprocess.bert_pack_inputs` with two segments too.*

# %%
SAVED8 = WORK / "savedmodel8" / "encoder"
LONG = "Empirical studies show that MobileBERT is 4.3x smaller and 5.5x faster than BERT_BASE."
SHORT = "MobileBERT is thin."
with runtime.stopwatch("exercise 3"), native_stderr_silenced():
    assert run(["export", "savedmodel", "--checkpoint", str(TF2_DIR), "--vocab_file",
                str(VOCAB_FILE), "--export_path", str(SAVED8), "--seq_length", "8"]) == 0
    preprocess = tf.saved_model.load(str(SAVED8) + "_preprocess")
    pieces = preprocess.tokenize(tf.constant([LONG])).merge_dims(-2, -1)[0].numpy()  # [pieces]
    packed = preprocess(tf.constant([LONG, SHORT]))                                  # [2, 8] each
    pair = preprocess.bert_pack_inputs(
        [preprocess.tokenize(tf.constant([LONG])), preprocess.tokenize(tf.constant([SHORT + " " + SHORT]))],
        tf.constant(8))


def show(inputs, row, label):
    ids = inputs["input_word_ids"].numpy()[row]
    return pd.DataFrame({"token": [vocab[i] for i in ids], "mask": inputs["input_mask"].numpy()[row],
                         "type": inputs["input_type_ids"].numpy()[row]}).T.rename_axis(label)


print(f"{len(pieces)} word pieces before packing:", " ".join(vocab[i] for i in pieces))
display(show(packed, 0, "long sentence"), show(packed, 1, "short sentence"),
        show(pair, 0, "two segments"))

# %%
# Checks: the `tokenizers` library with truncation to 8 gives the same ids (a second
# tokenizer implementation); one segment keeps its first 8 − 2 pieces; two segments
# share 8 − 3 = 5 slots round robin (one piece each in turn).
reference = BertWordPieceTokenizer(str(VOCAB_FILE), lowercase=True)
reference.enable_truncation(max_length=8)
reference.enable_padding(length=8, pad_id=0, pad_token="[PAD]")
expected = np.array([e.ids for e in reference.encode_batch([LONG, SHORT])])
assert np.array_equal(packed["input_word_ids"].numpy(), expected)
ids = packed["input_word_ids"].numpy()[0]
CLS, SEP = vocab.index("[CLS]"), vocab.index("[SEP]")
assert ids[0] == CLS and ids[-1] == SEP and np.array_equal(ids[1:7], pieces[:6])

b_pieces = preprocess.tokenize(tf.constant([SHORT + " " + SHORT])).merge_dims(-2, -1)[0].numpy()
keep_a = keep_b = 0
while keep_a + keep_b < 5 and (keep_a < len(pieces) or keep_b < len(b_pieces)):  # round robin
    if keep_a < len(pieces):
        keep_a += 1
    if keep_a + keep_b < 5 and keep_b < len(b_pieces):
        keep_b += 1
pair_ids = pair["input_word_ids"].numpy()[0]
assert np.array_equal(pair_ids, np.r_[CLS, pieces[:keep_a], SEP, b_pieces[:keep_b], SEP])
print(f"two segments: {keep_a} pieces of the first, {keep_b} of the second")

# %% [markdown]
# **Answer.** The long sentence has the number of word pieces printed above; with
# `seq_length` 8 the packer keeps `[CLS]`, the **first** 6 pieces (the tail is cut, the
# sentence is never shortened from the front) and then writes `[SEP]` in the last slot,
# position 7: `[SEP]` is always kept, right after the last surviving piece, so a
# truncated sentence still ends with a separator and the mask is all ones. A short
# sentence gets `[SEP]` right after its last piece and `[PAD]` (mask 0) after it. With
# two segments, the 8 − 3 = 5 free slots are shared round robin (3 from the first
# segment, 2 from the second), each segment followed by its own `[SEP]`, type id 0 for
# the first and 1 for the second. The `tokenizers` library with `max_length=8` produces
# the same ids.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 4 · Fine-tuning through `hub.KerasLayer`
#
# > Load the encoder SavedModel with `hub.KerasLayer(..., trainable=True)` and fine-tune
# > it on two toy sentences; confirm that the weights change while `encoder.vocab_file`
# > and `do_lower_case` stay the same.
#
# *Hint: string input → preprocessing KerasLayer → encoder KerasLayer → Dense(2),
# `compile` and `fit` a few steps; compare the layer's `trainable_variables` before and
# after, and read `vocab_file` and `do_lower_case` from its `resolved_object`.*
#
# The toy task: sentence 0 is class 1, sentence 1 is class 0. We reuse the SavedModels
# of exercise 3 (two short sentences fit in 8 tokens).

# %%
TOY = tf.constant(["MobileBERT is fast.", "BERT is slow."])
LABELS = np.array([1, 0])
STEPS = runtime.pick(30, 10)
with runtime.stopwatch("exercise 4"):
    tf_keras.utils.set_random_seed(0)
    text = tf_keras.layers.Input(shape=(), dtype=tf.string, name="sentence")
    encoder_inputs = hub.KerasLayer(str(SAVED8) + "_preprocess", name="preprocessing")(text)
    encoder_layer = hub.KerasLayer(str(SAVED8), trainable=True, name="mobilebert")
    pooled = encoder_layer(encoder_inputs)["pooled_output"]                  # [B, H]
    logits = tf_keras.layers.Dense(2, name="head")(pooled)                    # [B, 2]
    toy_model = tf_keras.Model(text, logits)
    toy_model.compile(optimizer=tf_keras.optimizers.Adam(1e-3),
                      loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])

    loaded = encoder_layer.resolved_object
    before = [v.numpy().copy() for v in encoder_layer.trainable_variables]
    asset_before = loaded.vocab_file.asset_path.numpy()
    vocab_bytes_before = tf.io.read_file(loaded.vocab_file.asset_path).numpy()
    lower_before = bool(loaded.do_lower_case.numpy())
    history = toy_model.fit(TOY, LABELS, epochs=STEPS, batch_size=2, verbose=0)

changed = [not np.array_equal(b, v.numpy()) for b, v in zip(before, encoder_layer.trainable_variables)]
print(f"loss {history.history['loss'][0]:.3f} -> {history.history['loss'][-1]:.3f} after "
      f"{STEPS} steps; accuracy {history.history['accuracy'][-1]:.0%}")
print(f"{sum(changed)} of {len(changed)} trainable encoder variables changed; "
      f"do_lower_case {lower_before} -> {bool(loaded.do_lower_case.numpy())}; vocab asset "
      f"unchanged: {loaded.vocab_file.asset_path.numpy() == asset_before}")
print("do_lower_case among the layer's variables:",
      any(v is loaded.do_lower_case for v in encoder_layer.variables))
unchanged = [v.name for v, c in zip(encoder_layer.trainable_variables, changed) if not c]
print("trainable but unchanged:", unchanged or "none")

# %% [markdown]
# A second path to the same numbers: copy the layer's fine-tuned variables into a fresh
# Keras encoder (`convert.load_encoder`, the one the SavedModel was exported from) and
# compare outputs. The SavedModel stores the encoder's variables in Keras' order.

# %%
keras_encoder = convert.load_encoder(TF2_DIR)
inputs8 = preprocess(TOY)
original = keras_encoder(inputs8)["sequence_output"].numpy()
assert [v.shape for v in keras_encoder.variables] == [v.shape for v in loaded.variables]
for target, source in zip(keras_encoder.variables, loaded.variables):
    target.assign(source)
copied = keras_encoder(inputs8)["sequence_output"].numpy()
hub_out = encoder_layer(inputs8)["sequence_output"].numpy()
on_disk = tf.saved_model.load(str(SAVED8))(inputs8)["sequence_output"].numpy()
print(f"max |hub layer − Keras with copied weights| {np.abs(hub_out - copied).max():.1e}; "
      f"max |fine-tuned − original| {np.abs(hub_out - original).max():.3f}; "
      f"SavedModel reloaded from disk = original: {np.allclose(on_disk, original, atol=1e-5)}")

# %%
# Checks: every encoder weight that gets a gradient moved, the loss fell, the vocabulary
# asset (path and bytes) and do_lower_case did not change, and do_lower_case is not
# trainable; the fine-tuned layer computes what Keras computes with its weights.
assert sum(changed) >= 0.9 * len(changed)
assert history.history["loss"][-1] < history.history["loss"][0]
assert loaded.vocab_file.asset_path.numpy() == asset_before
assert tf.io.read_file(loaded.vocab_file.asset_path).numpy() == vocab_bytes_before
assert bool(loaded.do_lower_case.numpy()) == lower_before
assert all(v is not loaded.do_lower_case for v in encoder_layer.variables)
assert np.allclose(hub_out, copied, atol=1e-5)
assert np.abs(hub_out - original).max() > 1e-3 and np.allclose(on_disk, original, atol=1e-5)

# %% [markdown]
# **Answer.** Through `hub.KerasLayer(..., trainable=True)` the SavedModel's variables are
# ordinary trainable Keras weights: in the printed number of steps the loss fell to
# about zero and every trainable encoder variable changed (counts above). The layer
# tracks only what the Reusable SavedModel lists as the encoder's `variables` and
# `trainable_variables`; `do_lower_case` is a separate variable of the SavedModel that
# the layer does not even hold, and the vocabulary is an *asset* (a file, not a
# variable), so the optimizer cannot reach either: the asset path, its bytes and the
# flag are the same after training. Copying the fine-tuned variables into the Keras
# encoder reproduces the layer's outputs exactly, so the change is entirely in the
# weights. Fine-tuning happens in memory: the SavedModel on disk still holds the
# original weights (reloaded above); to keep the fine-tuned encoder, save the Keras
# model or export it again.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# 1. IB-BERT's value kernel: TF1 $[D, N d]$ → Keras $[D, N, d]$ with $D = H$ (block input),
#    $N = 4$, $d = h / N$; head $n$ starts at TF1 column $n d$.
# 2. A swapped γ/β passes every name and shape check; only an output comparison against
#    an independent forward pass (`test_student_via_command_line_matches_numpy_reference`,
#    and the teacher's counterpart) catches the equivalent library bug.
# 3. With `seq_length` 8 one segment keeps `[CLS]`, its first 6 pieces and `[SEP]` in the
#    last slot; two segments share the 5 free slots round robin.
# 4. `hub.KerasLayer(trainable=True)` fine-tunes the SavedModel's weights in memory; the
#    vocabulary asset and `do_lower_case` stay as exported.
