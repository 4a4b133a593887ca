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
# # 08 · Checkpoints and export: TF1, Hugging Face, TF2 and TF-Hub SavedModels
#
# > "Like the original BERT, MobileBERT is task-agnostic, that is, it can be
# > generically applied to various downstream NLP tasks via simple fine-tuning."
# > (Sun et al., ACL 2020, abstract)
#
# A task-agnostic model is only as useful as its checkpoint is portable. The
# released MobileBERT exists in two layouts: the original TF1 checkpoints of
# google-research (`uncased_L-24_H-128_B-512_A-4_F-4_OPT`) and the Hugging Face
# port `google/mobilebert-uncased` (PyTorch layout, safetensors). mbert_lib's
# Keras model stores the same numbers under a third set of names, and some of
# them in a different shape. This notebook
#
# 1. lays the three naming schemes side by side (one table, the name map),
# 2. draws the one non-trivial change, the **per-head reshape** of the attention kernels,
# 3. runs a round trip TF1 → TF2 → Hugging Face layout → TF2 and asserts identical outputs,
# 4. shows that a broken checkpoint is refused with every problem listed,
# 5. exports TF-Hub-style SavedModels and runs inference on raw sentences.
#
# **No released checkpoint is used here.** This machine has no internet
# access (only package registries), so every checkpoint below is a
# *stand-in*: the released names and shapes, random weights, written in the
# real file formats (a `tf.compat.v1` Saver checkpoint, a safetensors file).
# Section 6 gives the commands to run on the real files.
#
# Shapes: B batch, T tokens, V vocab, E embedding size, H inter-block width,
# h intra-block width, N heads, d = h / N head size, O output width, L layers.

# %%
import atexit
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import mbert_lib  # noqa: F401  (selects tf-keras before TensorFlow is imported)
import numpy as np
import pandas as pd
import tensorflow as tf

# tensorflow_hub imports pkg_resources, which setuptools >= 80 marks deprecated on import
warnings.filterwarnings("ignore", "pkg_resources is deprecated", UserWarning)
import tensorflow_hub as hub
import tf_keras
from IPython.display import display
from safetensors import safe_open
from tokenizers import BertWordPieceTokenizer

from mbert_lib import convert, get_preset
from mbert_lib.cli import main as cli
from mbert_lib.convert import names
from mbert_lib.convert.figure import plot_per_head_reshape
from mbert_lib.data import train_wordpiece
from mbert_lib.paper import ABSTRACT, TABLE1
from mbert_lib.quiet_start import native_stderr_silenced
from mbert_lib.runtime import fast_mode, figure_path, pick, shown_path

pd.set_option("display.max_colwidth", 70)
pd.set_option("display.width", 200)
pd.set_option("display.max_rows", 100)
tf.get_logger().setLevel("ERROR")  # no "Assets written to ..." lines from SavedModel export
SCRATCH = tempfile.mkdtemp(prefix="mbert_08_")       # removed when the kernel stops
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)
os.chdir(SCRATCH)             # from here on paths are relative to the scratch directory
WORK = Path(".")
print("fast mode" if fast_mode() else "full mode", "| TensorFlow", tf.__version__,
      "| working in a new scratch directory")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · One weight, three names
#
# Every converter in `mbert_lib.convert` goes through one table,
# `convert.name_map(config)`: one row per weight, keyed by the name in the
# released TF1 checkpoint (docs/reference.md), with
#
# * the **Keras path** in mbert_lib's `Pretrainer`, which is also the key in
#   mbert_lib's TF2 checkpoint (`tf.train.Checkpoint` keys are attribute paths),
# * the **Hugging Face** name (`google/mobilebert-uncased`),
# * the shapes and the transform from TF1: `copy`, `reshape` (per head, section 2)
#   or `transpose` (PyTorch stores a Linear weight as [out, in]; TF1 stores the
#   NSP weights as [2, H] where a Keras Dense kernel is [H, 2]).
#
# Here is the table for the released MobileBERT configuration: the embeddings,
# the first block and the two pre-training heads.

# %%
released = get_preset("mobilebert")
table = convert.name_table(released)
is_layer0 = table["TF1 name"].str.startswith("bert/encoder/layer_0/")
is_other_layer = table["TF1 name"].str.startswith("bert/encoder/") & ~is_layer0
display(table[~is_other_layer].reset_index(drop=True))

# %% [markdown]
# How many weights, of which kind, and how many numbers. The encoder count is
# the one tf-models' MobileBERT encoder reports (docs/reference.md); the paper's
# Table 1 prints 25.3M for the whole model without saying which weights it
# counts, so we show it beside ours rather than claiming a match. Most of the
# gap to our "with heads" total is the MLM head's `extra_output_weights`
# [V, H − E], which widens the 128-wide token table to the 512-wide output.

# %%
entries = convert.name_map(released)
encoder_entries = convert.name_map(released, include_heads=False)


def count(es):
    return sum(int(np.prod(e.tf1_shape)) for e in es)


extra = next(e for e in entries if e.tf1 == "cls/predictions/extra_output_weights")
counts = pd.DataFrame([
    {"part": "encoder (embeddings + 24 blocks)", "weights": len(encoder_entries),
     "parameters": count(encoder_entries)},
    {"part": "MLM + NSP heads", "weights": len(entries) - len(encoder_entries),
     "parameters": count(entries) - count(encoder_entries)},
    {"part": "  of which extra_output_weights", "weights": 1, "parameters": count([extra])},
    {"part": "total", "weights": len(entries), "parameters": count(entries)},
])
display(counts)
print(f"paper Table 1, MobileBERT: {TABLE1['mobilebert']['params_m']}M parameters (as printed)")
display(table["TF1→Keras"].value_counts().rename("weights by TF1→Keras transform").to_frame())

# %%
# Sanity: 7 embedding weights, 46 per block (4 + 4 bottlenecks, 6 Q/K/V, 2 + 2 attention
# output and norm, 6 per FFN × 4, 4 output bottleneck), 8 head weights; the encoder has
# exactly tf-models' parameter count.
assert len(entries) == 7 + 24 * 46 + 8
assert count(encoder_entries) == 24_581_888
assert (table["TF1→Keras"] == "reshape").sum() == 24 * 7
assert table["TF1 name"].is_unique and table["Keras path"].is_unique
assert table["Hugging Face name"].is_unique

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · The per-head reshape
#
# Multi-head attention (Vaswani et al., 2017), as used in every MobileBERT block:
#
# $$\mathrm{head}_n = \mathrm{softmax}\!\left(\frac{(X_q W^Q_n)(X_k W^K_n)^\top}{\sqrt d}\right) X_v W^V_n,
#   \qquad
#   \mathrm{MultiHead} = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_N)\, W^O
#   = \sum_{n} \mathrm{head}_n W^O_n .$$
#
# TF1 (and Hugging Face) store the N projections side by side,
# $W^Q = [\,W^Q_1 \mid \dots \mid W^Q_N\,] \in \mathbb{R}^{D \times N d}$, and
# $W^O \in \mathbb{R}^{N d \times O}$ with $W^O_n$ its rows $n d, \dots, n d + d - 1$.
# Keras' MultiHeadAttention (and mbert_lib's) keeps the head axis:
#
# $$W^Q_{\text{Keras}}[i, n, j] = W^Q_{\text{TF1}}[i,\ n d + j], \qquad
#   W^O_{\text{Keras}}[n, j, o] = W^O_{\text{TF1}}[n d + j,\ o],$$
#
# a plain row-major reshape [D, N·d] → [D, N, d] (and [N·d, O] → [N, d, O]);
# the biases go [N·d] → [N, d]. Below: the query kernel of the released shape
# (D = h = 128, N = 4, d = 32), split by the library's `names.tf1_to_keras`.

# %%
rng = np.random.default_rng(0)
by_tf1 = {e.tf1: e for e in entries}
query = by_tf1["bert/encoder/layer_0/attention/self/query/kernel"]
output = by_tf1["bert/encoder/layer_0/attention/output/dense/kernel"]
N, d = released.num_attention_heads, released.attention_head_size
kernel_tf1 = rng.normal(0, 0.05, query.tf1_shape).astype(np.float32)    # [D, N·d]
kernel_keras = names.tf1_to_keras(query, kernel_tf1)                     # [D, N, d]
out_tf1 = rng.normal(0, 0.05, output.tf1_shape).astype(np.float32)      # [N·d, O]
out_keras = names.tf1_to_keras(output, out_tf1)                          # [N, d, O]
print("query kernel", query.tf1_shape, "->", kernel_keras.shape,
      "| output kernel", output.tf1_shape, "->", out_keras.shape)

# %%
# Sanity: head n owns columns n·d … n·d + d − 1 (rows for W^O), the way back is exact,
# and attention computed from either layout is the same function.
for n in range(N):
    assert np.array_equal(kernel_keras[:, n, :], kernel_tf1[:, n * d:(n + 1) * d])
    assert np.array_equal(out_keras[n], out_tf1[n * d:(n + 1) * d])
assert np.array_equal(names.keras_to_tf1(query, kernel_keras), kernel_tf1)

x = rng.normal(size=(2, 5, query.tf1_shape[0])).astype(np.float32)     # [B, T, D]
q_tf1 = (x @ kernel_tf1).reshape(2, 5, N, d)                             # [B, T, N, d]
q_keras = np.einsum("BTD,DNd->BTNd", x, kernel_keras)                   # [B, T, N, d]
context = rng.normal(size=(2, 5, N, d)).astype(np.float32)              # heads' outputs
merged_tf1 = context.reshape(2, 5, N * d) @ out_tf1                      # Concat(heads) W^O
merged_keras = np.einsum("BTNd,NdO->BTO", context, out_keras)            # Σ_n head_n W^O_n
assert np.allclose(q_tf1, q_keras, atol=1e-5) and np.allclose(merged_tf1, merged_keras, atol=1e-5)
print("max |Δ| query:", float(np.abs(q_tf1 - q_keras).max()),
      "| max |Δ| output:", float(np.abs(merged_tf1 - merged_keras).max()))

# %% [markdown]
# The figure (it reproduces no figure of the paper; it draws the storage
# convention): left the TF1 kernel with each head's columns framed in its
# colour, right the four Keras panels `kernel[:, n, :]`. The outlined column
# is the same numbers on both sides.

# %%
fig = plot_per_head_reshape(kernel_tf1, N, column=(1, 3), name="query kernel, layer 0")
fig.savefig(figure_path("08_per_head_reshape.png"), dpi=120)
print("wrote", shown_path(figure_path("08_per_head_reshape.png")))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · TF1 → TF2
#
# A laptop-size stand-in for the released checkpoint. First a vocabulary: a
# WordPiece vocabulary trained on the paper's abstract (`mbert_lib.paper.ABSTRACT`)
# by the project's trainer, which runs `tokenizers`' BPE trainer on a fixed
# alphabet so that the vocabulary is the same in every process (it is only
# needed in section 5, but its size fixes V).

# %%
tokenizer = train_wordpiece([ABSTRACT], vocab_size=pick(400, 250), min_frequency=1)
vocab = list(tokenizer.vocab)                  # the same text gives the same list in any process
VOCAB_FILE = WORK / "vocab.txt"
VOCAB_FILE.write_text("\n".join(vocab) + "\n")
wordpiece = BertWordPieceTokenizer(str(VOCAB_FILE), lowercase=True)   # `tokenizers` reads it
words = [t for t in vocab if t.isalpha() and len(t) > 6]
pieces = [t for t in vocab if t.startswith("##") and len(t) > 4]
fillers = sum(t.startswith("[unused") for t in vocab)
print(f"V = {len(vocab)} word pieces ({fillers} [unused] fillers), e.g. words {words[:6]}, "
      f"continuations {pieces[:6]}")

# %% [markdown]
# The model: the laptop student (NoNorm, relu, shared Q/K bottleneck, 4 FFNs
# per block). `random_tf1_arrays` draws every weight under its released TF1
# name (γ around 1, every bias non-zero, so a swapped γ/β or a dropped bias
# would show); to it we add what a TF1 training run leaves in a checkpoint:
# the global step and Adam slots.

# %%
config = get_preset("tiny_student").replace(vocab_size=len(vocab),
                                            num_hidden_layers=pick(4, 2))
tf1_arrays = convert.random_tf1_arrays(config, seed=0)
training_state = {"global_step": np.array(500_000, np.int64)}
for name in ("bert/embeddings/word_embeddings", "cls/predictions/output_bias"):
    training_state[f"{name}/adam_m"] = np.zeros_like(tf1_arrays[name])
    training_state[f"{name}/adam_v"] = np.zeros_like(tf1_arrays[name])
TF1_DIR = WORK / "tf1"
tf1_prefix = convert.write_tf1_checkpoint({**tf1_arrays, **training_state},
                                          TF1_DIR / "mobilebert_variables.ckpt")
config.to_json_file(TF1_DIR / "bert_config.json")
listed = tf.train.list_variables(tf1_prefix)
print(f"{len(listed)} variables in {tf1_prefix}; the first of them:")
display(pd.DataFrame(listed[:6], columns=["TF1 name", "shape"]))

# %% [markdown]
# The conversion, exactly as on the command line
# (`python -m mbert_lib convert tf1 --bert_config_file … --tf1_checkpoint_path … --tf2_checkpoint_path …`,
# the flags of tf-models' converter). It renames, reshapes per head, keeps
# the MLM **and** NSP heads (tf-models' converter drops NSP and, as shipped on
# PyPI, crashes with `NameError: tf_keras`; docs/reference.md), and lists what
# it skipped.

# %%
TF2_DIR = WORK / "tf2"
status = cli(["convert", "tf1", "--bert_config_file", str(TF1_DIR / "bert_config.json"),
              "--tf1_checkpoint_path", tf1_prefix, "--tf2_checkpoint_path", str(TF2_DIR)])
assert status == 0
print("\nfiles:", sorted(os.listdir(TF2_DIR)))

# %%
model = convert.load_pretrainer(TF2_DIR)
back = convert.tf1_arrays_from_pretrainer(model)
report = json.loads((TF2_DIR / "conversion.json").read_text())
# Sanity: every weight arrived bit for bit (NSP head included), the training state was
# skipped and listed, and nothing else was skipped.
assert set(back) == set(tf1_arrays)
assert all(np.array_equal(back[k], tf1_arrays[k]) for k in tf1_arrays)
assert np.array_equal(back["cls/seq_relationship/output_weights"],
                      tf1_arrays["cls/seq_relationship/output_weights"])
assert sorted(report["skipped"]) == sorted(training_state) and report["unused"] == []
print(f"{len(back)} weights identical after TF1 → TF2 → read back; skipped: {report['skipped']}")

# %% [markdown]
# (The converted model's *outputs* are checked against an independent numpy
# forward pass on the same TF1 arrays in `tests/test_convert_tf1.py`, for the
# NoNorm student and the LayerNorm teacher.)
#
# ## 4 · A broken checkpoint is refused, with every problem listed
#
# Remove one weight, rename one, cut one short: the converter checks every
# name and shape before writing anything, reports all three problems at once,
# and leaves no output behind.

# %%
broken = dict(tf1_arrays)
del broken["bert/encoder/layer_1/ffn_layer_2/output/FakeLayerNorm/beta"]
broken["bert/encoder/layer_0/attention/self/kee/kernel"] = broken.pop(
    "bert/encoder/layer_0/attention/self/key/kernel")
broken["cls/predictions/extra_output_weights"] = broken["cls/predictions/extra_output_weights"][:, :-1]
broken_prefix = convert.write_tf1_checkpoint(broken, WORK / "broken" / "model.ckpt")
problems = None
try:
    convert.convert_tf1_checkpoint(config, broken_prefix, WORK / "never_written")
except convert.CheckpointMismatchError as err:
    print(err)
    problems = (len(err.missing), len(err.unexpected), len(err.misshaped))
assert problems == (2, 1, 1) and not (WORK / "never_written").exists()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5 · TF2 → Hugging Face layout → TF2
#
# `export hf` writes `config.json` (transformers' field names, `model_type`
# "mobilebert") and `model.safetensors` (PyTorch layout: every Linear weight
# transposed to [out, in], Q/K/V back to [h, N·d]), read and written through
# the `safetensors` numpy API, so torch is not needed. `convert hf` reads it back.

# %%
HF_DIR = WORK / "hf"
assert cli(["export", "hf", "--checkpoint", str(TF2_DIR), "--export_dir", str(HF_DIR),
            "--vocab_file", str(VOCAB_FILE)]) == 0
print("files:", sorted(os.listdir(HF_DIR)))
hf_config = json.loads((HF_DIR / "config.json").read_text())
print({k: hf_config[k] for k in ("model_type", "architectures", "true_hidden_size",
                                 "normalization_type", "num_feedforward_networks")})

with safe_open(str(HF_DIR / "model.safetensors"), framework="numpy") as f:
    hf_shapes = {k: f.get_slice(k).get_shape() for k in f.keys()}
layer0 = [k for k in sorted(hf_shapes) if k.startswith("mobilebert.encoder.layer.0.attention")]
display(pd.DataFrame({"Hugging Face name": layer0, "shape": [hf_shapes[k] for k in layer0]}))

# %%
TF2_AGAIN = WORK / "tf2_from_hf"
assert cli(["convert", "hf", "--model_dir", str(HF_DIR),
            "--tf2_checkpoint_path", str(TF2_AGAIN)]) == 0
model_again = convert.load_pretrainer(TF2_AGAIN)

sentences = ["MobileBERT is a thin version of BERT.", "The teacher transfers knowledge.",
             "Empirical studies show that it is faster!"]
wordpiece.enable_padding(pad_id=0, pad_token="[PAD]")
encoded = wordpiece.encode_batch(sentences)
batch = {"input_word_ids": np.array([e.ids for e in encoded], np.int32),
         "input_mask": np.array([e.attention_mask for e in encoded], np.int32),
         "input_type_ids": np.array([e.type_ids for e in encoded], np.int32),
         "masked_lm_positions": np.array([[1, 2]] * len(sentences), np.int32)}
first, second = model(batch), model_again(batch)
rows = []
for key in ("sequence_output", "pooled_output", "mlm_logits", "nsp_logits"):
    a, b = first[key].numpy(), second[key].numpy()
    rows.append({"output": key, "shape": a.shape, "max |TF1→TF2 − …→HF→TF2|": float(np.abs(a - b).max())})
    assert np.array_equal(a, b), key
for i, (a, b) in enumerate(zip(first["encoder_outputs"], second["encoder_outputs"])):
    assert np.array_equal(a.numpy(), b.numpy()), f"encoder_outputs[{i}]"
display(pd.DataFrame(rows))
print("round trip TF1 → TF2 → Hugging Face → TF2: identical outputs (bit for bit)")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6 · TF-Hub-style SavedModels: raw strings in
#
# `export savedmodel` writes two SavedModels in the layout of TF Hub's BERT
# models, so code written for those runs unchanged:
#
# * the **encoder**: called with `input_word_ids`, `input_mask`,
#   `input_type_ids` (int32 [B, T]) it returns `sequence_output` [B, T, H],
#   `pooled_output` [B, H] (also as `default`) and `encoder_outputs`
#   (L × [B, T, H]); an `mlm` sub-object also takes `masked_lm_positions`
#   [B, P] and returns `mlm_logits` [B, P, V] and `nsp_logits` [B, 2]; the
#   vocabulary travels as a SavedModel asset, `do_lower_case` as a variable;
# * the **preprocessing** model: strings [B] → the three inputs [B, seq_length]
#   (tensorflow_text's BERT tokenizer on the same vocabulary, then
#   [CLS] a [SEP] packing, padding and a mask).

# %%
SAVED = WORK / "savedmodel" / "encoder"
assert cli(["export", "savedmodel", "--checkpoint", str(TF2_DIR), "--vocab_file", str(VOCAB_FILE),
            "--do_lower_case", "--export_path", str(SAVED), "--seq_length", "24"]) == 0
preprocess = tf.saved_model.load(str(SAVED) + "_preprocess")
encoder = tf.saved_model.load(str(SAVED))
print("encoder signatures:", list(encoder.signatures), "| do_lower_case:",
      bool(encoder.do_lower_case.numpy()), "| vocab asset:",
      os.path.basename(encoder.vocab_file.asset_path.numpy().decode()))

# %%
raw = tf.constant(sentences + ["Café résumés are NAÏVE?"])
with native_stderr_silenced():   # no oneDNN "DT_INT64 only with AVX-512" notice on other CPUs
    inputs = preprocess(raw)
pieces = [[vocab[i] for i, m in zip(ids, mask) if m]
          for ids, mask in zip(inputs["input_word_ids"].numpy(), inputs["input_mask"].numpy())]
width = max(len(p) for p in pieces)
display(pd.DataFrame([p + [""] * (width - len(p)) for p in pieces],
                     index=[s.decode() for s in raw.numpy()]))

# %%
# Sanity: the SavedModel's tokenization is the `tokenizers` library's, and the
# SavedModel encoder computes what the Keras model computes.
reference = BertWordPieceTokenizer(str(VOCAB_FILE), lowercase=True)
reference.enable_padding(length=24, pad_id=0, pad_token="[PAD]")
reference.enable_truncation(max_length=24)
expected_ids = np.array([e.ids for e in reference.encode_batch([s.decode() for s in raw.numpy()])])
assert np.array_equal(inputs["input_word_ids"].numpy(), expected_ids)

outputs = encoder(inputs)
keras_outputs = model.encoder(inputs)
print({k: tuple(outputs[k].shape) for k in ("sequence_output", "pooled_output", "default")},
      "| encoder_outputs:", len(outputs["encoder_outputs"]), "×",
      tuple(outputs["encoder_outputs"][0].shape))
diff = float(np.abs(outputs["sequence_output"] - keras_outputs["sequence_output"]).max())
print("max |SavedModel − Keras| on sequence_output:", diff)
assert diff < 1e-4

# %% [markdown]
# The same through `tensorflow_hub.KerasLayer`, the way a downstream Keras
# model would use it: a model whose input is a string.

# %%
text = tf_keras.layers.Input(shape=(), dtype=tf.string, name="sentence")
encoder_inputs = hub.KerasLayer(str(SAVED) + "_preprocess", name="preprocessing")(text)
pooled = hub.KerasLayer(str(SAVED), trainable=True, name="mobilebert")(encoder_inputs)["pooled_output"]
string_model = tf_keras.Model(text, pooled)
string_model.summary()
pooled_hub = string_model(raw).numpy()
assert np.allclose(pooled_hub, keras_outputs["pooled_output"].numpy(), atol=1e-4)

mlm = encoder.mlm({**inputs, "masked_lm_positions": tf.constant([[1, 2]] * len(sentences + [""]))})
print("mlm sub-object:", {k: tuple(mlm[k].shape) for k in ("mlm_logits", "nsp_logits")})

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7 · With the real checkpoints
#
# Not run here (the notebooks run offline); the converters were tested only
# on stand-ins with the released names and shapes. If a real file differs
# from docs/reference.md in any name or shape, the converter stops and lists
# every difference instead of guessing.
#
# ```bash
# # The original TF1 checkpoint (google-research/mobilebert)
# wget https://storage.googleapis.com/cloud-tpu-checkpoints/mobilebert/uncased_L-24_H-128_B-512_A-4_F-4_OPT.tar.gz
# tar -xzf uncased_L-24_H-128_B-512_A-4_F-4_OPT.tar.gz          # note the .ckpt prefix inside
# python -c "from mbert_lib import get_preset; get_preset('mobilebert').to_json_file('bert_config.json')"
# python -m mbert_lib convert tf1 --bert_config_file bert_config.json \
#     --tf1_checkpoint_path PATH/TO/mobilebert_variables.ckpt --tf2_checkpoint_path mobilebert_tf2
#
# # The Hugging Face port (config.json + model.safetensors + vocab.txt)
# huggingface-cli download google/mobilebert-uncased config.json model.safetensors vocab.txt \
#     --local-dir mobilebert-uncased
# python -m mbert_lib convert hf --model_dir mobilebert-uncased --tf2_checkpoint_path mobilebert_tf2
#
# # Either way, then: TF-Hub-style SavedModels, or back to the Hugging Face layout
# python -m mbert_lib export savedmodel --checkpoint mobilebert_tf2 \
#     --vocab_file mobilebert-uncased/vocab.txt --do_lower_case --export_path mobilebert_savedmodel
# python -m mbert_lib export hf --checkpoint mobilebert_tf2 --export_dir mobilebert_hf
# ```
#
# In Python, `mbert_lib.convert.load_pretrainer("mobilebert_tf2")` (or
# `load_encoder`) gives the Keras model every other notebook uses.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# * One table (`convert.name_map`) names every MobileBERT weight three ways;
#   all converters and exporters go through it. For the released
#   configuration it holds the encoder's 24,581,888 parameters (tf-models'
#   count) plus the MLM and NSP heads.
# * The only reshaping is per head: TF1's [D, N·d] kernels become Keras'
#   [D, N, d] (`figures/08_per_head_reshape.png`); PyTorch weights are transposed.
# * TF1 → TF2 → Hugging Face → TF2 gave identical weights and identical
#   outputs; the NSP head survives; training state is skipped and listed;
#   a broken checkpoint is refused with every problem listed and nothing written.
# * The exported SavedModels take raw sentences, tokenize exactly like the
#   `tokenizers` library, and reproduce the Keras model's outputs, also
#   through `hub.KerasLayer`.
#
# ## Exercises
#
# Worked solutions: `solutions/08_checkpoints_and_export_solutions.ipynb`.
#
# 1. Write the reshape for the *value* kernel of the IB-BERT teacher
#    (`get_preset("ibbert_large")`): what are D, N and d, and where does head
#    n = 2 (counted from 0, as in section 2) start? Check your answer with
#    `convert.name_table`.
#    *Hint: the value projection reads the bottleneck only with `use_bottleneck_attention`;
#    otherwise it reads the block input (width H). Fill a kernel with `np.arange` so that
#    each entry of row 0 is its own TF1 column, and reshape it with `names.tf1_to_keras`.*
# 2. Swap γ and β of one NoNorm in the stand-in TF1 checkpoint and convert it:
#    why does the converter accept it, and which test in
#    `tests/test_convert_tf1.py` would catch such a mapping bug in the library?
#    *Hint: the converter checks names and shapes, never values; look for a test that
#    compares the converted model's outputs with an independent forward pass
#    (`tests/numpy_reference.py`).*
# 3. Export the model with `--seq_length 8` and feed a long sentence: which
#    tokens survive the truncation, and where does `[SEP]` go?
#    *Hint: `preprocess.tokenize` gives the word pieces before packing; a single segment
#    keeps `seq_length − 2` of them; try `preprocess.bert_pack_inputs` with two segments too.*
# 4. Load the encoder SavedModel with `hub.KerasLayer(..., trainable=True)`
#    and fine-tune it on two toy sentences; confirm that the weights change
#    while `encoder.vocab_file` and `do_lower_case` stay the same.
#    *Hint: string input → preprocessing KerasLayer → encoder KerasLayer → Dense(2),
#    `compile` and `fit` a few steps; compare the layer's `trainable_variables` before and
#    after, and read `vocab_file` and `do_lower_case` from its `resolved_object`.*
